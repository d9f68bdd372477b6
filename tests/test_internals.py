"""Part 4 — inside the compilers: the slides' claims (CPU and GPU forms), the demos' own behaviour, record.

The log parsers are tests/test_dynamo.py, the code excerpts and code drawing tests/test_codegen.py;
drawing, recording and moving every control of each demo is tests/test_demos.py."""
from __future__ import annotations

import numpy as np
import pytest

import demos  # noqa: F401  (environment before torch/JAX)
from demos.engine.errors import DemoError
from demos.engine.measurement import Run
from demos.engine.results import Record
from demos.introspection import dynamo
from demos.engine.convert import to_jax
from demos.topics import internals
from demos.topics import internals_examples as examples

# the tests that only read a deterministic measurement (stages, explanations) share one cache, as
# a panel's measurements do; a test that needs its own measurement passes a fresh Run()
SHARED = Run()


# =======================================================================================
# Claims the slides make (CPU path)
# =======================================================================================
def test_claim_branch_breaks_dynamo_with_the_if_line_and_jax_jit_refuses():
    d = internals.measure_breaks(Run(), "branch")
    assert all(internals.breaks_claims(d).values()), internals.breaks_claims(d)
    t = d["torch"]
    assert t["breaks"] >= 1 and t["graphs"] >= 2
    r = t["reasons"][0]
    assert "data-dependent branch" in r["plain"]
    assert r["source"].startswith("if y.sum() > 0") and r["line"] is not None
    assert d["torch_matches"]
    j = d["jax"]
    assert not j["ok"] and j["error_type"] in ("TracerBoolConversionError", "ConcretizationTypeError")
    assert "\n" not in j["error"] and j["error"]


def test_claim_same_counts_as_torch_dynamo_explain():
    import torch

    d = internals.measure_breaks(SHARED, "branch")
    x = internals.inputs_1d(d["N"], "float32")
    ex = torch._dynamo.explain(examples.branch_torch)(x)  # resets Dynamo: fine inside a test
    assert (ex.graph_count, ex.graph_break_count) == (d["torch"]["graphs"], d["torch"]["breaks"])


def test_claim_print_breaks_dynamo_and_runs_once_at_trace_time_under_jit():
    d = internals.measure_breaks(Run(), "print")
    assert all(internals.breaks_claims(d).values()), internals.breaks_claims(d)
    assert d["torch"]["breaks"] >= 1 and "print" in d["torch"]["reasons"][0]["plain"]
    assert d["torch"]["reasons"][0]["source"].startswith("print(")
    j = d["jax"]
    assert j["ok"] and len(j["printed"]) == 1, j  # three calls, one trace
    assert "Tracer" in j["printed"][0] and j["matches"]


@pytest.mark.parametrize("variant", ["where", "cond"])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_claim_fixed_versions_are_one_graph_and_run_under_jit_with_matching_outputs(variant, sign):
    v = internals.VARIANTS[variant]
    examples._bind_frameworks(need_jax=True)
    x = internals.inputs_1d(4096, "float32", sign=sign)
    eager_branch = examples.branch_torch(x).numpy()  # the broken original, eager: the truth
    ex = dynamo.explain(v["torch"], x)
    assert (ex["graphs"], ex["breaks"]) == (1, 0)
    np.testing.assert_allclose(ex["output"].numpy(), eager_branch, rtol=2e-3, atol=2e-3)
    ja = dynamo.jit_attempt(v["jax"], to_jax(x))
    assert ja["ok"], ja["error"]
    np.testing.assert_allclose(np.asarray(ja["output"]), eager_branch, rtol=2e-3, atol=2e-3)


def test_the_two_inputs_take_different_branches():
    import torch

    examples._bind_frameworks()
    x = internals.inputs_1d(4096, "float32")
    s = (torch.sin(x) * 2).sum().item(), (torch.sin(-x) * 2).sum().item()
    assert s[0] * s[1] < 0, s


def test_claim_complex_activation_is_one_fused_kernel_and_one_hlo_fusion():
    d = internals.measure_pipeline(SHARED, "complex_activation", "small")
    t, j = d["torch"], d["jax"]
    assert "error" not in t and "error" not in j, (t.get("error"), j.get("error"))
    assert all(internals.pipeline_claims(d).values()), internals.pipeline_claims(d)
    assert t["counts"]["graphs"] == 1 and t["counts"]["kernels"] == 1 and t["counts"]["library calls"] == 0
    if d["device"] == "cpu":
        assert t["kernel_lang"] == "C++/OpenMP" and t["kernels"][0].startswith("cpp_fused_")
        assert set(["sin", "cos", "mul", "relu"]) <= set(t["kernels"][0].split("_"))
    assert j["counts"]["HLO fusions"] >= 1
    code = "\n".join(t["stages"]["generated code"])
    assert code.splitlines()[0].startswith("# kernel 1/1: " + t["kernels"][0])
    assert "# wrapper: call(args)" in code
    assert any("sin" in ln for ln in t["stages"]["FX graph"])
    assert any("sin" in ln for ln in j["stages"]["jaxpr"]) and any("fusion(" in ln for ln in j["stages"]["optimized HLO"])
    assert any("stablehlo.sine" in ln for ln in j["stages"]["StableHLO"])


def test_claim_matmul_workload_keeps_library_calls_and_fuses_the_rest():
    d = internals.measure_pipeline(SHARED, "mlp_block", "small")
    assert all(internals.pipeline_claims(d).values()), internals.pipeline_claims(d)
    c = d["torch"]["counts"]
    assert c["library calls"] == 2 and 1 <= c["kernels"] <= 4, c
    assert d["jax"]["counts"]["HLO fusions"] >= 2


@pytest.mark.parametrize("change, words", [
    ("dtype → float64", "dtype mismatch"),
    ("dtype → bfloat16", "dtype mismatch"),
    ("shape → N/2", "size mismatch"),
    ("requires_grad → True", "requires_grad"),
    ("non-contiguous (stride 2)", "stride mismatch"),
])
def test_claim_a_changed_input_recompiles_and_names_its_guard(change, words):
    d = internals.measure_guards(Run(), change)
    assert internals.CHANGE_WORDS[change] == words
    assert all(internals.guards_claims(d).values()), internals.guards_claims(d)
    assert d["recompiled"] and d["compiles"] == 2
    assert words in d["failed_guard"] and "'x'" in d["failed_guard"], d["failed_guard"]
    assert [c["compiled"] for c in d["calls"]] == [True, False, True]


def test_claim_same_properties_do_not_recompile_and_the_hit_is_cheaper():
    d = internals.measure_guards(Run(), CHANGE_NOTHING := internals.CHANGES[0])
    assert CHANGE_NOTHING.startswith("nothing")
    assert not d["recompiled"] and d["compiles"] == 1 and d["failed_guard"] == ""
    assert all(internals.guards_claims(d).values()), internals.guards_claims(d)
    first, hit, _ = (c["seconds"] for c in d["calls"])
    assert hit < first  # a guard check + call vs a capture (≥ 10x apart in practice)


def test_claim_guards_in_plain_words_name_dtype_device_and_shape():
    d = internals.measure_guards(Run(), "dtype → float64")
    N = d["N"]
    dev = "cpu" if d["device"] == "cpu" else "cuda"
    assert any(g.startswith(f"x: float32 on {dev}") and f"shape [{N}]" in g for g in d["guards_plain"])
    assert any(g.startswith(f"y: float32 on {dev}") for g in d["guards_plain"])
    assert d["guard_count"] >= 10


def test_capture_cost_rows_are_measured_with_graph_counts():
    d = internals.measure_capture_cost(Run(), 2**14, budget_s=0.02)
    rows = {r["key"]: r for r in d["rows"]}
    assert set(rows) == {k for k, *_ in internals.COST_ROWS}
    for r in rows.values():
        assert "error" not in r, r
        assert 0 < r["p10_s"] <= r["median_s"] <= r["p90_s"] and r["first_s"] > 0
        assert r["matches_eager"], r["label"]
    assert rows["compile_branch"]["graphs"] == 2
    assert rows["compile_where"]["graphs"] == rows["compile_cond"]["graphs"] == 1
    assert rows["eager"]["graphs"] == 0
    assert all(internals.cost_claims(d).values()), internals.cost_claims(d)


def test_claims_fail_when_the_measurement_contradicts_the_slide():
    """The claims read the data: a measurement that says otherwise makes them false."""
    import copy

    d = copy.deepcopy(internals.measure_breaks(SHARED, "branch"))
    d["torch"].update(graphs=1, breaks=0)
    d["jax"].update(ok=True, error_type="")
    assert not any(v for k, v in internals.breaks_claims(d).items() if "matches eager" not in k)
    g = copy.deepcopy(internals.measure_guards(Run(), "shape → N/2"))
    g["failed_guard"], g["calls"][1]["compiled"] = "tensor 'x' dtype mismatch", True
    c = internals.guards_claims(g)
    assert not c["shape → N/2: recompiles, and the failed guard says 'size mismatch'"]
    assert not c["call 1 captures; call 2, same kind of inputs, is a cache hit"]
    p = copy.deepcopy(internals.measure_pipeline(SHARED, "complex_activation", "small"))
    p["torch"]["counts"]["kernels"], p["jax"]["counts"]["HLO fusions"] = 2, 3
    assert sum(internals.pipeline_claims(p).values()) == 1  # only "1 graph" still holds


def test_rerunning_gives_the_same_answers():
    a = internals.measure_breaks(Run(), "branch")
    b = internals.measure_breaks(Run(), "branch")
    assert (a["torch"]["graphs"], a["torch"]["breaks"], a["jax"]["error_type"]) == \
        (b["torch"]["graphs"], b["torch"]["breaks"], b["jax"]["error_type"])
    g1, g2 = internals.measure_guards(Run(), "shape → N/2"), internals.measure_guards(Run(), "shape → N/2")
    assert (g1["failed_guard"], g1["compiles"]) == (g2["failed_guard"], g2["compiles"])


def test_captures_do_not_reset_other_compiled_functions():
    import torch

    calls = []

    def backend(gm, _):
        calls.append(1)
        return gm.forward

    f = torch.compile(lambda t: torch.sin(t) + 1, backend=backend)
    x = torch.randn(64)
    f(x)
    internals.measure_breaks(Run(), "print")
    internals.measure_guards(Run(), "dtype → float64")
    f(x)
    assert len(calls) == 1  # still cached: nothing called torch._dynamo.reset()


# =======================================================================================
# Demos: the stage buttons only redraw; bad input is one line; recorded runs are drawn
# (tests/test_demos.py draws, records and moves every control of every demo)
# =======================================================================================
DEMOS = (internals.pipeline, internals.guards, internals.graph_breaks, internals.capture_cost)


def _texts(fig) -> list[str]:
    texts = [t.get_text() for t in fig.texts] + [t.get_text() for ax in fig.axes for t in ax.texts]
    return texts + [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]


def test_pipeline_stage_buttons_redraw_without_measuring(monkeypatch):
    assert [c.name for c in internals.pipeline.control_list() if c.view] == ["torch_stage", "jax_stage"]
    p = internals.pipeline(show=False, size="small")
    p._build()
    p.update()
    assert p.last_error is None, p.last_error

    def boom(*_a, **_kw):
        raise AssertionError("a stage button measured again")

    monkeypatch.setattr("demos.deck.demo.DemoRun", boom)  # a measurement starts by making its DemoRun
    for name, value in (("torch_stage", "FX graph"), ("jax_stage", "jaxpr"), ("torch_stage", "guards"),
                        ("jax_stage", "StableHLO")):
        before, png = p.renders, p.last_png
        p.controls[name].value = value  # (its time: `python -m demos ui-bench`, uibench.VIEW_S)
        p.join(300)
        assert p.last_error is None, p.last_error
        assert p.renders == before + 1 and p.last_png != png and p.last_values[name] == value


def test_pipeline_draws_the_chosen_stages():
    data = dict(internals.measure_pipeline(SHARED, "complex_activation", "small"))
    data["values"] = {"torch_stage": "guards", "jax_stage": "jaxpr"}
    texts = _texts(internals.figure_pipeline(data, None))
    assert "torch.compile · guards" in texts and "jax.jit · jaxpr" in texts
    data["values"] = {"torch_stage": "bytecode"}
    with pytest.raises(DemoError, match="unknown stage 'bytecode'"):
        internals.figure_pipeline(data, None)


def test_a_failing_side_is_one_line_and_the_other_side_still_draws(monkeypatch):
    from demos.introspection import codegen

    monkeypatch.setattr(codegen, "workload_xla_code", lambda *a, **k: (_ for _ in ()).throw(
        RuntimeError("XlaRuntimeError: INTERNAL: no compiler for this platform\nlong trace")))
    d = internals.measure_pipeline(Run(), "complex_activation", "small")
    assert "stages" in d["torch"] and "\n" not in d["jax"]["error"] and "no compiler" in d["jax"]["error"]
    assert any(t.startswith("⚠") and "no compiler" in t for t in _texts(internals.figure_pipeline(d, None)))


def test_without_jax_the_torch_side_still_draws_and_jax_says_so_in_one_line(monkeypatch):
    def no_jax():
        raise DemoError("JAX is not installed here (pip install 'jax[cpu]==0.10.2'); torch demos still run")

    monkeypatch.setattr(internals, "require_jax", no_jax)
    for k in ("jax", "jnp"):
        if k in internals.__dict__:
            monkeypatch.delitem(internals.__dict__, k)
    d = internals.measure_breaks(Run(), "cond")
    assert d["torch"]["graphs"] == 1 and d["torch_matches"]
    assert d["jax"]["error_type"] == "missing" and d["jax"]["error"].startswith("JAX is not installed")
    assert "graphs: 1 · graph breaks: 0" in _texts(internals.figure_breaks(d, None))


def test_out_of_range_size_is_refused_in_one_line():
    with pytest.raises(DemoError, match="outside"):
        internals.measure_capture_cost(Run(), 2**40)
    with pytest.raises(DemoError, match="unknown change"):
        internals.measure_guards(Run(), "device → moon")
    with pytest.raises(DemoError, match="unknown function 'branchy'"):
        internals.measure_breaks(Run(), "branchy")


def _recorded_values(demo) -> dict:
    """The values `make record --quick` measures (its reference matches them)."""
    return {**demo.defaults(), **demo.recorded_values(quick=True)}


@pytest.fixture(scope="module")
def cpu_record(tmp_path_factory):
    rec = Record.new(label="test record (CPU)")
    for demo in DEMOS:
        demo.record_into(rec, quick=True)
    path = tmp_path_factory.mktemp("rec") / "cpu-record.json"
    rec.save(path)
    return path


def test_record_stores_every_demo(cpu_record):
    sec = Record.load(cpu_record).sections["internals"]
    assert set(sec) == {"pipeline", "guards", "graph_breaks", "capture_cost"}
    pipe = sec["pipeline"]
    assert pipe["workload"] == "complex_activation" and pipe["torch"]["counts"]["kernels"] == 1
    assert all(len(v) <= 60 for side in ("torch", "jax") for v in pipe[side]["stages"].values())
    assert sec["guards"]["recompiled"] and sec["graph_breaks"]["torch"]["breaks"] == 1
    assert len(sec["capture_cost"]["rows"]) == len(internals.COST_ROWS)


def test_live_figures_show_the_reference_beside(cpu_record):
    loaded = Record.load(cpu_record)
    for demo in DEMOS:
        values = _recorded_values(demo)
        ref = demo.reference(values, record=loaded)
        assert ref is not None and ref["recorded"], demo.key
        fig = demo.figure(demo.run(values), ref)
        texts = _texts(fig)
        assert any("recorded" in t for t in texts), (demo.key, texts)
        assert any("Beside it, recorded on" in t for t in texts), demo.key


# =======================================================================================
# GPU forms of the claims (run with `pytest -m gpu` on a CUDA machine)
# =======================================================================================
@pytest.mark.gpu
def test_gpu_complex_activation_is_one_triton_kernel_and_one_fusion():
    d = internals.measure_pipeline(Run(), "complex_activation")
    t = d["torch"]
    assert t["kernel_lang"] == "Triton" and t["counts"]["kernels"] == 1, t.get("kernels")
    assert t["kernels"][0].startswith("triton_")
    assert d["jax"]["counts"]["HLO fusions"] >= 1
    assert any("tl.load" in ln or "tl.store" in ln for ln in t["stages"]["generated code"])
    assert all(internals.pipeline_claims(d).values()), internals.pipeline_claims(d)


@pytest.mark.gpu
def test_gpu_guards_name_the_cuda_device_and_dtype_change_recompiles():
    d = internals.measure_guards(Run(), "dtype → float64")
    assert any(g.startswith("x: float32 on cuda") for g in d["guards_plain"]), d["guards_plain"]
    assert d["recompiled"] and "dtype mismatch" in d["failed_guard"]
    assert all(internals.guards_claims(d).values()), internals.guards_claims(d)


@pytest.mark.gpu
def test_gpu_one_graph_where_beats_the_broken_compile():
    d = internals.measure_capture_cost(Run(), budget_s=0.3)
    rows = {r["key"]: r for r in d["rows"]}
    assert rows["compile_branch"]["graphs"] == 2
    assert rows["compile_where"]["median_s"] < rows["compile_branch"]["median_s"], rows
    assert len(internals.cost_claims(d)) == 3 and all(internals.cost_claims(d).values()), internals.cost_claims(d)


# =======================================================================================
# The notebook
# =======================================================================================


