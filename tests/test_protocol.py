"""The declared state every measurement starts from (demos.engine.protocol): fresh compile state,
the registry of per-process caches, the allocator, the thread policy and its load reading, the
interleaved timing, and what kept results are keyed on."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

import demos  # noqa: F401  (environment before torch/JAX)
from demos.engine import protocol
from demos.engine.timing import measure_interleaved


# -- fresh compile state --------------------------------------------------------------------
def _poly(x):
    return abs(x * 2 + 1)


def test_fresh_function_is_the_same_function_under_a_name_of_its_own():
    a, b = protocol.fresh_function(_poly), protocol.fresh_function(_poly)
    named = protocol.fresh_function(_poly, "part3")
    assert a.__code__ is not _poly.__code__ and a.__code__ is not b.__code__
    assert len({a.__name__, b.__name__, named.__name__, _poly.__name__}) == 4 and named.__name__ == "_poly_part3"
    assert a(-3.0) == b(-3.0) == _poly(-3.0) == 5.0
    # a builtin has no code of its own: it is called from a fresh Python function of its name
    fresh_len = protocol.fresh_function(len)
    assert fresh_len.__name__.startswith("len_") and fresh_len([1, 2, 3]) == 3
    assert protocol.fresh_function(len).__code__ is not fresh_len.__code__
    with pytest.raises(TypeError):
        protocol.fresh_function(3)


def test_two_fresh_copies_do_not_share_automatic_dynamic_state():
    """Dynamo remembers "this dimension varied" per (file, line, name): a copy that kept the name
    would compile dynamic from its first call because another copy saw two shapes."""
    torch = pytest.importorskip("torch")
    seen: list[int] = []

    def backend(gm, example_inputs):
        seen.append(sum(1 for n in gm.graph.nodes if n.op == "placeholder"))  # a symbolic size adds one
        return gm.forward

    first = torch.compile(protocol.fresh_function(_poly), backend=backend)
    first(torch.ones(4))
    first(torch.ones(8))  # second shape: automatic dynamic recompiles with a symbolic size
    second = torch.compile(protocol.fresh_function(_poly), backend=backend)
    second(torch.ones(16))
    assert seen[0] == 1 and seen[1] > 1, seen  # the first copy went dynamic
    assert seen[2] == 1, seen                  # the second starts static, as in a fresh process


def test_forget_all_empties_every_engine_cache_and_rejects_what_cannot_be_emptied():
    from demos import topics

    topics.load()
    box = protocol.engine_cache("tests.box", {})
    box["x"] = 1
    assert protocol.cached_entries() >= 1 and "tests.box" in protocol.cache_names()
    protocol.forget_all()
    assert box == {} and protocol.cached_entries() == 0
    with pytest.raises(TypeError):
        protocol.engine_cache("tests.bad", 3)


def _module_level_caches(path) -> list[str]:
    """Module-level state a topic module could keep between measurements: an empty container
    assigned at module level, a registered engine cache, an lru_cache, a ``global`` statement."""
    import ast

    tree = ast.parse(path.read_text())
    found = []
    empty = ("dict", "set", "list", "OrderedDict", "defaultdict", "deque", "engine_cache", "kept")
    for node in tree.body:
        value = getattr(node, "value", None)
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and value is not None:
            if isinstance(value, (ast.Dict, ast.Set, ast.List)) and not getattr(value, "keys", getattr(value, "elts", None)):
                found.append(f"line {node.lineno}: an empty container")
            elif isinstance(value, ast.Call) and getattr(value.func, "id", getattr(value.func, "attr", "")) in empty \
                    and (not value.args or getattr(value.func, "id", getattr(value.func, "attr", "")) in ("engine_cache", "kept")):
                found.append(f"line {node.lineno}: {ast.unparse(value)[:40]}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            found.append(f"line {node.lineno}: global {', '.join(node.names)}")
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for dec in node.decorator_list:
                if "cache" in ast.unparse(dec):
                    found.append(f"line {node.lineno}: @{ast.unparse(dec)} on {node.name}")
    return found


def test_no_topic_keeps_a_cache_of_its_own_a_demo_remembers_in_run_cache():
    """A demo's memory between measurements is ``run.cache``, which ``forget()`` drops; a topic
    module keeping a cache at module level would survive a Run and measure from a stale state."""
    from demos.engine.settings import PROJECT_ROOT

    offenders = {p.name: found for p in sorted((PROJECT_ROOT / "demos" / "topics").glob("*.py"))
                 if (found := _module_level_caches(p))}
    assert not offenders, offenders
    # the check itself finds each kind it looks for
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        bad = Path(d) / "bad.py"
        bad.write_text("import functools\n_A = {}\n_B: set = set()\n_C = engine_cache('x', {})\n"
                       "@functools.lru_cache\ndef f():\n    global _A\n"
                       "TABLE = dict(zip('ab', 'cd'))\nNAMES = {'a': 1}\n")  # constants are not caches
        assert len(_module_level_caches(bad)) == 5


def test_forget_drops_its_own_demos_state_and_leaves_the_others():
    """A Run in one panel measures that demo again from the declared state; another demo keeps its
    latest measurement and what it keeps in ``run.cache`` (only the compilers' process-wide
    in-memory caches are reset: ``Demo.forget`` says why)."""
    from demos.deck import demo as dm

    def measure(run, n: int = 2) -> dict:
        return {"n": n, "made": run.cached("made", lambda: [n])}

    a = dm.Demo("forget_a", "A", measure=measure, figure=lambda d, r: None)
    b = dm.Demo("forget_b", "B", measure=measure, figure=lambda d, r: None)
    try:
        a.run(), b.run()
        kept = b._state.cache["made"]
        a.forget()
        assert a._state.memo is None and not a._state.cache and a.shown() is None
        assert b.shown()["n"] == 2 and b._state.cache["made"] is kept
        assert protocol.cached_entries() == 0  # the engine's caches are emptied all the same
    finally:
        for d in (a, b):
            dm._REGISTRY.pop(d.key, None)


# -- the allocator ----------------------------------------------------------------------------
def test_the_allocator_is_in_steady_state_on_glibc():
    if not sys.platform.startswith("linux"):
        pytest.skip("glibc only")
    assert protocol.allocator_policy() == "steady"


# -- cores: the load reading and the thread policy -------------------------------------------
@pytest.mark.parametrize("others, cores, want", [(None, 2, 2), (0.0, 2, 2), (0.1, 2, 2), (0.3, 2, 1), (1.0, 2, 1),
                                                 (3.0, 2, 1), (0.5, 8, 7), (2.6, 8, 5)])
def test_threads_for_leaves_busy_cores_alone(others, cores, want):
    assert protocol.threads_for(others, cores) == want


def test_conditions_say_when_others_took_the_cores():
    ok = protocol.Conditions(2, 2, "all cores free", 0.0, others_during=0.2)
    busy = protocol.Conditions(2, 2, "all cores free", 0.0, others_during=0.9)
    one = protocol.Conditions(1, 2, "1 of 2 cores busy elsewhere", 1.0, others_during=1.0)
    assert ok.reliable and not ok.warning() and one.reliable
    assert not busy.reliable and "0.9 of 2 cores" in busy.warning() and "\n" not in busy.warning()
    assert one.stamp() == "1 of 2 threads (1 of 2 cores busy elsewhere)"
    # the figure's own stamp says it too (a figure is seen away from its status line: a slide, a PDF)
    assert busy.stamp() == "2 of 2 threads (all cores free) · ⚠ cores shared: other processes used 0.9 of 2 while it measured"
    assert "shared" not in ok.stamp()


def _spinner(seconds: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", f"import time\nt=time.time()\nwhile time.time()-t<{seconds}: pass"])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_load_reading_sees_another_busy_process():
    spin = _spinner(3.0)
    try:
        time.sleep(0.5)  # the interpreter has started and spins
        before = protocol._cpu_snapshot()
        time.sleep(0.5)
        others = protocol.others_busy(before)
    finally:
        spin.kill()
        spin.wait()
    assert others is not None and others >= 0.6, others  # one process spinning is about one core


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_declared_state_chooses_threads_from_the_load_and_reads_it_while_measuring(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.delenv("DEMOS_THREADS", raising=False)
    spin = _spinner(3.0)
    try:
        time.sleep(0.5)
        protocol._LAST_SNAPSHOT[0] = None  # read over a fresh window
        protocol.reset_policy()           # as after forget(): choose again
        with protocol.declared_state() as cond:
            time.sleep(0.4)
    finally:
        spin.kill()
        spin.wait()
    assert cond.threads == protocol.threads_for(cond.others_before, cond.cores) == torch.get_num_threads()
    if cond.cores == 2:
        assert cond.threads == 1 and "busy elsewhere" in cond.policy
    assert cond.others_during is not None and cond.others_during >= 0.6
    with protocol.declared_state() as held:  # the policy is held until forget: no recompile on a flicker
        pass
    assert (held.threads, held.policy) == (cond.threads, cond.policy)
    monkeypatch.setenv("DEMOS_THREADS", "1")
    with protocol.declared_state() as fixed:
        pass
    assert fixed.threads == 1 and fixed.policy == "DEMOS_THREADS=1"
    protocol.reset_policy()


def test_changing_torch_threads_recompiles_which_is_why_the_policy_is_held():
    """Dynamo guards on torch's thread count: the reason the count changes only at forget()."""
    torch = pytest.importorskip("torch")
    graphs: list[int] = []

    def backend(gm, example_inputs):
        graphs.append(1)
        return gm.forward

    before = torch.get_num_threads()
    f = torch.compile(protocol.fresh_function(_poly), backend=backend, dynamic=False)
    x = torch.ones(64)
    try:
        f(x)
        torch.set_num_threads(1 if before != 1 else 2)
        f(x)
    finally:
        torch.set_num_threads(before)
    assert len(graphs) == 2


# -- interleaved timing -------------------------------------------------------------------------
def _two_forms(order: list[str]) -> dict:
    """A 4 ms form and a 1 ms one (sleeps), each noting its calls in ``order``."""
    def form(name: str, s: float):
        def fn():
            order.append(name)
            time.sleep(s)

        return fn, lambda _o: None

    return {"slow": form("slow", 0.004), "fast": form("fast", 0.001)}


def test_interleaved_timing_samples_every_form_in_turn():
    order: list[str] = []
    t = measure_interleaved(_two_forms(order), warmup=0,
                            budget_s=0.1, min_samples=6, max_samples=6, min_sample_s=0.0, settle=False)
    assert t["slow"].n == t["fast"].n == 6 and t["slow"].median > t["fast"].median
    rounds = order[2:]  # after the two calibration calls: one sample of each per round, rotated
    assert [rounds[i:i + 2] for i in range(0, 4, 2)] == [["slow", "fast"], ["fast", "slow"]]
    # settled (the default): each timed call follows an untimed call of the same form, so no form
    # is timed in the wake of another framework's threads
    order.clear()
    measure_interleaved(_two_forms(order), warmup=0, budget_s=0.1, min_samples=4, max_samples=4, min_sample_s=0.0)
    assert order[2:10] == ["slow", "slow", "fast", "fast", "fast", "fast", "slow", "slow"]


def test_a_slow_form_settles_in_its_own_call_and_takes_fewer_rounds(monkeypatch):
    """A form at or over SETTLE_BELOW_S a call is timed without an untimed call first; and rounds
    that would overrun 3× the budget are cut, to no fewer than MIN_ROUNDS."""
    from demos.engine import timing

    order: list[str] = []
    monkeypatch.setattr(timing, "SETTLE_BELOW_S", 0.003)  # the 4 ms form counts as slow here
    t = measure_interleaved(_two_forms(order), warmup=0, budget_s=0.1, min_samples=4, max_samples=4, min_sample_s=0.0)
    assert order[2:8] == ["slow", "fast", "fast", "fast", "fast", "slow"]
    assert t["slow"].n == t["fast"].n == 4
    # the rounds: the budget's worth within [min_samples, max_samples] ...
    assert timing.interleaved_rounds(0.01, 1.0, 5, 200) == 100
    assert timing.interleaved_rounds(0.01, 1.0, 5, 50) == 50
    assert timing.interleaved_rounds(0.3, 1.0, 5, 200) == 5  # 1.5 s: within 3× the budget
    # ... and fewer than min_samples only where those would overrun 3× the budget, never under 3
    assert timing.interleaved_rounds(1.0, 1.0, 5, 200) == 3
    assert timing.interleaved_rounds(5.0, 0.6, 9, 200) == timing.MIN_ROUNDS == 3
    assert timing.interleaved_rounds(0.7, 1.0, 9, 200) == 4  # 9 rounds = 6.3 s; 4 = 2.8 s ≤ 3 s


def test_a_slow_spell_falls_on_every_form_alike():
    """A stall that lasts a stretch of time hits interleaved forms equally, not one form."""
    start = time.perf_counter()

    def form():
        def fn():
            if 0.05 < time.perf_counter() - start < 0.15:  # a busy spell of the machine
                time.sleep(0.003)
            time.sleep(0.001)

        return fn, lambda _o: None

    t = measure_interleaved({"a": form(), "b": form()}, warmup=0, budget_s=0.4, min_samples=20,
                            max_samples=200, min_sample_s=0.0, settle=False)
    slow = {k: sum(s > 0.0035 for s in v.samples) / len(v.samples) for k, v in t.items()}
    assert abs(slow["a"] - slow["b"]) < 0.2, slow


# -- what kept results depend on ------------------------------------------------------------------
def test_the_package_digest_changes_with_any_module(tmp_path):
    from demos.engine.env import package_digest
    from demos.engine.settings import PROJECT_ROOT

    tree = tmp_path / "demos" / "engine"
    tree.mkdir(parents=True)
    (tree / "a.py").write_text("x = 1\n")
    (tmp_path / "demos" / "b.py").write_text("y = 1\n")
    first = package_digest(root=tmp_path)
    (tree / "a.py").write_text("x = 2\n")
    assert package_digest(root=tmp_path) != first
    assert package_digest(with_versions=True) != package_digest() == package_digest(root=PROJECT_ROOT)
    assert package_digest(skip=("engine/",), root=tmp_path) == package_digest(skip=("engine/",), root=tmp_path)


def test_a_warm_result_is_dropped_when_the_package_or_versions_change(tmp_path, monkeypatch):
    import demos.deck.demo as dm
    from demos import topics

    demo = [d for d in topics.load() if d.opens_warmed][0]
    monkeypatch.setattr(dm, "WARMED_DIR", tmp_path)
    dm.save_warmed(demo, {"stamp": "s", "x": 1})
    assert dm.load_warmed(demo)["x"] == 1
    monkeypatch.setattr(dm, "_source_hash", lambda d: "another-version")
    assert dm.load_warmed(demo) is None
    saved = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert saved["source"] != "another-version"


def test_the_tests_keep_results_in_a_folder_of_their_own():
    import os

    from demos.deck.demo import WARMED_DIR
    from demos.engine.env import CACHE_ROOT

    assert os.environ["DEMOS_WARMED_DIR"] and WARMED_DIR != CACHE_ROOT / "warmed"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_child_process_the_measurement_waits_for_is_its_own_work():
    """A cold compile is measured in a fresh process: its CPU is this measurement's, not another
    process's load (otherwise part 5's compile latency would always warn of busy cores)."""
    before = protocol._cpu_snapshot()
    # the child spends 0.6 s of CPU (process time, so a busy machine only makes it take longer)
    subprocess.run([sys.executable, "-c", "import time\nwhile time.process_time() < 0.6: pass"], check=True)
    after = protocol._cpu_snapshot()
    # counted as this process's own CPU, so others_busy (machine − own) leaves it out, whatever
    # else the machine is doing meanwhile
    assert after[2] - before[2] >= 0.55, (before, after)


def test_choosing_a_policy_reads_a_real_window_even_right_after_a_measurement(monkeypatch):
    monkeypatch.delenv("DEMOS_THREADS", raising=False)
    with protocol.declared_state():
        pass
    protocol.reset_policy()  # as after forget(): the next measurement chooses again, at once
    with protocol.declared_state() as cond:
        pass
    assert cond.others_before is not None
    protocol.reset_policy()


# A machine without Linux's /proc and without glibc's mallopt (a Mac, a musl container), simulated
# in a fresh process: the deck imports, measures on the CPU, and its stamp says what it could not do.
_NO_PROC_NO_GLIBC = r'''
import builtins, ctypes, json
_open = builtins.open
def no_proc(path, *a, **k):
    if str(path).startswith("/proc/"):
        raise FileNotFoundError(2, "No such file or directory", str(path))
    return _open(path, *a, **k)
builtins.open = no_proc
class CDLL(ctypes.CDLL):
    def __getattr__(self, attr):
        if attr == "mallopt":
            raise AttributeError(attr)
        return super().__getattr__(attr)
ctypes.CDLL = CDLL
import demos
from demos.engine import protocol
from demos.topics import eager
d = eager.timeline.run()
print("SIM " + json.dumps({"stamp": d["stamp"], "allocator": protocol.allocator_policy(), "ops": d.get("ops")}))
'''


def test_without_proc_and_glibc_it_measures_and_says_what_it_could_not_do():
    import json

    r = subprocess.run([sys.executable, "-c", _NO_PROC_NO_GLIBC], capture_output=True, text=True, timeout=300)
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("SIM ")]
    assert r.returncode == 0 and line, r.stderr[-2000:]
    got = json.loads(line[0][4:])
    assert got["allocator"] == "the platform's (no glibc)"
    assert "(load unknown without /proc: all cores used)" in got["stamp"]
    assert "allocator: the platform's (no glibc)" in got["stamp"]
