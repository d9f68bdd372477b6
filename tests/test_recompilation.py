"""Part 5 — the bill: compile latency, recompilation (counted, not assumed), the stateful live panel.

The log parsers are tests/test_dynamo.py; drawing, recording and moving every control of each
demo is tests/test_demos.py."""
from __future__ import annotations

import json
import math

import pytest

import demos  # noqa: F401  (environment before torch/JAX)
from demos.introspection import coldcompile
from demos.deck.claims import FAILS, HOLDS, NOT_HERE
from demos.engine.errors import DemoError
from demos.engine.measurement import Run
from demos.introspection import dynamo
from demos.topics import recompilation as rc
from demos.topics.recompilation_figures import summarize
from demos.topics.recompilation_session import Event, bucket_of

LENGTHS = rc.sweep_lengths(12)  # compare_modes' default: 24 calls, 12 distinct lengths (more than the limit)


# ---------------------------------------------------------------------------------------
# Unit tests
# ---------------------------------------------------------------------------------------
def test_bucket_of_rounds_up_to_multiples():
    assert bucket_of(1, 64) == 64
    assert bucket_of(64, 64) == 64
    assert bucket_of(65, 64) == 128
    assert bucket_of(200, 64) == 256
    with pytest.raises(DemoError):
        bucket_of(0, 64)


def test_sweep_lengths_are_deterministic_and_distinct():
    a = rc.sweep_lengths(12, 6)
    assert a == rc.sweep_lengths(12, 6)
    assert len(a) == 18
    assert len(set(a[:12])) == 12  # the first 12 calls are all new lengths
    assert set(a[12:]) <= set(a[:12])  # the repeats reuse seen lengths
    d = rc.sweep_defaults("cpu")
    assert all(d["S_min"] < s <= d["S_max"] for s in a)
    with pytest.raises(DemoError):
        rc.sweep_lengths(0)


def test_break_even_by_hand():
    # 2 s of compiling, 10 ms eager vs 6 ms compiled: 4 ms saved per call → 500 calls
    assert rc.break_even(2.0, 0.010, 0.006) == pytest.approx(500)
    assert math.isinf(rc.break_even(2.0, 0.006, 0.010))  # slower compiled: never pays
    assert rc._fmt_calls(math.inf).startswith("never")
    assert rc._fmt_calls(0.4) == "1 call"


def test_summarize_by_hand():
    evs = [Event(0, 10, 10, 1.0, compiled=True), Event(1, 10, 10, 0.01),
           Event(2, 11, 11, 0.03, fallback=True), Event(3, 10, 10, 0.02)]
    s = summarize(evs)
    assert s["steady_s"] == pytest.approx(0.02)
    assert s["compiles"] == 1 and s["compile_s"] == pytest.approx(0.98)  # the compiling call less a steady one
    assert s["fallback_calls"] == 1 and s["distinct_lengths"] == 2
    assert s["total_s"] == pytest.approx(1.06)


def test_unknown_mode_is_one_line():
    with pytest.raises(DemoError, match="unknown mode"):
        rc.Session("fast")


# ---------------------------------------------------------------------------------------
# The claims of the recompilation slides, counted on this machine
# ---------------------------------------------------------------------------------------
def _sweep_from_the_declared_state() -> dict:
    """The panel's default sweep, as the slide measures it: the thread policy chosen anew from the
    load now (forget()), not one an earlier test in this process chose on an idle box."""
    rc.compare_modes.forget()
    return rc.compare_modes.run()


@pytest.fixture(scope="module")
def sweeps():
    data = _sweep_from_the_declared_state()
    if not all(rc.modes_claims.select("trap")(data).values()):
        # the trap is a timing claim: CI saw eager's sweep take 0.72 s beside a browser walk of part 6,
        # more than dynamic=False's (0.46 s, its graphs cached first). Measured once more; the counts
        # are exact, so a wrong count fails both times.
        data = _sweep_from_the_declared_state()
    assert data["lengths"] == LENGTHS
    return data


def _n_buckets(lengths, bucket):
    return len({bucket_of(s, bucket) for s in lengths})


def test_static_compiles_once_per_shape_until_the_limit_then_runs_eager(sweeps):
    d = sweeps["modes"]["static"]
    limit = dynamo.recompile_limit()
    assert limit == 8  # torch's default, as the slides say
    distinct = len(set(LENGTHS))
    assert distinct > limit
    assert d["compiles"] == limit, d["summary"]
    for m in sweeps["modes"].values():  # compile_s: each compiling call less a steady call, never above them
        s = m["summary"]
        assert 0 <= s["compile_s"] <= sum(e["seconds"] for e in m["events"] if e["compiled"]) <= s["total_s"], s
    # one compile per new shape, in order, for the first `limit` shapes; repeats never compile
    compiled_calls = [e["i"] for e in d["events"] if e["compiled"]]
    assert compiled_calls == list(range(limit))
    # then it stops compiling: the limit was hit at the next new shape, which ran eager
    assert d["limit_hit_at"] == limit
    assert "recompile_limit" in d["limit_message"]
    fallback = [e for e in d["events"] if e["fallback"]]
    assert {e["S"] for e in fallback} == set(LENGTHS[limit:distinct])
    assert all(not e["compiled"] for e in d["events"][limit:])
    # each recompile names the failed guard (the size of x)
    reasons = [e["reason"] for e in d["events"] if e["compiled"]][1:]
    assert all("size mismatch" in r for r in reasons), reasons
    claims = rc.mode_claims("static", d)
    assert len(claims) == 3 and all(claims.values()), claims


@pytest.mark.timing  # the trap among them (see the fixture)
def test_every_modes_claims_hold_and_can_fail(sweeps):
    claims = rc.modes_claims(sweeps)
    assert all(claims.values()), claims
    assert len(claims) >= 1 + 3 + 4 + 1  # every mode ran, static's three, auto/mark_dynamic/bucket/eager, the trap
    import copy

    bad = copy.deepcopy(sweeps)
    bad["modes"]["static"]["summary"]["total_s"] = 0.0  # a static sweep cheaper than eager: no trap
    bad["modes"]["mark_dynamic"]["compiles"] = 2
    bad["modes"]["auto"]["events"][1]["symbolic"] = False
    failed = {k for k, ok in rc.modes_claims(bad).items() if not ok}
    assert failed == {"the recurring trap: dynamic=False's sweep takes longer than eager's, auto dynamic's and "
                      "mark_dynamic's", "mark_dynamic: 1 compile",
                      "automatic dynamic: at most 2 compiles, the second with a symbolic length"}, failed


def test_automatic_dynamic_compiles_at_most_twice(sweeps):
    d = sweeps["modes"]["auto"]
    assert 1 <= d["compiles"] <= 2
    assert d["events"][1]["symbolic"] if d["compiles"] == 2 else True


def test_mark_dynamic_compiles_once(sweeps):
    assert sweeps["modes"]["mark_dynamic"]["compiles"] == 1


def test_buckets_compile_at_most_once_per_bucket(sweeps):
    d = sweeps["modes"]["bucket"]
    n = _n_buckets(LENGTHS, d["bucket"])
    assert d["compiles"] == n <= 4
    assert d["summary"]["fallback_calls"] == 0


def test_jax_jit_compiles_once_per_shape_and_once_per_bucket(sweeps):
    if "jax_jit" not in sweeps["modes"]:
        pytest.skip("JAX not installed")
    assert sweeps["modes"]["jax_jit"]["compiles"] == len(set(LENGTHS))
    b = sweeps["modes"]["jax_bucket"]
    assert b["compiles"] == _n_buckets(LENGTHS, b["bucket"])
    reasons = [e["reason"] for e in sweeps["modes"]["jax_jit"]["events"] if e["compiled"]][1:]
    assert all("now f32" in r and "before f32" in r for r in reasons), reasons


@pytest.mark.timing  # the slide's trap claim: a busy spell of the shared box gets one more sweep (the fixture)
def test_recompiling_every_shape_is_slower_than_eager(sweeps):
    """The recurring trap, as the slide claims it (its one threshold): dynamic=False's sweep takes
    longer than eager's, auto dynamic's and mark_dynamic's."""
    totals = {m: sweeps["modes"][m]["summary"]["total_s"] for m in rc.TRAP_MODES}
    assert all(rc.modes_claims.select("trap")(sweeps).values()), totals
    assert sweeps["modes"]["eager"]["compiles"] == 0


def test_rerunning_the_sweep_gives_the_same_counts(sweeps):
    again = rc.measure_modes(Run(), modes=("static", "auto", "bucket", "jax_jit"))
    for m, d in again["modes"].items():
        assert d["compiles"] == sweeps["modes"][m]["compiles"], m
        assert [e["compiled"] for e in d["events"]] == [e["compiled"] for e in sweeps["modes"][m]["events"]], m


# ---------------------------------------------------------------------------------------
# Compile latency: cold vs warm (fresh processes, fresh temporary caches)
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def latency():
    """One Run of the compile-latency panel at its defaults: two fresh worker processes
    (``python -m demos.introspection.coldcompile SPEC``), cold then warm cache, measured here."""
    assert rc.compile_latency.validate({})["workload"] == "complex_activation"
    return rc.compile_latency.run({"workload": "complex_activation"})


def test_cold_compile_is_slower_than_warm_cache(latency, artifacts):
    data = latency
    (artifacts / "compile_latency.json").write_text(json.dumps(data, indent=1))
    t = data["backends"]["torch_compile"]
    assert rc.latency_claims["warm_cache"].holds(t["cold"]["first_s"] / t["warm"]["first_s"], data), \
        (t["cold"]["first_s"], t["warm"]["first_s"])
    if "jax_jit" in data["backends"]:
        j = data["backends"]["jax_jit"]
        # the XLA compile step proper: compiling from scratch vs loading from the persistent cache
        key = "XLA compile (or cache load)"
        assert j["cold"]["parts"][key] > j["warm"]["parts"][key], (j["cold"]["parts"], j["warm"]["parts"])
    # Every claim speaks of this measurement; none fails. The first-call claim is a regime (a steady
    # call under STEADY_CALL_S): on a busy 2-core box the steady call can take longer, and then the
    # claim says it does not apply here, with the measured condition, rather than failing.
    verdicts = {v.key: v for v in rc.latency_claims.verdicts(data)}
    assert set(verdicts) == {"first_call", "warm_cache"} | ({"jax_warm_cache"} if "jax_jit" in data["backends"] else set())
    assert all(v.status != FAILS for v in verdicts.values()), [v.line() for v in verdicts.values()]
    assert verdicts["warm_cache"].status == HOLDS, verdicts["warm_cache"].line()
    first = verdicts["first_call"]
    assert (first.status == HOLDS) == (t["steady_s"] < rc.STEADY_CALL_S), first.line()
    if first.status == NOT_HERE:
        assert "steady-state call takes" in first.condition, first.line()
    assert rc.latency_claims(data) == {v.text: True for v in verdicts.values() if v.status == HOLDS}
    for e in data["backends"].values():
        for k in ("cold", "warm"):
            be = e[k]["break_even_calls"]
            expected = rc.break_even(e[k]["compile_s"], e["eager_s"], e["steady_s"])
            assert be == expected or (math.isinf(be) and math.isinf(expected))


def test_cold_compile_worker_is_its_own_entry_point(tmp_path, monkeypatch):
    """`python -m demos.introspection.coldcompile SPEC` prints one JSON line (a bad workload is one
    error line for the parent); without a SPEC it prints its usage."""
    import subprocess
    import sys

    usage = subprocess.run([sys.executable, "-m", "demos.introspection.coldcompile"], capture_output=True, text=True)
    assert usage.returncode == 2 and "usage: python -m demos.introspection.coldcompile SPEC" in usage.stderr
    spec = {"workload": "no_such_workload", "backends": ["torch_compile"], "dtype": "float32", "params": None,
            "budget_s": 0.01}
    with pytest.raises(DemoError, match="compile worker failed: .*no_such_workload"):
        coldcompile.in_fresh_process(spec, str(tmp_path))


def test_inductors_import_is_paid_before_the_first_calls_clock():
    """A fresh process's first torch.compile call imports Inductor (seconds). The cold-compile
    worker splits that call as first − Inductor's time − steady, so an import inside the clock was
    counted as "Dynamo capture + guards" (found by the H100 record of 2026-11-27: 2.3 s against
    0.24 s before). Building the backend imports it, before any clock starts."""
    import subprocess
    import sys

    code = ("import sys, demos\n"
            "from demos.introspection.hooks import InductorBackend\n"
            "before = 'torch._inductor.compile_fx' in sys.modules\n"
            "InductorBackend()\n"
            "print(before, 'torch._inductor.compile_fx' in sys.modules)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.stdout.split() == ["False", "True"], run.stdout + run.stderr[-2000:]


# ---------------------------------------------------------------------------------------
# Live panels: controls drive redraws, bad input is one line, recorded runs draw
# ---------------------------------------------------------------------------------------
def test_live_panel_slider_calls_and_redraws():
    p = rc.recompile_live(show=False)
    p._build()
    p.update()
    n, png = p.renders, p.last_png
    s = p.sessions["static"]
    compiles = s.compiles
    p.controls["S"].value = 100  # a new shape: one call, one recompile
    p.join(300)
    assert p.renders == n + 1 and p.last_png != png
    assert p.last_error is None
    assert s.compiles == compiles + 1 and s.events[-1].compiled and s.events[-1].S == 100
    p.controls["S"].value = 64  # a seen shape: no compile
    p.join(300)
    assert s.compiles == compiles + 1 and not s.events[-1].compiled
    # switching mode starts that mode's own session from zero
    p.controls["mode"].value = "mark_dynamic"
    p.join(300)
    assert p.sessions["mark_dynamic"].compiles == 1 and p.last_error is None


def test_live_panel_sweep_and_reset_give_the_same_counts():
    p = rc.recompile_live(show=False)
    p._build()
    p.controls["mode"].value = "bucket"
    p.join(300)
    lengths = [30, 70, 100, 40, 130]
    first = p.sweep(lengths).compiles
    assert first == _n_buckets(lengths, p.sessions["bucket"].bucket) == 3
    p.reset()
    assert p.sweep(lengths).compiles == first
    assert p.last_error is None and p.renders >= 3


def test_bad_input_is_one_line_and_panel_survives(monkeypatch):
    p = rc.recompile_live(show=False)
    p._build()
    p.update()
    n = p.renders

    def no_jax():
        raise DemoError("JAX is not installed here (pip install 'jax[cpu]==0.10.2'); torch demos still run")

    monkeypatch.setattr("demos.topics.recompilation_session.require_jax", no_jax)  # where Session calls it
    p.controls["mode"].value = "jax_jit"
    p.join(300)
    assert p.last_error and "\n" not in p.last_error and "JAX is not installed" in p.last_error
    monkeypatch.undo()
    p.controls["mode"].value = "eager"
    p.join(300)
    assert p.last_error is None and p.renders == n + 1


def test_live_panel_static_render_draws_a_full_sweep(monkeypatch):
    """Headless (exports), the panel draws the default mode's whole sweep, not one call."""
    monkeypatch.setattr("demos.engine.results.reference", lambda path=None: None)
    p = rc.recompile_live(show=False)
    p.render_static()
    assert p.last_error is None and p.last_png and p.last_conditions is not None
    d = rc.recompile_live.shown()  # what the panel drew: the demo's latest measurement
    assert d["mode"] == "static" and [e["S"] for e in d["events"]] == rc.sweep_lengths()
    assert d["compiles"] == dynamo.recompile_limit() and "stamp" in d


def test_compile_latency_is_a_cold_panel(latency, tmp_path, monkeypatch):
    """The slide opens on the result `make warm` kept, stamped as such, without compiling;
    Run measures again."""
    from demos.deck import demo as demo_mod

    monkeypatch.setattr(demo_mod, "WARMED_DIR", tmp_path)
    assert rc.compile_latency.pacing == "cold" and rc.compile_latency.opens_warmed and rc.compile_latency.button
    assert rc.compile_latency(show=False).initial is None  # nothing kept yet: Run measures
    demo_mod.save_warmed(rc.compile_latency, latency)

    def boom(*_a, **_kw):
        raise DemoError("measured again")

    monkeypatch.setattr(coldcompile, "cold_then_warm", boom)  # what measure_compile_latency runs
    monkeypatch.setattr("demos.engine.results.reference", lambda path=None: None)
    p = rc.compile_latency(show=False)
    assert "by `make warm` at " in p.initial["stamp"]
    p._build()
    p.update()
    assert p.last_error is None and p.renders == 1  # drawn from the kept result
    p.button.click()  # Run
    p.join(300)
    assert p.last_error == "measured again"


def test_declarations_and_no_import_cycle():
    """Part 5's two topics import neither each other nor any other topic: each only its own
    sibling modules (``<topic>_*``: figures, session, panel), and no sibling imports its lesson."""
    import ast
    import importlib
    import inspect

    from demos import topics
    from demos.topics import numerics

    assert topics.part_of("recompilation") == topics.part_of("numerics") == 5
    assert {d.key for d in (rc.compile_latency, rc.recompile_live, rc.compare_modes, numerics.live)} == {
        "recompilation.compile_latency", "recompilation.recompile_live", "recompilation.compare_modes",
        "numerics.live"}
    assert rc.recompile_live.panel.cls is rc.LivePanel and rc.compare_modes.pacing == "warmed"
    siblings = [importlib.import_module(f"demos.topics.recompilation_{s}") for s in ("figures", "session", "panel")]
    for mod in (rc, numerics, *siblings):
        tree = ast.parse(inspect.getsource(mod))
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        lesson = mod.__name__ if mod in (rc, numerics) else rc.__name__
        assert not any(m and m.startswith("demos.topics") and not m.startswith(f"{lesson}_") for m in imported), \
            (mod.__name__, imported)


def _recorded(data, name="NVIDIA Test GPU"):
    return dict(data, recorded=True, stamp=f"{name} · torch 2.13 · 2026-01-01", machine_short="Test GPU")


def test_figures_draw_a_recorded_run_beside(sweeps, latency):
    fig = rc.figure_modes(sweeps, _recorded(sweeps))
    assert len(fig.axes) == 2
    assert any("recorded: Test GPU" in t.get_text() for t in fig.axes[0].get_legend().get_texts())
    fig = rc.figure_compile_latency(latency, _recorded(latency))
    assert any("recorded (Test GPU)" in t.get_text() for t in fig.legends[0].get_texts())
    assert fig.axes[-1].collections  # the recorded break-even calls: grey diamonds on the bars
    static = sweeps["modes"]["static"]
    fig = rc.figure_live(static, _recorded(static))
    assert any("recorded: Test GPU" in t.get_text() for t in fig.axes[0].get_legend().get_texts())
    assert any("Beside it, recorded on" in t.get_text() for t in fig.texts)
    alone = rc.figure_live(_recorded(static))  # a recorded-only export
    assert any("Recorded on" in t.get_text() for t in alone.texts)


def test_verdict_from_this_sessions_measurements(sweeps, latency, monkeypatch):
    html = rc.verdict_text(latency, sweeps)
    assert "compile repaid after" in html and "dynamic=False: 8 compiles" in html
    monkeypatch.setattr("demos.deck.demo.load_warmed", lambda demo, values=None: None)
    monkeypatch.setattr(rc.compile_latency._state, "memo", None)  # neither panel measured nor kept
    monkeypatch.setattr(rc.compare_modes._state, "memo", None)
    assert "Run the compile-latency" in rc.verdict_text()
    # the judgment slide reads what the panels show: the kept result a panel opens on …
    monkeypatch.setattr("demos.deck.demo.load_warmed",
                        lambda demo, values=None: latency if demo is rc.compile_latency else None)
    assert "compile repaid after" in rc.verdict_text() and "dynamic=False" not in rc.verdict_text()
    # … and, once measured, the panel's latest measurement
    monkeypatch.setattr(rc.compare_modes._state, "memo", (("k",), sweeps))
    assert "dynamic=False: 8 compiles" in rc.verdict_text()
    rc.recompile_live.forget()  # a later cell runs (and starts from the declared state) …
    assert "dynamic=False: 8 compiles" in rc.verdict_text()  # … the panel above still shows its sweep


# ---------------------------------------------------------------------------------------
# The notebook
# ---------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_gpu_recompilation_counts_and_latency():
    """The same claims on a GPU: counts do not depend on the device; cold > warm."""
    d = rc.measure_modes(Run(), modes=("static", "auto", "mark_dynamic", "bucket", "eager"))
    assert d["modes"]["static"]["compiles"] == dynamo.recompile_limit()
    assert d["modes"]["static"]["limit_hit_at"] == dynamo.recompile_limit()
    assert d["modes"]["auto"]["compiles"] <= 2
    assert d["modes"]["mark_dynamic"]["compiles"] == 1
    assert d["modes"]["bucket"]["compiles"] == _n_buckets(LENGTHS, d["modes"]["bucket"]["bucket"])
    assert d["modes"]["static"]["summary"]["total_s"] > 2 * d["modes"]["eager"]["summary"]["total_s"]
    assert all(rc.modes_claims(d).values()), rc.modes_claims(d)
    lat = rc.measure_compile_latency(Run(), "complex_activation", backends=("torch_compile",))
    t = lat["backends"]["torch_compile"]
    assert rc.latency_claims["warm_cache"].holds(t["cold"]["first_s"] / t["warm"]["first_s"], lat), t
    assert all(rc.latency_claims(lat).values()), rc.latency_claims(lat)


def test_each_session_steps_through_a_function_with_source_and_code_of_its_own():
    """torch 2.11 (on the GPU machines) wraps a compiled function whose source file it cannot find
    in one shared wrapper frame: the recompile budget dynamic=False's sweep used up then made every
    later mode run eager, 0 compiles. A session's step has findable source and its own code, and a
    name of its own even beside a session of the same mode (Dynamo keeps automatic-dynamic state
    per file, line and name: a Reset must not inherit "this length varies")."""
    import inspect
    import linecache

    sessions = rc.Session("auto"), rc.Session("mark_dynamic"), rc.Session("auto")
    fns = [s._fn._torchdynamo_orig_callable if hasattr(s._fn, "_torchdynamo_orig_callable") else s._fn
           for s in sessions]
    for f in fns:
        assert inspect.getsourcefile(f) and linecache.getline(f.__code__.co_filename, f.__code__.co_firstlineno)
        assert "def step" in "".join(inspect.getsourcelines(f)[0])
    assert len({id(f.__code__) for f in fns}) == len({f.__code__.co_name for f in fns}) == 3
    jax_fns = [rc.Session(m)._fn for m in ("jax_jit", "jax_jit")] if "jax_jit" in rc.available_modes() else []
    if jax_fns:  # a function object of its own (empty jit caches), one name per mode (XLA's disk cache key)
        assert jax_fns[0].__wrapped__ is not jax_fns[1].__wrapped__
        assert jax_fns[0].__name__ == jax_fns[1].__name__ == "step_jax_jit"
