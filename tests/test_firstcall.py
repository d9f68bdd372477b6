"""Part 1, the first call (demos.topics.firstcall): first, second and steady-state calls in a new
process. Every panel redrawing on every control is tests/test_demos.py's."""
from __future__ import annotations

import copy

import pytest

from demos.deck.claims import FAILS, HOLDS
from demos.engine.devices import torch_device
from demos.engine.measurement import Run
from demos.topics import firstcall

cpu_only = pytest.mark.skipif(torch_device() != "cpu", reason="CPU form of the claim (GPU form: -m gpu)")


def _first_dearer(d: dict) -> bool:
    return all(d[f]["first_s"] > d[f]["steady_s"] for f in ("sin", "cos", "compiled"))


def _from_the_declared_state() -> dict:
    """As the slide measures: the thread policy chosen anew from the load now (forget()), so the
    new process runs on one thread when the other core is busy (the other test worker)."""
    firstcall.costs.forget()
    return firstcall.costs.run({"N": 2**10})


@cpu_only
@pytest.mark.timing  # first vs steady calls: a busy spell of the shared box gets one more measurement
def test_claim_first_calls_cost_many_steady_calls_in_a_new_process():
    # Measured outside the declared state, the child took every core even beside the other worker:
    # CI saw a 1024-element op's steady calls all at 8 ms (p10 to p90), and the compiled function's
    # first call under 1000 steady ones, twice. From the declared state, and once more when a
    # stall tips it; a first call no dearer than the steady one fails twice.
    d = _from_the_declared_state()
    if not (_first_dearer(d) and all(firstcall.costs_claims(d).values())):
        d = _from_the_declared_state()
    assert d["device"] == "cpu" and d["torch_preloaded"] is False  # the child imported torch itself
    for form in ("sin", "cos", "compiled"):
        f = d[form]
        assert f["steady_p10"] <= f["steady_s"] <= f["steady_p90"] and f["first_s"] > f["steady_s"]
    assert d["compiled"]["inductor_s"] > 0  # the first compiled call went through Inductor
    # Each claim is a regime (a short steady call): on a busy 2-core box a steady call can take
    # longer, and the claim then says it does not apply here, with its measured condition; none fails.
    verdicts = {v.key: v for v in firstcall.costs_claims.verdicts(d)}
    seconds = {f: {k: d[f][k] for k in ("first_s", "steady_s", "steady_p90")} for f in ("sin", "cos", "compiled")}
    why = ([v.line() for v in verdicts.values()], seconds, d["threads"])
    assert set(verdicts) == {"first_op", "second_op", "compiled"}, why
    assert all(v.status != FAILS for v in verdicts.values()), why
    assert (verdicts["first_op"].status == HOLDS) == (d["sin"]["steady_s"] < firstcall.SHORT_OP_S), why
    if verdicts["first_op"].status == HOLDS:
        assert firstcall.costs.ask.answer(d)[0] in (2, 3)  # over 10×: "10–100×" or "over 100×"
    flat = copy.deepcopy(d)
    flat["sin"]["first_s"] = flat["sin"]["steady_s"] * 2  # a first call no dearer than the rest fails
    assert firstcall.costs_claims["first_op"].evaluate(flat)[1] is False


def test_the_figure_names_the_cuda_context_on_a_gpu_measurement():
    calls = {"first_s": 2e-3, "second_s": 3e-5, "steady_s": 1e-5, "steady_p10": 9e-6, "steady_p90": 1.2e-5}
    d = {"device": "cuda", "threads": 16, "import_s": 2.0, "context_s": 0.4, "input_s": 1e-3, "N": 4096,
         "dtype": "float32", "sin": dict(calls), "cos": dict(calls), "compiled": dict(calls, inductor_s=1.5),
         "extra": "a GPU-shaped measurement written by hand"}
    fig = firstcall.figure_costs(d)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels[:2] == ["import torch", "CUDA context"] and labels.count("2nd · steady") == 3
    assert "200×" in fig.axes[0].get_title()


@pytest.mark.gpu
def test_gpu_first_calls_cost_many_steady_calls():
    d = firstcall.measure_costs(Run())
    assert d["device"] == "cuda" and d["context_s"] > 0
    claims = firstcall.costs_claims(d)
    assert all(claims.values()), claims
