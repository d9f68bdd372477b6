"""Part 5 — numerics: compiled vs eager differ slightly, within the stated tolerance."""
from __future__ import annotations

import numpy as np
import pytest

import demos  # noqa: F401  (environment before torch/JAX)
from demos.topics import numerics as nu
from demos.engine.errors import DemoError
from demos.engine.measurement import Run
from demos.engine.workload_defs import tolerance

# one measurement context for the module: each (workload, dtype) is measured once, as a panel
# toggling back and forth does
RUN = Run()


def test_diff_stats_by_hand():
    a = np.array([1.0, 2.0, 0.0, 100.0])
    b = np.array([1.0, 2.001, 0.0, 100.1])
    s = nu.diff_stats(a, b, "float32", 2**13)  # atol = rtol = 2·2^13·2^-24 = 2^-10
    t = 2.0**-10
    assert s["max_abs"] == pytest.approx(0.1)
    assert s["max_rel"] == pytest.approx(0.1 / 100.1)
    # share of tolerance: 0.001/(t+t*2.001) and 0.1/(t+t*100.1): the larger
    assert s["tol_used"] == pytest.approx(0.1 / (t + t * 100.1))
    assert s["differ_frac"] == 0.5 and s["n"] == 4
    with pytest.raises(DemoError):
        nu.diff_stats(np.zeros(3), np.zeros(4), "float32")


def test_unknown_dtype_is_one_line():
    with pytest.raises(DemoError, match="unknown dtype"):
        nu.measure_numerics(RUN, "chain", "int8")


@pytest.mark.parametrize("dtype", nu.DTYPES)
@pytest.mark.parametrize("workload", nu.WORKLOADS)
def test_fused_and_eager_agree_within_the_stated_tolerance(workload, dtype):
    d = nu.measure_numerics(RUN, workload, dtype)
    assert d["tolerance"] == tolerance(dtype, nu.roundings(workload, d["params"]))  # 2·n·u
    assert d["pairs"], "no compiled/eager pair measured"
    for pair, s in d["pairs"].items():
        assert nu.numerics_claims["tolerance"].holds(s["tol_used"], "cpu"), (pair, s)
    claims = nu.numerics_claims(d)
    assert all(claims.values()), claims


def test_float32_differences_are_tiny():
    tiny = nu.numerics_claims["float32"]  # the slide's bound, 2·6·u of the output's scale, for complex_activation
    d = nu.measure_numerics(RUN, "complex_activation", "float32")
    for pair, s in d["pairs"].items():
        assert tiny.holds(s["max_abs"] / d["scale"], "cpu"), (pair, s)
    # mlp_block sums D + H terms: its bound is 2·(ops + D + H)·u of its scale
    d = nu.measure_numerics(RUN, "mlp_block", "float32")
    bound = 2 * d["roundings"] * 2.0**-24
    for pair, s in d["pairs"].items():
        assert s["max_abs"] / d["scale"] < bound, (pair, s, bound)


def test_bf16_difference_is_visible_and_compiled_is_closer_to_float64():
    """The slide's example: complex_activation in bf16. Eager rounds each of 5 intermediates to
    bf16; the fused kernel computes in float32 and rounds once — so outputs visibly differ and the
    compiled one is nearer the float64 answer."""
    d = nu.measure_numerics(RUN, "complex_activation", "bfloat16")
    s = d["pairs"]["torch_compile|torch_eager"]
    assert s["max_abs"] >= 2 ** -6  # at least one bf16 step at |x|~1
    assert s["differ_frac"] > 0.01
    err = {b: v["max_abs"] for b, v in d["vs_float64"].items()}
    assert err["torch_compile"] < err["torch_eager"], err
    claims = nu.live.check_claims(d)
    assert len(claims) == 3 and all(claims.values()), claims


def test_a_reordered_float32_sum_differs_within_the_rounding_bound():
    """Reassociation alone: the same float32 terms summed in another order give another sum, and
    the two differ by at most 2·n·u·Σ|terms| (conditions.rounding_bound). The chain, a long
    reduction, carries it, and its claim holds."""
    import torch
    from demos.deck.claims import HOLDS
    from demos.deck.conditions import rounding_bound

    x = torch.randn(2**20, generator=torch.Generator().manual_seed(0))
    r = nu.reordered_sum(x)
    assert r["n"] == 2**20 and r["in_order"] != r["permuted"] and r["diff"] > 0
    assert r["diff"] <= rounding_bound("float32", r["n"]) * float(x.double().abs().sum()) == pytest.approx(r["bound"])
    d = nu.measure_numerics(RUN, "chain", "float32")
    assert d["reordered"]["n"] == d["params"]["N"]
    assert nu.numerics_claims["reordered"].verdict(d).status == HOLDS
    assert "reordered" not in nu.measure_numerics(RUN, "complex_activation", "float32")  # no sum there


def test_claims_fail_when_compiled_strays_beyond_the_tolerance():
    import copy

    d = copy.deepcopy(nu.measure_numerics(RUN, "complex_activation", "bfloat16"))
    d["pairs"]["torch_compile|torch_eager"]["tol_used"] = 1.5
    d["vs_float64"]["torch_compile"]["max_abs"] = 1.0
    assert sum(nu.numerics_claims(d).values()) == 1  # only "visibly differ" still holds


def test_numerics_panel_bad_input_one_line(monkeypatch):
    p = nu.live(show=False)
    p._build()
    p.update()
    n = p.renders

    def oom(*a, **k):
        raise DemoError("out of memory at N=268,435,456 (float32): needs ~30 GiB — pick a smaller size")

    monkeypatch.setattr(nu, "prepare", oom)
    p.controls["workload"].value = "two_matmuls"
    p.join(300)
    assert p.last_error and "\n" not in p.last_error and "out of memory" in p.last_error
    monkeypatch.undo()
    p.controls["workload"].value = "chain"
    p.join(300)
    assert p.last_error is None and p.renders == n + 1


def test_a_run_keeps_what_it_measured_and_a_fresh_run_measures_again(monkeypatch):
    d = nu.measure_numerics(RUN, "chain", "float32")

    def gone(*a, **k):
        raise DemoError("measured again")

    monkeypatch.setattr(nu, "prepare", gone)
    assert nu.measure_numerics(RUN, "chain", "float32") == d  # the same Run: its cache answers
    with pytest.raises(DemoError, match="measured again"):
        nu.measure_numerics(Run(), "chain", "float32")  # a fresh Run starts from nothing


def test_figure_draws_a_reference_beside_and_the_numbers_on_its_bars():
    d = nu.measure_numerics(RUN, "complex_activation", "float32")
    ref = dict(d, recorded=True, stamp="NVIDIA H200 · 2026-11-01", machine_short="H200")
    fig = nu.figure_numerics(d, ref)  # one figure, no table under it: the slide stays within 720 px
    assert len(fig.axes) == 2
    assert fig.axes[0].get_legend().get_title().get_text() == "H200"
    assert any("max |Δ|" in t.get_text() or "identical" in t.get_text() for t in fig.axes[0].texts)


def test_the_demo_measures_what_its_controls_say():
    """Control values reach the measurement; a scalar output's values sit under "scalars"
    (the framework's data["values"] holds the control values)."""
    d = nu.live.run({"workload": "chain", "dtype": "float32"})
    assert d["workload"] == "chain" and d["dtype"] == "float32"
    assert d["values"] == {"dtype": "float32", "workload": "chain"}
    assert "chain" in d["extra"] and "float32" in d["extra"]


@pytest.mark.gpu
def test_gpu_fused_and_eager_agree_within_tolerance():
    for w in nu.WORKLOADS:
        for dt in nu.DTYPES:
            d = nu.measure_numerics(Run(), w, dt)
            for pair, s in d["pairs"].items():
                assert s["tol_used"] <= 1.0, (w, dt, pair, s)
    d = nu.measure_numerics(Run(), "complex_activation", "bfloat16")
    err = {b: v["max_abs"] for b, v in d["vs_float64"].items()}
    assert d["pairs"]["torch_compile|torch_eager"]["max_abs"] > 0
    assert err["torch_compile"] <= err["torch_eager"], err
    assert all(nu.numerics_claims(d).values()), nu.numerics_claims(d)  # the slide says "closer": strictly
