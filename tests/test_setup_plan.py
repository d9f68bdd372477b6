"""`make plan`: what `make setup` installs, decided from the machine. Each machine is simulated
here: a fake `nvidia-smi` on PATH printing the H100's real output (and two older drivers made
from it), none at all, one that fails, a faked macOS and Windows; PyTorch's CPU index answering
or not. Nothing is installed."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from demos.engine import setup_plan
from demos.engine.setup_plan import Machine, plan_for, read_nvidia_smi

ROOT = Path(__file__).resolve().parent.parent
H100 = (ROOT / "tests" / "fixtures" / "gpu" / "nvidia-smi-h100.txt").read_text()


def _driver(cuda: str, driver: str) -> str:
    """The H100's real output with another driver and CUDA version in its header."""
    return H100.replace("Driver Version: 580.159.04", f"Driver Version: {driver}").replace(
        "CUDA Version: 13.0", f"CUDA Version: {cuda}")


def _fake_smi(tmp_path: Path, text: str, rc: int = 0) -> Path:
    """A folder holding an `nvidia-smi` that prints ``text`` and exits ``rc``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "out.txt").write_text(text)
    smi = bin_dir / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\ncat '{bin_dir / 'out.txt'}'\nexit {rc}\n")
    smi.chmod(smi.stat().st_mode | stat.S_IEXEC)
    return bin_dir


def _make_plan(path_first: Path | None = None, **env: str) -> subprocess.CompletedProcess:
    """`make plan` as a user runs it (PATH with a fake nvidia-smi first, when given)."""
    e = {k: v for k, v in os.environ.items() if k not in ("DEMOS_TORCH_INDEX", "DEMOS_JAX_BUILD")}
    e.update(env)
    if path_first:
        e["PATH"] = f"{path_first}:{e['PATH']}"
    return subprocess.run(["make", "-s", "plan", f"PYTHON={sys.executable}"], cwd=ROOT, env=e, capture_output=True,
                          text=True, timeout=120)


def test_the_h100s_real_nvidia_smi_reads_as_its_driver_cuda_and_gpu():
    assert read_nvidia_smi(H100) == {"driver": "580.159.04", "cuda": (13, 0), "gpus": ["NVIDIA H100 80GB HBM3"]}
    assert read_nvidia_smi("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.") is None


@pytest.mark.parametrize("cuda, driver, jax", [("13.0", "580.159.04", "cuda13"), ("12.4", "550.54.14", "cuda12")])
def test_an_nvidia_box_gets_cuda_torch_and_the_jax_build_its_driver_supports(tmp_path, cuda, driver, jax):
    r = _make_plan(_fake_smi(tmp_path, _driver(cuda, driver)))
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert f"NVIDIA driver {driver} (CUDA {cuda}): NVIDIA H100 80GB HBM3" in out
    assert "pip install torch==2.13.0 nvidia-ml-py==13.615.71\n" in out and f'pip install "jax[{jax}]==0.10.2"' in out
    assert "download.pytorch.org" not in out  # the CUDA build is PyPI's torch
    other = {"cuda13": "cuda12", "cuda12": "cuda13"}[jax]
    assert other not in out


def test_an_old_driver_keeps_jax_on_the_cpu_and_says_so(tmp_path):
    out = _make_plan(_fake_smi(tmp_path, _driver("11.8", "520.61.05"))).stdout
    assert "jax[cuda" not in out and "supports CUDA 11.8" in out and "JAX stays on the CPU" in out
    assert "pip install torch==2.13.0" in out


def test_an_nvidia_smi_without_a_driver_is_a_cpu_machine_that_says_why(tmp_path):
    r = _make_plan(_fake_smi(tmp_path, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
                             rc=9))
    assert r.returncode == 0 and "no NVIDIA GPU (nvidia-smi answered without a driver (NVIDIA-SMI has failed" in r.stdout
    assert "jax[cuda" not in r.stdout


def test_linux_without_a_gpu_takes_the_cpu_index_only_where_it_answers():
    linux = Machine("Linux", "x86_64")
    answers = plan_for(linux, cpu_index_answers=lambda: True)
    assert answers.steps == [("torch's CPU-only wheel (no CUDA libraries)",
                              ["torch==2.13.0", "--index-url", "https://download.pytorch.org/whl/cpu"])]
    silent = plan_for(linux, cpu_index_answers=lambda: False)
    assert silent.steps == [] and "several GB of CUDA libraries" in silent.notes[0]
    assert "DEMOS_TORCH_INDEX" in silent.notes[0]
    assert plan_for(Machine("Linux", "aarch64"), cpu_index_answers=lambda: pytest.fail("asked")).steps == []


def test_a_mac_and_windows_get_the_default_wheels_with_a_line():
    mac = plan_for(Machine("Darwin", "arm64"), cpu_index_answers=lambda: pytest.fail("asked"))
    assert mac.steps == [] and mac.machine == "macOS arm64" and "MPS" in mac.notes[0]
    win = plan_for(Machine("Windows", "AMD64"), cpu_index_answers=lambda: pytest.fail("asked"))
    assert win.steps == [] and "WSL2" in win.notes[0]


def test_the_overrides_choose_and_a_bad_one_is_one_line(tmp_path):
    p = plan_for(Machine("Linux", "x86_64"), torch_index="https://example.org/whl/cu130", jax_build="cuda13")
    assert [s for _w, s in p.steps] == [["torch==2.13.0", "--index-url", "https://example.org/whl/cu130"],
                                        ["jax[cuda13]==0.10.2"]]
    gpu = Machine("Linux", "x86_64", nvidia=read_nvidia_smi(H100))
    assert [s for _w, s in plan_for(gpu, jax_build="cpu").steps] == [["torch==2.13.0", "nvidia-ml-py==13.615.71"]]
    r = _make_plan(None, DEMOS_JAX_BUILD="rocm")
    assert r.returncode != 0 and "DEMOS_JAX_BUILD='rocm': must be cpu, cuda12 or cuda13" in r.stderr


def test_this_machine_plans_what_make_setup_installed_here(monkeypatch):
    """This machine (Linux, no GPU): make setup's plan adds nothing when the CPU index does not
    answer, so `make present` and `make test` install what they did before the plan existed."""
    monkeypatch.setattr(setup_plan.shutil, "which", lambda name: None)
    m = setup_plan.this_machine()
    assert m.nvidia is None and m.nvidia_problem == ""
    assert plan_for(m, cpu_index_answers=lambda: False).text().endswith(
        "then: pip install -e '.[dev]' (the pins in pyproject.toml)")


@pytest.mark.slow
def test_postbuild_installs_the_deck_into_a_fresh_environment(tmp_path):
    """A BinderHub or a hub image runs postBuild after environment.yml: in a fresh virtual
    environment, its commands install the deck itself, which then imports and plans."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    env = {**os.environ, "PATH": f"{venv / 'bin'}:{os.environ['PATH']}"}
    env.pop("PYTHONPATH", None)
    r = subprocess.run(["bash", str(ROOT / "postBuild")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-1500:] + r.stderr[-1500:]
    r = subprocess.run([str(venv / "bin" / "python"), "-c", "import demos, demos.engine.setup_plan as p; "
                        "print(demos.__file__); print(p.plan_for(p.Machine('Linux', 'x86_64'), lambda: False).machine)"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-1500:]
    assert r.stdout.splitlines() == [str(ROOT / "demos" / "__init__.py"), "Linux x86_64, no NVIDIA GPU"]


def test_repo2docker_builds_a_hub_image_from_environment_yml_then_postbuild():
    """What repo2docker (a BinderHub, or a hub image built from this repository) makes of it,
    read from the Dockerfile its --no-build --debug prints (no Docker needed): a conda environment
    for Python 3.11 from environment.yml, the repository copied in (owned by the student's user,
    so a course makes it read-only: docs/course.md), then postBuild; no other specification file."""
    exe = Path(sys.executable).with_name("jupyter-repo2docker")
    r = subprocess.run([str(exe), "--no-build", "--debug", "--user-id", "1000", "--user-name", "jovyan", str(ROOT)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    out = r.stdout + r.stderr
    assert "Building conda environment for python=3.11" in out
    assert '--file "environment.yml"' in out and "COPY --chown=1000:1000 src/environment.yml" in out
    assert "COPY --chown=1000:1000 src/ ${REPO_DIR}/" in out
    assert out.index("src/ ${REPO_DIR}/") < out.index("RUN ./postBuild")
    for other in ("requirements.txt", "apt.txt", "runtime.txt", "install.R", "Project.toml", "setup.py"):
        assert other not in out, other


def test_course_md_gives_the_hub_config_the_hub_test_loads(monkeypatch):
    """docs/course.md quotes docs/jupyterhub_config.py whole (the file tests/test_hub.py starts a
    real hub from), and the file loads as JupyterHub loads it: the students' servers open part 1's
    slideshow from the deck's folder, each kernel preloads the deck, a saved slide is stored clean."""
    from traitlets.config import Config

    monkeypatch.delenv("JIT_DECK_DIR", raising=False)
    text = (ROOT / "docs" / "jupyterhub_config.py").read_text()
    assert "```python\n" + text.rstrip("\n") + "\n```" in (ROOT / "docs" / "course.md").read_text()
    c = Config()
    exec(compile(text, "jupyterhub_config.py", "exec"), {"get_config": lambda: c, "__name__": "config"})
    assert c.Spawner.notebook_dir == "/srv/jit-deck"
    assert c.Spawner.default_url == "/rise/slides/01_eager_mode.ipynb"
    assert (ROOT / c.Spawner.default_url.removeprefix("/rise/")).exists()
    assert c.Spawner.environment["PYTHONSTARTUP"] == "/srv/jit-deck/demos/topics/_kernel_startup.py"
    assert (ROOT / "demos" / "topics" / "_kernel_startup.py").exists()
    assert "--FileContentsManager.pre_save_hook=demos.deck.nbtools.pre_save_hook" in c.Spawner.args
    from demos.deck.notes import server_args  # the notes window, as `make present` serves it

    assert all(a in c.Spawner.args for a in server_args(Path("/srv/jit-deck"))), server_args(Path("/srv/jit-deck"))


def test_where_make_is_absent_the_entry_point_plans_and_presents():
    """Windows without make: `jit-deck plan` and `jit-deck present` do what the make targets do."""
    exe = Path(sys.executable).with_name("jit-deck")
    r = subprocess.run([str(exe), "plan"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("machine: ") and "pip install -e '.[dev]'" in r.stdout
    r = subprocess.run([str(exe), "present", "--dry-run", "--part", "2"], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "-m jupyterlab" in r.stdout and "/rise/slides/02_what_compilers_do.ipynb" in r.stdout
