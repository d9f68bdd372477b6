"""Part 7: the compiler inspector on each preset (its facts asserted exactly), on what students
type (one line each, the next Run works), from the command line, and in its panel."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import demos  # noqa: F401  (environment before torch/JAX)
from demos.engine.errors import DemoError
from demos.engine.worker import Worker, rss_bytes
from demos.introspection import inspector, inspector_inputs, inspector_report
from demos.topics import yourfn

ROOT = Path(__file__).resolve().parent.parent
PRESETS = yourfn.PRESETS


def _line_of(code: str, needle: str, start: int = 0) -> int:
    """1-based number of the first line of ``code`` containing ``needle``, from line ``start`` on."""
    return next(i + 1 for i, ln in enumerate(code.splitlines()) if i >= start and needle in ln)


@pytest.fixture(scope="module")
def reports():
    """Every preset, as written and with its fix, inspected in this process (no worker: the facts)."""
    out = {}
    for key, p in PRESETS.items():
        for version in ("code", "fix"):
            if p[version]:
                out[key, version] = inspector.inspect_source(p[version], shape=p["shape"], budget_s=0.05,
                                                             sweep_dim=0 if key in ("loop", "chain") else None)
    return out


def test_the_chain_is_one_graph_and_six_ops_become_one_kernel(reports):
    t = reports["chain", "code"]["torch"]
    assert (t["graphs"], t["breaks"], t["eager_ops"], t["kernels"]) == (1, 0, 6, 1)
    assert t["code_excerpt"][0].startswith("# kernel 1/1")
    assert t["compile_s"] > 0 and t["eager"]["p10_s"] <= t["eager"]["median_s"] <= t["eager"]["p90_s"]
    assert t["compile_s"] <= t["first_s"]  # the first call less a compiled call
    j = reports["chain", "code"]["jax"]
    assert j["error"] == "" and j["jaxpr_eqns"] == 6 and j["fusions"] == 1 and j["flops"] > 0
    sweep = reports["chain", "code"]["sweep"]["torch"]
    # automatic dynamic: static at the first size, dynamic at the second, hits from then on
    assert [c["compiled"] for c in sweep["calls"]] == [True, True] + [False] * 8
    assert sweep["calls"][1]["dynamic"] and "size mismatch at index 0" in sweep["calls"][1]["reason"]
    assert reports["chain", "code"]["sweep"]["jax"]["misses"] == 10  # jax.jit traces every new shape
    assert yourfn.inspector_claims({"preset": "chain", "edited": False, "report": reports["chain", "code"]})


def test_item_is_exactly_one_break_at_its_line_with_torchs_hint(reports):
    code = PRESETS["item"]["code"]
    t = reports["item", "code"]["torch"]
    assert (t["graphs"], t["breaks"]) == (2, 1)
    (b,) = t["break_list"]
    assert "item()" in b["reason"] and b["line"] == _line_of(code, ".item()") and ".item()" in b["source"]
    assert "capture_scalar_outputs" in b["hint"]
    j = reports["item", "code"]["jax"]
    assert j["error_type"] == "ConcretizationTypeError" and j["line"] == _line_of(code, "float(")
    fixed = reports["item", "fix"]
    assert (fixed["torch"]["graphs"], fixed["torch"]["breaks"]) == (1, 0) and fixed["jax"]["error"] == ""


def test_a_data_dependent_if_breaks_torch_and_raises_in_jax(reports):
    code = PRESETS["branch"]["code"]
    t = reports["branch", "code"]["torch"]
    (b,) = t["break_list"]
    assert b["line"] == _line_of(code, "if y.sum()") and "data-dependent branch" in b["plain"]
    assert "torch.where" in b["hint"]
    j = reports["branch", "code"]["jax"]
    assert j["error_type"] == "TracerBoolConversionError" and j["line"] == _line_of(code, "if y.sum()", 9)
    fixed = reports["branch", "fix"]
    assert fixed["torch"]["breaks"] == 0 and fixed["torch"]["kernels"] >= 1 and fixed["jax"]["error"] == ""


def test_print_breaks_the_graph_and_runs_once_under_jit(reports):
    t = reports["print", "code"]["torch"]
    assert t["breaks"] == 1 and "print" in t["break_list"][0]["plain"]
    assert t["printed"]["lines"] > 0 and reports["print", "code"]["jax"]["error"] == ""
    assert reports["print", "fix"]["torch"]["breaks"] == 0


def test_the_shape_loop_recompiles_per_length_until_the_limit_then_runs_eagerly(reports):
    sweep = reports["loop", "code"]["sweep"]["torch"]
    limit = sweep["limit"]
    calls = sweep["calls"]
    assert sweep["compiles"] == limit == 8
    assert all(c["compiled"] and not c["dynamic"] for c in calls[:limit])  # unrolled: never dynamic
    assert all(c["fallback"] and not c["compiled"] for c in calls[limit:])
    fixed = reports["loop", "fix"]["sweep"]["torch"]
    assert fixed["compiles"] == 2 and fixed["calls"][1]["dynamic"]  # the fix goes dynamic once
    assert not any(c["compiled"] for c in fixed["calls"][2:])


def test_mutation_runs_on_copies_and_cond_keeps_both_branches_in_one_graph(reports):
    assert reports["mutation", "code"]["torch"]["mutates"] and not reports["mutation", "fix"]["torch"]["mutates"]
    assert reports["mutation", "code"]["torch"]["numerics"]["max_abs"] < 1e-4
    assert reports["cond", "code"]["torch"]["breaks"] == 1
    assert reports["cond", "code"]["jax"]["error_type"] == "TracerBoolConversionError"
    fixed = reports["cond", "fix"]
    assert (fixed["torch"]["graphs"], fixed["torch"]["breaks"]) == (1, 0) and fixed["jax"]["error"] == ""


def test_numerics_explain_random_numbers():
    t = inspector.inspect_source("import torch\ndef noisy(x):\n    return x + torch.rand_like(x)\n",
                                 shape="64x64", jax=False, sweep_dim=None, budget_s=0.02)["torch"]
    assert t["numerics"]["max_abs"] > 0.01 and "fallback_random" in t["numerics"]["why"]


def test_numerics_name_their_likely_causes_not_a_blanket_reassociation():
    """Pointwise float32 differences come from the math library (sin), bfloat16 ones from skipped
    roundings; "reassociation" is named only where there is a sum; FMA only on a GPU."""
    import textwrap

    from demos.introspection.inspector_torch import _causes

    src = "import torch\ndef f(x):\n    return torch.sin(x + 1) * 2\n"
    t = inspector.inspect_source(src, shape="256x256", jax=False, sweep_dim=None, budget_s=0.02)["torch"]
    why = t["numerics"]["why"]
    assert t["numerics"]["max_abs"] == 0 or why == "likely: another math library (sin)", why
    t = inspector.inspect_source(src.replace("sin(x + 1)", "relu(x * 3 + 1)"), shape="256x256", dtype="bfloat16",
                                 jax=False, sweep_dim=None, budget_s=0.02)["torch"]
    assert t["numerics"]["max_abs"] > 0 and "bfloat16 roundings skipped" in t["numerics"]["why"]
    assert "reassociation" not in t["numerics"]["why"]
    assert "reassociation" in _causes(["sin", "mul", "sum"], "", [], "cpu")
    assert "FMA" in _causes(["mul", "add"], "", [], "cuda") and "FMA" not in _causes(["mul", "add"], "", [], "cpu")
    cond = "torch.cond(x.mean() > 0, lambda x: torch.sin(x) * 2, lambda x: torch.cos(x) - 1, (x,))"
    assert _causes(None, cond, [], "cpu") == "likely: another math library (sin, cos); a reordered sum (reassociation)"
    worst = _causes(["exp", "log", "sigmoid", "sum"], "", ["bfloat16", "float16"], "cuda")
    assert len(textwrap.wrap(worst, 66)) <= 3, worst  # the figure wraps it at 66 characters, three lines


def test_inspect_fn_is_the_public_api_and_counts_in_any_notebook():
    import torch

    from demos import inspect_fn

    def f(x):
        return torch.relu(x * 2) + 1

    rep = inspect_fn(f, torch.randn(256), sweep_dim=None, budget_s=0.02)
    assert rep.torch["kernels"] == 1 and rep.torch["breaks"] == 0 and "f:" in rep.summary()
    with pytest.raises(DemoError, match="give example inputs as torch tensors"):
        inspect_fn(f, [1.0, 2.0])


# ---------------------------------------------------------------------------------------
# What students type: one line each, the kernel (here: this process) survives, the next Run works
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def worker():
    w = Worker(preload=inspector.WORKER_PRELOAD)
    yield w
    w.stop()


GOOD = "import torch\ndef f(x):\n    return torch.sin(x) * 2\n"


@pytest.mark.parametrize("code, says", [
    ("def f(x):\n    return x +* 2\n", "syntax error at line 2, column 15: invalid syntax"),
    ("def f(x):\n    raise ValueError('nope')\n", "line 2 (raise ValueError('nope')): ValueError: nope"),
    ("def f(x):\n    return 3\n", "your function returned int, not a tensor"),
    ("x = 1\n", "your code defines no function"),
    ("def f(x, y, z, u, v):\n    return x\n", "takes 5 inputs"),
    ("import torch\ndef f(x):\n    return torch.nope(x)\n", "AttributeError"),
])
def test_bad_code_is_one_line_and_the_next_run_works(worker, code, says):
    with pytest.raises(DemoError) as err:
        inspector.run_isolated(worker, code, shape="64x64", timeout_s=120)
    assert says in str(err.value) and "\n" not in str(err.value)
    assert inspector.run_isolated(worker, GOOD, shape="64x64", sweep_dim=None)["torch"]["kernels"] == 1


def test_a_worker_started_in_the_background_serves_the_next_job_once_started():
    """A slide that opens on `make warm`'s result starts the worker meanwhile: the next job waits
    for the start (and its warm-up job) instead of starting a second child."""
    w = Worker()
    seen = []
    try:
        # a job is module.function(**kwargs, progress=…): builtins.dict echoes its keywords
        w.start_in_background(then=lambda wk: seen.append(wk.call("builtins", "dict", {"job": "warm-up"})["job"]))
        assert w.call("builtins", "dict", {"job": "next"})["job"] == "next"
        assert seen == ["warm-up"] and w.starts == 1 and w.alive
        w.start_in_background()  # running already: nothing starts
        assert w.starts == 1
    finally:
        w.stop()


@pytest.mark.slow  # waits out a limit by design (15-20 s): make test, not test-fast
def test_an_endless_loop_is_stopped_and_the_worker_restarts_clean(worker):
    code = "import torch\ndef f(x):\n    while True:\n        x = x + 1\n    return x\n"
    starts = worker.starts
    with pytest.raises(DemoError, match=r"stopped after 6 s without an answer"):
        inspector.run_isolated(worker, code, shape="64x64", timeout_s=6)
    assert not worker.alive
    d = inspector.run_isolated(worker, GOOD, shape="64x64", sweep_dim=None)
    assert worker.starts == starts + 1 and d["worker"]["start_s"] > 0 and d["torch"]["breaks"] == 0


@pytest.mark.slow  # waits out a limit by design: make test, not test-fast
def test_an_endless_loop_is_stopped_at_the_eager_runs_limit_with_the_seconds_counted(worker, monkeypatch):
    """The eager run at the student's shape has its own short limit (11 s from Run, a cold worker's
    start included), not the job's 180 s: a student in a lecture waits seconds, the panel counts
    them down, and the stop says at which line of the code box the loop was. (Waited out here at
    4 s: the parent applies the limit it is given, whatever its value.)"""
    import time

    assert inspector.EAGER_LIMIT_S == 11
    monkeypatch.setattr(inspector, "EAGER_LIMIT_S", 4.0)
    code = "import torch\ndef f(x):\n    y = x * 2\n    while True:\n        x = x + 1\n    return x\n"
    inspector.run_isolated(worker, GOOD, shape="64x64", sweep_dim=None)  # a warm worker: the clock is the loop's
    said = []
    t0 = time.monotonic()
    with pytest.raises(DemoError, match=r"^stopped: your function, run eagerly at 64x64, had not returned within "
                                         r"4 s \(an endless loop\?\)\. It was at line 5: `x = x \+ 1`\. The worker "
                                         r"was restarted"):
        inspector.run_isolated(worker, code, shape="64x64", timeout_s=180, progress=lambda f, m="": said.append(m))
    assert time.monotonic() - t0 < 4 + 10 and not worker.alive
    counted = [m for m in said if m.startswith("running it eagerly (stopped in ")]
    assert len(counted) >= 3 and counted[-1].endswith("(stopped in 1 s if it does not return)"), said[-3:]


@pytest.mark.slow  # waits out a limit by design (15-20 s): make test, not test-fast
def test_memory_beyond_the_cap_is_stopped(worker):
    inspector.ensure_worker(worker)
    base = rss_bytes(worker.proc.pid)
    code = ("import torch\nkeep = []\ndef f(x):\n    for _ in range(32):\n"
            "        keep.append(torch.ones(2**26))\n    return x\n")
    with pytest.raises(DemoError, match=r"stopped: it used over .* GiB of memory"):
        inspector.run_isolated(worker, code, shape="64x64", memory_bytes=base + 2**30, timeout_s=120)
    assert inspector.run_isolated(worker, GOOD, shape="64x64", sweep_dim=None)["torch"]["kernels"] == 1


def test_sizes_are_refused_before_anything_is_allocated():
    fake = type("W", (), {"alive": True, "call": lambda *a, **k: pytest.fail("ran a job")})()
    for shape, says in (("65536x65536", "choose a smaller shape"), ("abc", "give sizes like 1024x1024"),
                        ("0x4", "each from 1 to 2^26"), ("1x2x3x4x5", "1 to 4 sizes")):
        with pytest.raises(DemoError, match=re.escape(says)):
            inspector.run_isolated(fake, GOOD, shape=shape, memory_bytes=2**30)
    with pytest.raises(DemoError, match="dtype 'int8'"):
        inspector.run_isolated(fake, GOOD, dtype="int8")


def test_a_function_neither_compiler_traces_is_reported_not_fatal(worker):
    code = ("import torch\nimport jax.numpy as jnp\n"
            "def f(x):\n    vals = x.flatten()[:4].tolist()\n    return x * sum(vals)\n"
            "def f_jax(x):\n    vals = x.flatten()[:4].tolist()\n    return x * sum(vals)\n")
    d = inspector.run_isolated(worker, code, shape="64x64", sweep_dim=None)
    assert d["torch"]["breaks"] >= 1 and d["jax"]["error_type"] == "ConcretizationTypeError"


# ---------------------------------------------------------------------------------------
# The command line and the panel
# ---------------------------------------------------------------------------------------
def test_the_command_line_inspects_a_file(tmp_path):
    f = tmp_path / "mine.py"
    f.write_text(PRESETS["item"]["code"])
    out = tmp_path / "report.json"
    r = subprocess.run([sys.executable, "-m", "demos", "inspect", f"{f}:scale", "--shape", "256x256", "--no-sweep",
                        "--json", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "scale: 2 graphs · 1 break" in r.stdout and f"break at line {_line_of(f.read_text(), '.item()')}" in r.stdout
    assert "ConcretizationTypeError" in r.stdout and out.read_text().startswith('{\n "schema": "jit-deck/inspection@1"')
    for argv, says in (([str(tmp_path / "nope.py")], "no such file"), ([f"{f}:1bad"], "is not a function name"),
                       ([str(f), "--shape", "big"], "give sizes like"), ([str(f), "--json", str(f)], "input"),
                       ([str(tmp_path)], "is a directory")):
        r = subprocess.run([sys.executable, "-m", "demos", "inspect", *argv], cwd=ROOT, capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 2 and says in r.stderr and len(r.stderr.strip().splitlines()) == 1, (argv, r.stderr)


def test_the_panel_fills_presets_runs_and_redraws_views(monkeypatch):
    monkeypatch.setattr("demos.deck.ui.static_mode", lambda: False)
    monkeypatch.setattr("IPython.display.display", lambda *a, **k: None)
    panel = yourfn.inspector(show=False, preset="item")
    assert panel.values()["code"] == PRESETS["item"]["code"] and panel.values()["shape"] == PRESETS["item"]["shape"]
    panel._build()
    panel.controls["preset"].value = "branch"  # a preset fills the code box and the shape, and measures nothing
    assert panel.controls["code"].value == PRESETS["branch"]["code"] and panel.renders == 0
    panel.controls["version"].value = "fixed"
    assert panel.controls["code"].value == PRESETS["branch"]["fix"]
    panel.button.click()  # Run: it goes on in the background (the kernel answers Stop meanwhile)
    panel.join(300)
    assert panel.last_error is None and panel.renders == 1, panel.last_error
    data = yourfn.inspector.shown()
    assert data["before_after"]["before"]["breaks"] == 1 and data["before_after"]["after"]["breaks"] == 0
    first = panel.last_png
    calls = []
    monkeypatch.setattr(yourfn, "run_isolated", lambda *a, **k: calls.append(a) or pytest.fail("measured"))
    panel.controls["view"].value = "time & numerics"  # a view redraws the same report
    panel.join(300)
    assert panel.renders == 2 and panel.last_png != first and not calls
    monkeypatch.undo()
    monkeypatch.setattr("demos.deck.ui.static_mode", lambda: False)
    panel.controls["code"].value = "def f(x):\n    return x +* 2\n"
    panel.join(300)
    panel.button.click()
    panel.join(300)
    assert panel.last_error.startswith("syntax error at line 2") and "syntax error" in panel.status.value
    panel.controls["code"].value = GOOD
    panel.join(300)
    panel.button.click()
    panel.join(300)
    assert panel.last_error is None and panel.renders == 3
    assert not yourfn.inspector.shown().get("before_after")  # edited code: no before → after


def test_stop_ends_a_run_under_way_in_one_line_and_the_next_run_measures(monkeypatch):
    """Run goes on in a background thread, so the kernel answers the Stop button while an endless
    loop runs; Stop kills the worker within a second or two (not the eager run's 15 s limit), the
    panel says so in one line, and the next Run starts a new worker and measures."""
    import time

    monkeypatch.setattr("demos.deck.ui.static_mode", lambda: False)
    panel = yourfn.inspector(show=False)
    panel._build()
    panel.controls["code"].value = "import torch\ndef f(x):\n    while True:\n        x = x + 1\n    return x\n"
    panel.button.click()
    assert panel.running and panel.button.disabled and not panel.stop_button.disabled  # the click returned
    panel.button.click()  # a second Run while one is under way: ignored
    deadline = time.monotonic() + 240  # the worker's start (first use), then the eager run
    while "running it eagerly" not in panel.status.value and panel.running and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "running it eagerly" in panel.status.value, panel.status.value
    t0 = time.monotonic()
    panel.stop_button.click()
    panel.join(10)
    assert not panel.running and time.monotonic() - t0 < 5
    assert re.fullmatch(r"stopped after \d+ s \(Stop\); the next Run starts a fresh worker", panel.last_error)
    assert "(Stop)" in panel.status.value and panel.renders == 0 and not yourfn.worker().alive
    assert not panel.button.disabled and panel.stop_button.disabled and not yourfn.worker().cancelled.is_set()
    panel.stop_button.click()  # a Stop with no Run under way: ignored, and the next Run is not ended by it
    panel.controls["code"].value = GOOD
    panel.button.click()
    panel.join(300)
    assert panel.last_error is None and panel.renders == 1 and yourfn.worker().alive


# ---------------------------------------------------------------------------------------
# A function written with jax.numpy alone: the JAX half of the report, and a line saying why
# there is no torch half (the panel, the command line and inspect_fn alike)
# ---------------------------------------------------------------------------------------
JAX_ONLY = ("import jax.numpy as jnp\n\n\ndef helper(x):\n    return jnp.tanh(x) * 2\n\n\n"
            "def g(x):\n    return helper(x) + jnp.sin(x)\n")
JAX_BRANCH = "import jax.numpy as jnp\n\n\ndef h(x):\n    if x.sum() > 0:\n        return jnp.sin(x)\n    return x\n"


def test_which_functions_are_written_with_jax_alone():
    ns = inspector_inputs.load_source(JAX_ONLY + "import torch\n\n\ndef t(x):\n    return torch.sin(x)\n\n\n"
                                      "def m(x):\n    return x.sin() * 2\n\n\ndef mixed(x):\n    return torch.sin(jnp.cos(x))\n")
    found = {name: inspector_inputs.uses_jax_only(inspector_inputs.pick_function(ns, name))
             for name in ("g", "helper", "t", "m", "mixed")}
    assert found == {"g": True, "helper": True, "t": False, "m": False, "mixed": False}  # g through its helper


def test_a_jax_only_function_gets_the_jax_half_and_a_line_for_torch():
    d = inspector.inspect_source(JAX_ONLY, func="g", shape="64x128", budget_s=0.02)
    t, j, sw = d["torch"], d["jax"], d["sweep"]
    assert set(t) == {"skipped"} and "no torch version" in t["skipped"] and d["device"].startswith("jax ")
    # tanh, mul, sin, add: four jaxpr equations, one XLA fusion, one kernel
    assert (j["jaxpr_eqns"], j["fusions"], j["kernels"]) == (4, 1, 1) and j["compile_s"] > 0 and j["hlo_excerpt"]
    assert j["op_by_op"]["median_s"] > 0 and j["jit"]["median_s"] > 0 and j["conditions"]
    # every new size of dimension 0 is a miss naming the argument's new shape
    calls = sw["jax"]["calls"]
    assert sw["dim"] == 0 and "torch" not in sw and [c["size"] for c in calls] == list(range(64, 74))
    assert all(c["miss"] for c in calls) and sw["jax"]["misses"] == 10 and "f32[65,128]" in calls[1]["reason"]
    text = inspector_report.report_text(d)
    assert "g: jax.jit only · 4 jaxpr equations → 1 XLA fusion · 10 compiles over 10 sizes" in text
    assert "torch.compile: no torch version" in text and "optimized HLO" in text and "size     65: jax miss" in text
    # the panel draws each view of it
    from demos.topics.yourfn_figures import VIEWS, figure_inspection

    data = {"report": d, "preset": "chain", "version": "as written", "edited": True, "code": JAX_ONLY.splitlines(),
            "device": d["device"], "extra": "64x128 float32"}
    says = dict(zip(VIEWS, ("no torch version", "jax.jit has no guards", "optimized HLO (XLA)",
                            "torch.compile: not inspected")))
    for view in VIEWS:
        fig = figure_inspection(data, None, view)
        words = " ".join(t.get_text() for t in fig.texts)
        assert says[view] in words and "Traceback" not in words, (view, words)
    with pytest.raises(DemoError, match="written with JAX alone, and JAX was left out"):
        inspector.inspect_source(JAX_ONLY, func="g", shape="64x128", jax=False)


def test_inspect_fn_takes_a_jax_function_with_torch_tensors_or_jax_arrays():
    import jax.numpy as jnp
    import torch

    from demos import inspect_fn

    def f(x):
        return jnp.exp(jnp.cos(x))

    for x in (torch.randn(256), jnp.ones(256)):
        rep = inspect_fn(f, x, sweep_dim=None, budget_s=0.02)
        assert rep.torch == {"skipped": rep.torch["skipped"]} and rep.jax["fusions"] == 1 and rep.sweep is None
        assert rep.summary().startswith("f: jax.jit only · 2 jaxpr equations → 1 XLA fusion")


def test_a_jax_only_function_jax_cannot_trace_is_its_line_not_a_failure():
    d = inspector.inspect_source(JAX_BRANCH, shape="64x64", budget_s=0.02)
    assert d["jax"]["error_type"] == "TracerBoolConversionError" and d["jax"]["line"] == 5 and d["sweep"] is None
    assert inspector_report.summary_line(d).startswith("h: jax.jit: line 5 (if x.sum() > 0:)")


def test_the_command_line_inspects_a_jax_only_file(tmp_path):
    f = tmp_path / "mine_jax.py"
    f.write_text(JAX_ONLY)
    r = subprocess.run([sys.executable, "-m", "demos", "inspect", f"{f}:g", "--shape", "128x128"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "g: jax.jit only · 4 jaxpr equations → 1 XLA fusion" in r.stdout and "no torch version" in r.stdout
