import os
import subprocess
import sys
from pathlib import Path

import pytest

import demos.engine.devices as dv

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


def run(*args, env=None, **kw):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([PY, *args], capture_output=True, text=True, cwd=ROOT, env=e, timeout=600, **kw)


def test_machine_info_describes_this_machine():
    m = dv.machine_info()
    assert m["device"] in ("cpu", "cuda", "mps")
    assert m["cpu_threads"] == os.cpu_count()
    assert m["torch"] and m["python"].startswith("3.")
    if m["device"] == "cpu":
        assert m["device_name"].startswith("CPU:")


def test_missing_jax_is_reported_as_data(monkeypatch):
    monkeypatch.setattr(dv, "jax_or_none", lambda: None)
    st = dv.backend_status()
    assert st["torch_eager"]["ok"]
    assert not st["jax_jit"]["ok"] and "pip install" in st["jax_jit"]["fix"]


def test_missing_compiler_is_reported_with_the_fix(monkeypatch):
    monkeypatch.setattr(dv, "torch_device", lambda: "cpu")
    monkeypatch.setattr(dv, "cxx_compiler", lambda: None)
    st = dv.backend_status()
    assert not st["torch_compile"]["ok"]
    assert "g++" in st["torch_compile"]["fix"]


def test_info_cli_lists_all_four_backends():
    r = run("-m", "demos", "info")
    assert r.returncode == 0, r.stderr
    for b in ("torch_eager", "torch_compile", "jax_eager", "jax_jit"):
        assert b in r.stdout
    assert "device_name" in r.stdout


def test_info_without_jax_or_jupyter_does_not_crash():
    # Simulate a bare GPU box: no JAX, no Jupyter packages importable.
    code = (
        "import sys\n"
        "for m in ('jax', 'ipywidgets', 'IPython', 'nbformat', 'nbclient'): sys.modules[m] = None\n"
        "from demos.cli import main\n"
        "sys.exit(main(['info']))\n"
    )
    r = run("-c", code)
    assert r.returncode == 0, r.stderr
    assert "NO  jax_jit" in r.stdout and "fix:" in r.stdout


def test_importing_demos_is_cheap():
    r = run("-c", "import sys, demos, demos.cli; print('torch' in sys.modules, 'jax' in sys.modules)")
    assert r.stdout.strip() == "False False", r.stdout + r.stderr


def test_bench_cli_quick_json(tmp_path):
    out = tmp_path / "out.json"
    r = run("-m", "demos", "bench", "--quick", "--workload", "chain,mlp_dead_code",
            "--backend", "torch_eager,torch_compile,jax_jit", "--json", str(out))
    assert r.returncode == 0, r.stderr
    assert "chain" in r.stdout and "vs eager" in r.stdout
    from demos.engine.results import Record

    rec = Record.load(out)
    assert len(rec.rows) == 6 and all(row.ok for row in rec.rows), [row.error for row in rec.rows]


@pytest.mark.parametrize("args,needle", [
    (["bench", "--workload", "chian"], "valid: complex_activation"),
    (["bench", "--backend", "xla"], "valid: torch_eager"),
])
def test_bad_names_give_one_line(args, needle):
    r = run("-m", "demos", *args)
    assert r.returncode == 2
    lines = [line for line in r.stderr.strip().splitlines() if line]
    assert len(lines) == 1 and needle in lines[0], r.stderr


def test_environment_yml_agrees_with_pyproject():
    import re
    import tomllib

    pins = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = set(pins["dependencies"]) | set(pins["optional-dependencies"]["dev"])
    yml = (ROOT / "environment.yml").read_text()
    conda_pip = set(re.findall(r"^\s+- ([A-Za-z0-9_.\[\]-]+==[^\s#]+)", yml, re.M))
    assert wanted == conda_pip, f"only in pyproject: {wanted - conda_pip}; only in environment.yml: {conda_pip - wanted}"


@pytest.mark.gpu
@pytest.mark.timing
def test_gpu_device_and_cuda_event_timing():
    import torch

    from demos.engine.timing import measure, measure_cuda_events, sync_torch

    assert dv.torch_device() == "cuda" and "NVIDIA" in dv.device_name()
    x = torch.randn(2**24, device="cuda")
    wall = measure(lambda: x.sin(), sync_torch("cuda"), budget_s=0.2)
    dev = measure_cuda_events(lambda: x.sin())
    # device time excludes launch overhead: never larger than synchronised wall time (+ noise)
    assert dev.median <= wall.median * 1.2
    unsynced = measure(lambda: x.sin(), budget_s=0.2)
    assert unsynced.median < wall.median  # without sync the clock under-reports


@pytest.mark.gpu
def test_torch_and_jax_share_the_gpu():
    import torch

    jax = dv.require_jax()
    assert os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    assert jax.default_backend() == "gpu"
    free_before = torch.cuda.mem_get_info()[0]
    import jax.numpy as jnp

    jnp.ones(1024).block_until_ready()
    free_after = torch.cuda.mem_get_info()[0]
    assert free_before - free_after < 2 * 2**30  # JAX did not grab 75% of the card
    big = torch.empty(2**30, device="cuda")  # torch can still allocate 4 GiB
    del big


# -- a C++ compiler that is there but fails (issue 14, item 6) ----------------------------
FAKE_CXX = """#!/bin/sh
for a in "$@"; do case "$a" in --version|-dumpversion) exec g++ "$@";; esac; done
echo "In file included from check.cpp:1:" >&2
echo "check.cpp:1:10: fatal error: Python.h: No such file or directory" >&2
exit 1
"""


@pytest.fixture
def failing_cxx(tmp_path):
    path = tmp_path / "broken-g++"
    path.write_text(FAKE_CXX)
    path.chmod(0o755)
    return str(path)


def test_info_without_check_reports_a_cxx_that_fails(failing_cxx):
    if dv.torch_device() != "cpu":
        pytest.skip("the C++ step is torch.compile's CPU path")
    r = run("-m", "demos", "info", env={"CXX": failing_cxx})
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if "torch_compile" in ln)
    assert line.strip().startswith("NO"), line
    assert "broken-g++" in line and "Python.h: No such file or directory" in line, line
    assert "unset CXX" in r.stdout
    r = run("-m", "demos", "info", env={"CXX": "/nowhere/g++"})
    assert "CXX='/nowhere/g++' is not on PATH" in r.stdout


def test_a_real_failed_cpp_compile_keeps_its_cause(failing_cxx, tmp_path):
    """torch.compile with that compiler: the panel's one line carries the compiler's own words."""
    code = ("import torch\nfrom demos.engine.errors import one_line\n"
            "f = torch.compile(lambda t: (t.sin() + 1).relu())\n"
            "try:\n    f(torch.ones(8))\nexcept Exception as e:\n    print('LINE', one_line(e))\n")
    r = run("-c", code, env={"CXX": failing_cxx, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")})
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("LINE")), r.stdout + r.stderr)
    assert "C++ compile failed" in line and "Python.h: No such file or directory" in line, line
    r = run("-c", code, env={"CXX": "/bin/false", "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor2")})
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("LINE")), r.stdout + r.stderr)
    assert "needs a working C++ compiler" in line and "/bin/false" in line, line


def test_unwritable_cache_folder_is_said_before_any_work(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    env = {"DEMOS_CACHE_DIR": str(blocker / "cache")}
    r = run("-m", "demos", "warm", env=env)  # warm fills the shared folder: refused, whatever else is writable
    assert r.returncode == 2 and "not writable" in r.stderr and "warmed" not in r.stdout, (r.stdout, r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1
    r = run("-m", "demos.deck.present", "--mark-warm", env=env)
    assert r.returncode == 2 and "cannot write the warm marker" in r.stderr and "Traceback" not in r.stderr
    # a read-only shared folder: this user's own folder takes the new compiles, and the status says where
    own = tmp_path / "own"
    r = run("-m", "demos.deck.present", "--cache-status", env={**env, "DEMOS_USER_CACHE_DIR": str(own)})
    assert r.returncode == 1 and "cold" in r.stdout and f"new compiles go to {own}/" in r.stdout, r.stdout
    assert len(r.stdout.strip().splitlines()) == 1
    # neither writable: the caches cannot be kept
    env["DEMOS_USER_CACHE_DIR"] = str(blocker / "own")
    r = run("-m", "demos.deck.present", "--cache-status", env=env)
    assert r.returncode == 1 and "cannot be kept" in r.stdout and "not writable" in r.stdout, r.stdout


def test_a_change_of_demos_device_in_the_process_is_followed(monkeypatch):
    """The device found is kept per value of DEMOS_DEVICE, not read once: setting it later in the
    same process (a notebook's os.environ, a test) takes effect, and each value is looked up once."""
    import demos.engine.hardware as hw
    from demos.engine import plots
    from demos.engine.settings import SettingError

    # a machine with a GPU, as far as the setting's check goes (nothing here touches the GPU)
    monkeypatch.setattr(hw, "present_devices", lambda: ["cuda", "cpu"])
    looked = []
    real = dv.torch_or_none
    monkeypatch.setattr(dv, "torch_or_none", lambda: looked.append(1) or real())
    monkeypatch.delenv("DEMOS_DEVICE", raising=False)
    dv.torch_device.cache_clear()
    try:
        found = dv.torch_device()
        assert dv.torch_device() == found and len(looked) == 1  # found once, then kept
        monkeypatch.setenv("DEMOS_DEVICE", "cuda")
        assert dv.torch_device() == "cuda" and dv.device_kind() == "gpu"
        monkeypatch.setenv("DEMOS_DEVICE", "cpu")
        assert dv.torch_device() == "cpu" and dv.device_kind() == "cpu" and dv.device_name().startswith("CPU:")
        monkeypatch.setenv("DEMOS_DEVICE", "tpu")
        with pytest.raises(SettingError, match="DEMOS_DEVICE='tpu'"):
            dv.torch_device()
        monkeypatch.delenv("DEMOS_DEVICE")
        before = len(looked)
        assert dv.torch_device() == found and len(looked) == before  # unset again: the device found first
    finally:
        dv.torch_device.cache_clear()
    # a figure's stamp describes the device in force too
    calls = []
    monkeypatch.setattr(plots, "_MACHINE", {})
    for device in ("cpu", "cpu", "cuda", "cpu"):
        assert plots._cached_machine(lambda: calls.append(device) or {"device": device}, device)["device"] == device
    assert calls == ["cpu", "cuda"]


@pytest.mark.parametrize("torch_dev, jax_dev, ok, says", [
    ("cuda", "cpu", False, "jax[cuda13] or jax[cuda12]"),   # jax[cpu] on a GPU box: two devices compared
    ("cpu", "gpu", False, "torch sees no GPU"),             # torch's CPU wheel on a GPU box
    ("mps", "cpu", True, "no supported Apple-GPU backend"),  # a Mac: said, nothing to fix
    ("cuda", "gpu", True, ""), ("cpu", "cpu", True, ""), ("cpu", None, True, "torch demos only"),
])
def test_torch_and_jax_on_different_devices_is_told_and_fails_make_check(monkeypatch, torch_dev, jax_dev, ok, says):
    from demos.deck import check
    from demos.engine import devices

    monkeypatch.setattr(devices, "torch_device", lambda: torch_dev)
    monkeypatch.setattr(devices, "jax_backend", lambda: jax_dev)
    got, where, fix = devices.same_device()
    assert got is ok and where.startswith(f"torch on {torch_dev}, JAX on ") and says in where + fix
    assert bool(fix) is not ok
    row = next(r for r in check.check_environment() if r.what == "torch and JAX on the same device")
    assert row.ok is ok and row.fix == fix


def test_bfloat16_is_refused_in_one_line_below_compute_capability_8(monkeypatch, capsys):
    """A T4 (7.5): Triton's bfloat16 fails in ptxas there, so every demo refuses it before
    measuring, the inspector too, and `info` warns about the GPU; an A100 (8.0) takes it."""
    from demos import topics
    from demos.engine import devices
    from demos.engine.errors import DemoError
    from demos.introspection import inspector

    monkeypatch.setattr(devices, "cuda_capability", lambda: (7, 5))
    with_dtype = [d for d in topics.load() if any(c.name == "dtype" and "bfloat16" in map(str, c.values())
                                                  for c in d.control_list("gpu"))]
    assert with_dtype
    for d in with_dtype:
        with pytest.raises(DemoError) as exc:
            d.validate({"dtype": "bfloat16"})
        line = str(exc.value)
        assert line.startswith(f"{d.key}: dtype=bfloat16: bfloat16 needs compute capability 8.0") and "\n" not in line
        assert "this GPU is 7.5: choose float32 or float16" in line
        assert d(dtype="bfloat16") is None  # the live cell: one printed line, no exception
        assert capsys.readouterr().out.count("\n") == 1
    with pytest.raises(DemoError, match="dtype=bfloat16: bfloat16 needs compute capability 8.0"):
        inspector.run_isolated(None, "def f(x):\n    return x\n", dtype="bfloat16")
    assert "does not officially support GPUs below 8.0" in devices.old_gpu_warning()
    monkeypatch.setattr(devices, "cuda_capability", lambda: (8, 0))
    assert devices.dtype_problem("bfloat16") is None and devices.old_gpu_warning() is None
    assert with_dtype[0].validate({"dtype": "bfloat16"})["dtype"] == "bfloat16"


def test_compiled_results_that_disagree_with_eager_are_caught():
    """The check MPS gets (its Inductor backend is a prototype, and MPS once summed wrongly):
    here on the CPU, the real torch.compile agrees; a compile that is off by a little does not."""
    import torch

    from demos.engine import devices

    assert devices.compiled_vs_eager("cpu") <= devices.AGREE_REL
    off = devices.compiled_vs_eager("cpu", compile=lambda f: (lambda t: f(t) * (1 + 1e-2)))
    assert off > devices.AGREE_REL and torch.get_default_dtype() == torch.float32


def test_on_an_accelerator_that_disagrees_every_claim_fails_and_every_figure_says_so(monkeypatch):
    """A faked MPS where compiled and eager disagree: no claim passes, the stamp says why, and
    `info --check` marks torch.compile as not working; a CPU is never checked."""
    from demos.deck.claims import evaluate
    from demos.engine import devices, plots
    from demos.topics import fusion

    data = fusion.kernels.run()
    assert evaluate(fusion.kernels.claims, data) and all(fusion.kernels.check_claims(data).values())
    monkeypatch.setattr(devices, "torch_device", lambda: "mps")
    wrong = "torch.compile disagrees with eager on mps (largest relative difference 0.5 on a test sum)"
    monkeypatch.setattr(devices, "_disagreement", lambda device: wrong if device == "mps" else pytest.fail(device))
    claims = fusion.kernels.check_claims(data)
    assert claims and not any(claims.values()) and set(claims) == set(evaluate(fusion.kernels.claims, data))
    monkeypatch.setattr(plots, "_cached_machine", lambda fn, device: {"device": "mps"})
    assert f"⚠ {wrong}" in plots.live_stamp("N=2^16")
    st = devices.backend_status(check_compile=False)["torch_compile"]
    assert st["ok"]  # the prerequisites alone: the check runs with a test compile
    monkeypatch.setattr(devices, "torch_device", lambda: "cpu")
    assert devices.accelerator_disagrees() is None and all(fusion.kernels.check_claims(data).values())


def test_a_compiler_without_openmp_headers_is_told_what_to_install(monkeypatch):
    """A clang without OpenMP's headers (Debian's clang before libomp-dev; Apple's clang) fails
    Inductor's C++ at omp.h: `info --check` names the package, not g++."""
    import torch

    from demos.engine import devices

    out = ("C++ compile error\n\nCommand:\nclang++ header.hpp -fopenmp …\n\nOutput:\n"
           "…/torch/csrc/inductor/cpp_prefix.h:4:10: fatal error: 'omp.h' file not found\n1 error generated.\n")

    def failing_compile(fn, *a, **k):
        def run(*args):
            raise RuntimeError(out)
        return run

    monkeypatch.setattr(torch, "compile", failing_compile)
    st = devices.backend_status(check_compile=True)["torch_compile"]
    assert not st["ok"] and st["detail"] == "torch.compile's C++ compile failed (fatal error: 'omp.h' file not found)"
    assert "apt-get install libomp-dev (macOS: brew install libomp)" in st["fix"] and "g++ and Python" not in st["fix"]
    assert devices.cxx_fix("some other compile error") == devices._CXX_FIX


@pytest.mark.slow
@pytest.mark.skipif(not __import__("shutil").which("clang++"), reason="no clang++ here (apt-get install clang libomp-dev)")
def test_with_clang_and_no_gcc_torch_compile_fuses_the_same(tmp_path):
    """No g++ on PATH, CXX=clang++ (as on a Mac): Inductor's C++ builds with clang, and the count
    claim holds; without OpenMP's headers, one line says what to install. CI installs clang
    without them (the one-line branch); the compile branch was checked with Debian's clang 14 and
    libomp-dev when this test was written (b7ce7ec)."""
    import json
    import os
    import shutil
    import subprocess
    import sys

    bin_dir = tmp_path / "bin"  # every program of clang's folder, but no GNU compiler
    bin_dir.mkdir()
    usr = Path(shutil.which("clang++")).parent
    for f in usr.iterdir():
        if not f.name.startswith(("g++", "gcc", "c++", "cc", "cpp", "x86_64-linux-gnu-g", "aarch64-linux-gnu-g")):
            (bin_dir / f.name).symlink_to(f)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{bin_dir}", "CXX": "clang++",
           "DEMOS_CACHE_DIR": str(tmp_path / "cache")}
    code = ("import json, shutil, demos\nfrom demos.engine.devices import backend_status\nfrom demos.topics import fusion\n"
            "st = backend_status(check_compile=True)['torch_compile']\n"
            "print('SIM ' + json.dumps({'gpp': shutil.which('g++'), 'st': st, "
            "'claims': fusion.kernels.check_claims(fusion.kernels.run()) if st['ok'] else None}))\n")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    got = json.loads(next(ln for ln in r.stdout.splitlines() if ln.startswith("SIM "))[4:])
    assert got["gpp"] is None
    if not got["st"]["ok"]:  # clang without libomp-dev: the one line and its fix
        assert "omp.h" in got["st"]["detail"] and "libomp-dev" in got["st"]["fix"]
        return
    assert got["claims"] and all(got["claims"].values())


def test_torch_kept_on_the_cpu_by_the_setting_is_told_as_such(monkeypatch):
    from demos.engine import devices

    monkeypatch.setattr(devices, "torch_device", lambda: "cpu")
    monkeypatch.setattr(devices, "jax_backend", lambda: "gpu")
    monkeypatch.setenv("DEMOS_DEVICE", "cpu")
    ok, _where, fix = devices.same_device()
    assert not ok and fix.startswith("DEMOS_DEVICE=cpu keeps torch on the CPU: set JAX_PLATFORMS=cpu too")
