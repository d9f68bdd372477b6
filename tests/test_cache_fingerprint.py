"""Compile caches and warm results are keyed by the machine: a `.cache/` warmed on another kind of
machine (another vector ISA, GPU, torch or JAX) is never read. Seen before: a cache warmed with
AVX-512 and read with torch limited to AVX2 gave compiled bfloat16 outputs that were 58 % NaN.

Real processes, real Inductor caches: a process with ``ATEN_CPU_CAPABILITY=avx2`` stands in for an
AVX2 laptop on this machine."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from demos.engine import env

ROOT = Path(__file__).resolve().parent.parent


def _python(code: str, cache: Path | None = None, **extra: str) -> str:
    run_env = {k: v for k, v in os.environ.items()
               if k not in ("ATEN_CPU_CAPABILITY", "DEMOS_WARMED_DIR", "TORCHINDUCTOR_CACHE_DIR",
                            "DEMOS_JAX_CACHE_DIR", "DEMOS_CACHE_DIR")}
    if cache is not None:
        run_env["DEMOS_CACHE_DIR"] = str(cache)
    run_env.update(extra, PYTHONWARNINGS="ignore")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=run_env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout.strip().splitlines()[-1]


def test_the_isa_is_read_as_torch_reads_it():
    """env.cpu_isa (read without importing torch) names the ISA torch's kernels run with."""
    code = ("import torch, demos.engine.env as e; "
            "print(torch.backends.cpu.get_cpu_capability().lower(), e.cpu_isa(), e.FINGERPRINT)")
    native = _python(code).split()
    assert native[0] == native[1], native
    for cap in ("avx2", "default", "AVX2"):  # torch ignores "AVX2" (it compares exactly): native
        got = _python(code, ATEN_CPU_CAPABILITY=cap).split()
        assert got[0] == got[1], (cap, got)
        if native[1] != got[1]:  # this CPU has more than ``cap``: another machine, another folder
            assert got[2] != native[2] and f"-{got[1]}-" in got[2]
        else:
            assert got[2] == native[2], (cap, got, native)


def test_the_isa_flags_by_hand(monkeypatch):
    avx512 = "flags : fpu avx avx2 fma avx512f avx512dq avx512bw avx512vl avx512_bf16\n"
    avx2 = "flags : fpu avx avx2 fma\n"
    assert env.cpu_isa(avx512) == "avx512" and env.cpu_isa(avx2) == "avx2"
    assert env.cpu_isa("flags : fpu sse4_2\n") == "default"
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx2")
    assert env.cpu_isa(avx512) == "avx2" and env.cpu_isa(avx2) == "avx2"
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx512")  # a cap above the CPU's ISA: the CPU's
    assert env.cpu_isa(avx2) == "avx2"
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "AVX2")  # a value torch ignores: the CPU's
    assert env.cpu_isa(avx512) == "avx512"
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "sve256")  # off x86 (no flags): named with the machine
    assert env.cpu_isa("Features : fp asimd sve\n").endswith("-sve256")
    monkeypatch.delenv("ATEN_CPU_CAPABILITY")
    parts = env.fingerprint_parts()
    other = "avx512" if parts["isa"] == "avx2" else "avx2"  # an ISA this machine's is not
    assert env.machine_fingerprint(parts) != env.machine_fingerprint({**parts, "isa": other})
    # two AVX-512 CPUs, one with bfloat16 instructions: -march=native code of one is not the other's
    assert (env.cpu_extensions(avx512 + "power management: ts\n")
            == "avx avx2 avx512_bf16 avx512bw avx512dq avx512f avx512vl fma")
    assert env.cpu_extensions("Features : fp asimd sve\n") == "asimd fp sve"
    assert env.cpu_extensions("") == ""
    assert env.machine_fingerprint(parts) != env.machine_fingerprint({**parts, "extensions": "avx avx2 fma"})
    assert env.machine_fingerprint(parts) != env.machine_fingerprint({**parts, "torch": "2.14.0"})
    gpu = env.machine_fingerprint({**parts, "accelerator": "NVIDIA H100 80GB HBM3 9.0"})
    assert gpu.startswith("h100 80gb hbm3 9.0-".replace(" ", "_")), gpu


COMPILE = """
import demos.engine.env as env
env.configure_environment()  # (importing demos does it too) before torch: the caches' folders
import torch
from torch._dynamo.utils import counters
import torch._inductor.config as config
config.fx_graph_cache = True
f = torch.compile(lambda x: torch.sin(x) * 2 + 1)
f(torch.ones(256))
print(counters["inductor"]["fxgraph_cache_hit"], counters["inductor"]["fxgraph_cache_miss"])
"""


def test_a_cache_warmed_under_another_fingerprint_is_not_read(tmp_path):
    """An AVX2 process fills .cache/ first; a native process on the same .cache/ compiles anew (no
    hit), and a second native process then hits its own cache: the check can tell the two apart."""
    avx2_hits, avx2_misses = map(int, _python(COMPILE, tmp_path, ATEN_CPU_CAPABILITY="avx2").split())
    assert avx2_misses >= 1
    native = _python("import demos.engine.env as e; print(e.cpu_isa())")
    hits, misses = map(int, _python(COMPILE, tmp_path).split())
    folders = sorted(p.name for p in tmp_path.iterdir())
    if native == "avx2":
        pytest.skip(f"this CPU's ISA is AVX2 itself: one folder ({folders})")
    assert len(folders) == 2 and any("-avx2-" in f for f in folders), folders
    assert hits == 0 and misses >= 1, "the native process read the AVX2 process's compiled code"
    again = _python(COMPILE, tmp_path).split()
    assert again == ["1", "0"], f"a native process does not read its own cache: {again}"


def test_warm_results_and_the_marker_of_another_machine_are_not_read(tmp_path):
    """`make warm`'s results and marker lie in the fingerprint's folder: a process of another
    fingerprint finds neither, and its cache status names the folder it will not read."""
    save = ("import demos\n"
            "from demos.deck import present\n"
            "from demos.deck.demo import save_warmed\n"
            "from demos.topics import fusion\n"
            "save_warmed(fusion.memory, fusion.memory.run({}))\n"
            "present.mark_warm()\n"
            "print(present.cache_status()[1])\n")
    _python(save, tmp_path, ATEN_CPU_CAPABILITY="avx2")
    load = ("import demos\n"
            "from demos.deck import present\n"
            "from demos.deck.demo import load_warmed\n"
            "from demos.engine import env\n"
            "from demos.topics import fusion\n"
            "import json\n"
            "print(json.dumps([load_warmed(fusion.memory) is None, present.cache_status(), env.FINGERPRINT]))\n")
    native = _python("import demos.engine.env as e; print(e.cpu_isa())")
    if native == "avx2":
        pytest.skip("this CPU's ISA is AVX2 itself")
    none, (warm, line), mine = json.loads(_python(load, tmp_path))
    assert none is True and warm is False
    avx2 = next(p.name for p in tmp_path.iterdir() if "-avx2-" in p.name)
    assert f"warmed for {avx2}, which are not read here" in line and mine in line
    # and the AVX2 process itself reads what it warmed
    back = _python(load, tmp_path, ATEN_CPU_CAPABILITY="avx2")
    none, (warm, line), mine = json.loads(back)
    assert none is False and mine == avx2


def test_a_child_of_another_fingerprint_does_not_inherit_its_parents_caches():
    """This process imported demos: its environment names its own cache folders. A child run as an
    AVX2 machine (what `check --as avx2` starts) must take its own folders, not inherit those."""
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"].startswith(str(env.CACHE_ROOT))
    assert os.environ["DEMOS_CACHES_FOR"] == env.FINGERPRINT
    code = "import os, demos, demos.engine.env as e; print(os.environ['TORCHINDUCTOR_CACHE_DIR'], e.FINGERPRINT)"
    child = dict(os.environ, ATEN_CPU_CAPABILITY="avx2", PYTHONWARNINGS="ignore")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=child, capture_output=True, text=True,
                         timeout=120).stdout.split()
    inductor, fingerprint = out[-2], out[-1]
    if fingerprint == env.FINGERPRINT:
        pytest.skip("this CPU's ISA is AVX2 itself")
    assert fingerprint in inductor and env.FINGERPRINT not in inductor, out
    same = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=dict(os.environ), capture_output=True,
                          text=True, timeout=120).stdout.split()
    assert same[-2] == os.environ["TORCHINDUCTOR_CACHE_DIR"]  # a child of the same machine shares them



def test_a_warm_result_of_another_fingerprint_is_not_loaded_from_a_shared_folder(monkeypatch):
    """DEMOS_WARMED_DIR (the tests set it) moves the results out of the fingerprint's folder: a result
    saved there by another kind of machine is still not loaded (its source hash names the machine)."""
    import demos.deck.demo as dm
    from demos import topics

    demo = [d for d in topics.load() if d.opens_warmed][0]
    assert os.environ.get("DEMOS_WARMED_DIR") and env.FINGERPRINT not in str(dm.WARMED_DIR)
    monkeypatch.setattr(env, "FINGERPRINT", "cpu-avx2-torch0-jax0-00000000")
    try:
        assert dm.save_warmed(demo, {"stamp": "s", "x": 1}) is not None
        assert dm.load_warmed(demo)["x"] == 1  # the machine that saved it reads it
        monkeypatch.setattr(env, "FINGERPRINT", "cpu-avx512-torch0-jax0-11111111")
        assert dm.load_warmed(demo) is None
    finally:
        dm._warmed_path(demo).unlink(missing_ok=True)


def test_cache_status_names_the_machines_whose_caches_are_not_read(tmp_path, monkeypatch):
    from demos.deck import present

    monkeypatch.setattr(present, "cache_problem", lambda shared=False: None)
    marker = tmp_path / env.FINGERPRINT / "warm.json"
    warm, line = present.cache_status(marker)
    assert not warm and line == "compile caches are cold (`make warm` has not run here)"
    (tmp_path / "warm.json").write_text("{}")  # a .cache/ warmed before caches were kept per machine
    warm, line = present.cache_status(marker)
    assert not warm and "before they were kept per machine" in line and env.FINGERPRINT in line
    other = tmp_path / "cpu-avx2-torch2.13.0-jax0.10.2-1a2b3c4d"
    other.mkdir()
    (other / "warm.json").write_text("{}")
    warm, line = present.cache_status(marker)
    assert not warm and len(line.splitlines()) == 1, line
    assert f"cold for this machine ({env.FINGERPRINT})" in line and f"warmed for {other.name}," in line
    assert "make warm" in line
    present.mark_warm(marker)  # warm here too: the other machine's folder does not matter
    monkeypatch.setattr(present, "CACHE_ROOT", marker.parent)
    (marker.parent / "inductor").mkdir()
    (marker.parent / "inductor" / "x").write_text("compiled")
    warm, line = present.cache_status(marker)
    assert warm, line
    data = json.loads(marker.read_text())
    marker.write_text(json.dumps({**data, "machine": other.name}))  # a marker copied from elsewhere
    warm, line = present.cache_status(marker)
    assert not warm and other.name in line


def test_an_unwritable_cache_folder_still_keeps_machines_apart(tmp_path):
    """Where neither .cache/ nor the user's own cache folder can be written, the caches go to the
    system's temporary folder, still one folder per fingerprint (torch's own default is shared by
    every ISA)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    code = ("import os, demos, demos.engine.env as e; "
            "print(os.environ['TORCHINDUCTOR_CACHE_DIR'], e.temporary_root(), e.FINGERPRINT)")
    tmp = tmp_path / "tmp"  # the system's temporary folder, for these processes
    tmp.mkdir()
    own = str(blocker / "own")
    native = _python(code, blocker / "cache", TMPDIR=str(tmp), DEMOS_USER_CACHE_DIR=own).split()
    avx2 = _python(code, blocker / "cache", TMPDIR=str(tmp), ATEN_CPU_CAPABILITY="avx2",
                   DEMOS_USER_CACHE_DIR=own).split()
    for inductor, root, fingerprint in (native, avx2):
        assert inductor == str(Path(root) / "inductor") and Path(root).name == fingerprint, (inductor, root)
        assert Path(root).is_relative_to(tmp), root
    if native[2] != avx2[2]:
        assert native[0] != avx2[0]


def test_a_read_only_shared_cache_is_read_through_each_users_own_folder(tmp_path):
    """A hub's image (docs/course.md): the shared cache folder warmed, then read-only (a real
    read-only bind mount: it holds for root too). Each student's process compiles into a folder of
    their own (DEMOS_USER_CACHE_DIR here, ~/.cache/jit-deck by default) that links every warm
    entry: the warm torch graph and JAX program are read (Inductor's FX graph cache hits, JAX
    writes no new entry), a new graph is compiled into the student's folder alone, and neither the
    shared folder nor another student's changes."""
    from demos.deck import hub
    from demos.engine.errors import DemoError

    shared = tmp_path / "shared"
    code = ("import torch, demos, os, json\n"
            "from demos.engine import env\n"
            "from demos.engine.devices import jax_or_none\n"
            "from torch._dynamo.utils import counters\n"
            "torch.compile(lambda x: torch.sin(x) * 2 + 1)(torch.ones(64))\n"
            "jax = jax_or_none(); jax.jit(lambda a: a * 3 - 1)(jax.numpy.ones(8)).block_until_ready()\n"
            "if os.environ.get('NEW'): torch.compile(lambda x: torch.cos(x) - 3)(torch.ones(64))\n"
            "print(json.dumps([os.environ['TORCHINDUCTOR_CACHE_DIR'], env.cache_problem(),\n"
            "                  dict(counters['inductor'])]))\n")
    inductor, problem, counts = json.loads(_python(code, shared))  # the image's warm step: writable
    root = Path(inductor).parent
    assert root.parent == shared and problem is None and counts.get("fxgraph_cache_miss") == 1, counts
    (root / "warm.json").write_text("{}")

    def listing(folder: Path) -> list:
        return sorted((p.relative_to(folder).as_posix(), p.is_symlink(), p.lstat().st_mtime_ns) for p in folder.rglob("*"))

    before = listing(shared)

    def student(name: str, **extra: str) -> tuple[Path, dict]:
        env_ = {k: v for k, v in os.environ.items() if k not in ("DEMOS_WARMED_DIR", "TORCHINDUCTOR_CACHE_DIR",
                                                                 "DEMOS_JAX_CACHE_DIR", "DEMOS_CACHES_FOR")}
        env_.update(DEMOS_CACHE_DIR=str(shared), DEMOS_USER_CACHE_DIR=str(tmp_path / name), PYTHONWARNINGS="ignore",
                    **extra)
        try:
            argv = hub.read_only([shared], [sys.executable, "-c", code])
        except DemoError as exc:
            if os.environ.get("CI"):
                raise
            pytest.skip(str(exc))
        r = subprocess.run(argv, cwd=ROOT, env=env_, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        inductor, problem, counts = json.loads(r.stdout.strip().splitlines()[-1])
        assert problem is None and Path(inductor) == tmp_path / name / root.name / "inductor", (inductor, problem)
        return Path(inductor).parent, counts

    alice, counts = student("alice")
    assert counts.get("fxgraph_cache_hit") == 1 and not counts.get("fxgraph_cache_miss"), counts
    assert not [p for p in (alice / "jax").iterdir() if not p.is_symlink()], "JAX compiled a warm program again"
    assert not [p for p in (alice / "inductor").rglob("*") if p.is_file() and not p.is_symlink()
                and "locks" not in p.parts], "Inductor wrote where it should have read"
    alice, counts = student("alice", NEW="1")  # a graph nobody warmed: compiled into alice's folder
    assert counts.get("fxgraph_cache_miss") == 1 and counts.get("fxgraph_cache_hit") == 1, counts
    mine = {p.name for p in (alice / "inductor" / "fxgraph").rglob("*") if p.is_file() and not p.is_symlink()}
    assert mine, "the new graph is not in alice's folder"
    bob, counts = student("bob")
    assert counts.get("fxgraph_cache_hit") == 1, counts
    assert not mine & {p.name for p in (bob / "inductor" / "fxgraph").rglob("*")}, "bob reads alice's compile"
    assert listing(shared) == before, "a student's process wrote into the shared folder"


def test_jax_cache_keys_do_not_depend_on_where_the_cache_lies(tmp_path):
    """The same JAX program compiled with its persistent cache in two folders is stored under the
    same key (JAX's XLA autotune sub-cache, whose path entered the key, is off: devices.jax_or_none),
    so a cache warmed in one folder is read from another."""
    code = "import demos; from demos.topics import preload; preload()"
    for name in ("one", "two"):
        _python(code + "; print('ok')", tmp_path / name)
    one, two = ({p.name for p in (tmp_path / name).glob("*/jax/*")} for name in ("one", "two"))
    assert one and one == two, (one, two)
