"""Every claim says when it holds: a law (counts, structure, bytes: everywhere) or a regime (a
timing or an accuracy, with the condition its demo measures, stated on the slide). Fast: nothing
is measured but one lever GEMM."""
from __future__ import annotations

import inspect
import re
import types

import pytest

import demos  # noqa: F401  (environment before torch/JAX)
from demos import topics
from demos.deck.claims import HOLDS, FAILS, LAW, NOT_HERE, REGIME, Claim, Claims, regime
from demos.deck.conditions import over_cache, rounding_bound
from demos.deck.verified import EXPECTED, expected_on_gpu, unmeasured_on_gpu

DEMOS = topics.load()
BY_KEY = {d.key: d for d in DEMOS}
CLAIMS = [(d, c) for d in DEMOS for c in d.claims]

# What a timing or an accuracy claim reads: clocks, speedups, distances, agreement
TIMING = re.compile(r"median_s|p10_s|p90_s|first_s|steady_s|compile_s|total_s|speedup|(?<!flops)_ratio|seconds\(|"
                    r"\bparts\b|distance|max_abs|max_rel|tol_used|\[\"(?:torch_)?matches|agree\(|\[\"agree|"
                    r"_trap|median\(")


def _source(fn, depth: int = 2, seen=None) -> str:
    """The source of ``fn`` and of the module-level functions it calls (two levels down)."""
    seen = set() if seen is None else seen
    if not isinstance(fn, types.FunctionType) or fn in seen:
        return ""
    seen.add(fn)
    try:
        text = inspect.getsource(fn)
    except (OSError, TypeError):
        return ""
    if depth:
        for name in fn.__code__.co_names + tuple(c.co_name for c in fn.__code__.co_consts if hasattr(c, "co_name")):
            text += _source(fn.__globals__.get(name), depth - 1, seen)
    return text


@pytest.mark.parametrize("demo,claim", CLAIMS, ids=[f"{d.key}.{c.key}" for d, c in CLAIMS])
def test_a_timing_or_accuracy_claim_is_a_regime_with_a_condition(demo, claim):
    reads_time = bool(TIMING.search(_source(claim.value)))
    if reads_time:
        assert claim.law_or_regime == REGIME and claim.when is not None, (
            f"{demo.key}.{claim.key} reads a timing or an accuracy: declare it a regime with the condition "
            "its demo measures (**regime(when=...))")
    assert claim.law_or_regime in (LAW, REGIME)


def test_a_regime_without_a_condition_is_refused_where_it_is_declared():
    with pytest.raises(ValueError, match="needs when="):
        Claim("fast", lambda d: d["x"], ">", 1.0, key="x", law_or_regime=REGIME)
    with pytest.raises(ValueError, match="condition"):
        Claim("a count", lambda d: d["n"], "==", 1, key="n", when=lambda d: (True, ""))


def test_the_timing_detector_can_fail():
    """The structure test above would catch a timing claim declared as a law."""
    c = Claim("compiled is faster", lambda d: d["rows"]["torch_compile"]["median_s"] < 1, key="t")
    assert TIMING.search(_source(c.value)) and c.law_or_regime == LAW


def test_a_regime_outside_its_condition_does_not_apply_and_says_why():
    c = Claim("compile pays over {threshold:g}×", lambda d: d["speedup"], ">", 1.1, key="pays",
              **regime(when=over_cache(lambda d: d["N"] * 4)))
    levels = {"device": "CPU", "levels": {"L2": 2**20, "L3": 32 * 2**20}}
    inside = c.verdict({"N": 2**20, "speedup": 0.8, "cache_levels": levels, "device": "cpu"})
    assert inside.status == NOT_HERE and "4 MiB per operand, inside this CPU's 32 MiB L3" in inside.condition
    assert c.evaluate({"N": 2**20, "speedup": 0.8, "cache_levels": levels}) is None  # no verdict of holding
    over = c.verdict({"N": 2**24, "speedup": 0.8, "cache_levels": levels, "device": "cpu"})
    assert over.status == FAILS and "64 MiB per operand, over this CPU's 32 MiB L3" in over.condition
    assert c.verdict({"N": 2**24, "speedup": 7.4, "cache_levels": levels}).status == HOLDS
    # a record made before the condition was measured: it does not apply, and says so
    assert "not measured" in c.verdict({"N": 2**24, "speedup": 7.4}).condition
    assert over.line().startswith("✗ fails here: compile pays over 1.1×") and "over this CPU's" in over.line()


def test_the_lever_applies_only_where_bfloat16_has_matrix_units():
    from demos.topics import precision as pr

    lever = pr.lever_claims["lever"]
    base = {"device": "cpu", "params": {"B": 8, "S": 128, "D": 256, "H": 1024},
            "rows": {"float32": {"torch_compile": {"median_s": 4.2e-3}},
                     "bfloat16": {"torch_eager": {"median_s": 7.2e-3, "distance": 1e-2}}}}
    # the Intel VM of the issue: bfloat16 eager 7.2 ms, float32 compiled 4.2 ms; dot products, no AMX
    v = lever.verdict({**base, "bf16_matrix_units": False, "bf16_gemm_speedup": 2.0})
    assert v.status == NOT_HERE and v.condition.startswith("no bfloat16 matrix units here")
    assert "its bfloat16 GEMM ran 2× float32's" in v.condition
    # the device fact decides, not the ratio: a busy box's 11× does not make a claim apply
    assert lever.verdict({**base, "bf16_matrix_units": False, "bf16_gemm_speedup": 11.3}).status == NOT_HERE
    # tensor cores (or AMX): the claim applies, and fails when the measurement says so
    assert lever.verdict({**base, "bf16_matrix_units": True, "bf16_gemm_speedup": 12.0}).status == FAILS
    faster = {**base, "rows": {**base["rows"], "bfloat16": {"torch_eager": {"median_s": 1e-3, "distance": 1e-2}}}}
    assert lever.verdict({**faster, "bf16_matrix_units": True}).status == HOLDS
    # units that cannot be read (macOS), or a record made before they were: it does not apply
    assert "could not be read" in lever.verdict({**faster, "bf16_matrix_units": None}).condition
    assert lever.verdict(faster).status == NOT_HERE and "not measured" in lever.verdict(faster).condition


def test_the_lever_measures_which_case_this_machine_is():
    from demos.engine.measurement import Run
    from demos.engine.timing import sync_for
    from demos.topics import precision as pr

    x = pr.gemm_speedup(Run(), {"B": 2, "S": 64, "D": 128, "H": 256}, "cpu", sync_for("torch_eager", "cpu"))
    assert x > 0 and x == x


def test_tolerances_come_from_the_unit_roundoff_and_the_length():
    from demos.engine.workload_defs import tolerance
    from demos.topics import collectives as co

    assert tolerance("float32", 6)["rtol"] == pytest.approx(2 * 6 * 2.0**-24)
    assert tolerance("bfloat16")["atol"] == pytest.approx(2 * 8 * 2.0**-8)
    assert co.traced.claims["agree"].threshold == pytest.approx(rounding_bound("float32", co.SIZES["hidden"]))
    assert rounding_bound("float32", 128, 4) == pytest.approx(2 * 128 * 4 * 2.0**-24)


def test_every_regime_states_its_condition_in_the_figure_footer():
    """The slide shows each timing claim's verdict beside its measured condition (Demo.draw)."""
    from demos.topics import roofline as rf

    payoff = BY_KEY["roofline.payoff"]
    rows = {b: {"median_s": t, "p10_s": t, "p90_s": t, "n": 5}
            for b, t in (("torch_eager", 0.18), ("torch_compile", 0.012), ("jax_jit", 0.02))}
    data = {"dtype": "float32", "device": "cpu", "sizes": rf.payoff_defaults("cpu"), "backends": list(rows),
            "cache_levels": {"device": "CPU", "levels": {"L3": 32 * 2**20}}, "stamp": "here",
            "workloads": {w: {"params": rf.get_workload(w).resolve(rf.workload_params(w, rf.payoff_defaults("cpu"))),
                              "rows": rows} for w in rf.PAYOFF_WORKLOADS}}
    data["workloads"]["chain"]["params"] = {"N": 2**24}
    seen = {}
    original = payoff.figure

    def spy(d, ref):
        seen.update(d)
        return original(d, ref)

    object.__setattr__(payoff, "figure", spy)
    try:
        payoff.draw(data, None)
    finally:
        object.__setattr__(payoff, "figure", original)
    lines = seen["verdicts"]
    assert any(line.startswith("✓ holds here: chain") and "128 MiB read and written by each eager op, over this CPU's 32 MiB L3" in line
               for line in lines), lines


def test_gpu_claims_no_record_measured_read_as_expectations():
    lever = BY_KEY["precision.lever"]
    assert "lever" in [c.key for c in unmeasured_on_gpu(lever)]  # no committed record holds it
    data = {"device": "cpu", "params": {"D": 256, "H": 1024}, "bf16_gemm_speedup": 2.0, "bf16_matrix_units": False,
            "rows": {"bfloat16": {"torch_eager": {"distance": 0.01}}}}
    shown = [v for v in lever.verdicts(data) if v.key == "lever"]  # the footer's line above it
    line = expected_on_gpu(lever, data, shown)
    assert line and EXPECTED in line[0] and line[0].endswith("; and the claim above")
    assert "distance from float64" in line[0]  # the two not stated above, in their own words
    replay = BY_KEY["graphs.replay"]
    line = expected_on_gpu(replay, {"device": "cpu", "rows": {}})
    assert line == [f"On a GPU ({EXPECTED}): reduce-overhead replays the whole step with 1 graph launch"]
    # a claim the H100 record measured is not an expectation
    latency = BY_KEY["fusion.latency"]
    assert "speedup" not in [c.key for c in unmeasured_on_gpu(latency)]
    assert {"fewer", "pays"} <= {c.key for c in unmeasured_on_gpu(replay)}


def test_laws_and_regimes_are_both_declared():
    kinds = {c.law_or_regime for _, c in CLAIMS}
    assert kinds == {LAW, REGIME}
    assert isinstance(BY_KEY["roofline.payoff"].claims, Claims)


def test_readme_table_of_what_each_record_verified_is_generated_from_the_records():
    from demos.deck import verified

    assert verified.readme_block() == verified.table(DEMOS), "run `python -m demos records --readme`"
    # the table reads the records: every committed H100 record is a row, and none of their claims fails
    rows = [line for line in verified.table(DEMOS).splitlines() if line.startswith("| `")]
    assert len(rows) == len(verified._records()) >= 3
    assert all(line.split("|")[5].strip() == "0" for line in rows), rows


def test_recorded_data_meets_the_gpu_thresholds():
    """A record's data is judged as its own device kind (its machine's), not as this CPU."""
    ops = BY_KEY["model.ops"]
    data = ops.reference(None, seed=False)
    assert data is not None and data["device"] == "cuda"
    assert all(v.status == HOLDS for v in ops.claims.verdicts(data))
