"""Part 3, specialisation (demos.topics.autotune): what default Inductor and max-autotune launch
for relu(X @ A) @ B, what autotuning benchmarked, and what XLA runs.

Fixtures: ``tests/fixtures/inductor_two_gemms_frozen_cpu.py`` and
``inductor_two_gemms_cpp_template_cpu.py`` are Inductor's output code, recorded here (torch
2.13.0+cpu, weights frozen, caches off) for the default mode and for max-autotune with the C++
template forced (``max_autotune_gemm_backends="CPP"``), the case the library won on this machine.
The GPU HLO lines below are written in XLA:GPU's format (a Triton GEMM fusion, a cuBLAS custom
call), not recorded: no GPU here. The slide's claims at the defaults are tests/test_demos.py's."""
from __future__ import annotations

from pathlib import Path

import pytest

from demos.introspection.hooks import autotuned
from demos.introspection.inductor import parse_inductor
from demos.topics import autotune as topic
from demos.topics.autotune_figures import short

FIXTURES = Path(__file__).parent / "fixtures"

XLA_CPU = """%x.1 = f32[128,512]{1,0} parameter(0), metadata={op_name="x"}
%ynn_fusion.1 = f32[128,1024]{1,0} fusion(%x.1, %a.1), kind=kCustom, calls=%fused_computation.1, backend_config={"fusion_config":{"kind":"__ynn_fusion"},"outer_dimension_partitions":[]}
%broadcast_maximum_fusion = f32[128,1024]{1,0} fusion(%ynn_fusion.1), kind=kLoop, calls=%fused_computation.2, backend_config={"outer_dimension_partitions":["2"]}
ROOT %ynn_fusion = f32[128,512]{1,0} fusion(%broadcast_maximum_fusion, %b.1), kind=kCustom, calls=%fused_computation, backend_config={"fusion_config":{"kind":"__ynn_fusion"},"outer_dimension_partitions":[]}"""
XLA_GPU = """%p0 = f32[256,1024]{1,0} parameter(0)
%gemm_fusion_dot.1 = f32[256,2048]{1,0} fusion(%p0, %p1), kind=kCustom, calls=%gemm_fusion_dot.1_computation, backend_config={"operation_queue_id":"0","fusion_backend_config":{"kind":"__triton_gemm","triton_gemm_config":{"block_m":"64"}}}
%custom-call.2 = (f32[256,1024]{1,0}, s8[4194304]{0}) custom-call(%gemm_fusion_dot.1, %p2), custom_call_target="__cublas$gemm", backend_config={"gemm_backend_config":{"epilogue":"DEFAULT"}}
ROOT %get-tuple-element = f32[256,1024]{1,0} get-tuple-element(%custom-call.2), index=0"""


def _kinds(items):
    return [x["kind"] for x in items]


def test_default_inductor_launches_two_library_gemms_and_the_relu():
    code = parse_inductor((FIXTURES / "inductor_two_gemms_frozen_cpu.py").read_text())
    assert code.library_calls == ["mkl._mkl_linear", "mkl._mkl_linear"] and code.matmuls == 2
    got = topic.launches(code)
    assert [(x["name"], x["kind"]) for x in got] == [("mkl._mkl_linear", "library GEMM"),
                                                    ("cpp_fused_relu_0", "generated kernel"),
                                                    ("mkl._mkl_linear", "library GEMM")]
    d = {"rows": {"default": {"launches": got}}}
    assert topic.gemms_claims["default"].holds(topic._default_launches(d), "cpu")


def test_a_generated_gemm_carries_the_relu_as_its_epilogue():
    code = parse_inductor((FIXTURES / "inductor_two_gemms_cpp_template_cpu.py").read_text())
    assert code.gemm_templates == ["cpp_fused_mm_relu_0", "cpp_fused_mm_relu_1"] and code.matmuls == 2
    got = topic.launches(code)
    assert _kinds(got) == ["generated GEMM", "generated GEMM"]  # no ReLU kernel left
    assert topic._epilogue_on_generated({"rows": {"max-autotune": {"launches": got}}})
    # a ReLU with no kernel of its own after a library GEMM would break the claim
    broken = [{"name": "mkl._mkl_linear", "kind": "library GEMM"}, {"name": "x", "kind": "generated GEMM"}]
    assert not topic._epilogue_on_generated({"rows": {"max-autotune": {"launches": broken}}})
    assert [short(x["name"]) for x in got] == ["mm+relu", "mm+relu"]


def test_xla_launches_read_from_cpu_and_gpu_hlo():
    cpu = topic.xla_launches(XLA_CPU)
    assert [(x["name"], x["kind"]) for x in cpu] == [("ynn_fusion.1", "library GEMM"),
                                                    ("broadcast_maximum_fusion", "generated kernel"),
                                                    ("ynn_fusion", "library GEMM")]
    assert [short(x["name"]) for x in cpu] == ["YNNPACK", "max", "YNNPACK"]
    gpu = topic.xla_launches(XLA_GPU)
    assert [(x["name"], x["kind"]) for x in gpu] == [("gemm_fusion_dot.1", "generated GEMM"),
                                                    ("custom-call.2", "library GEMM")]
    claim = topic.gemms_claims["xla"]
    assert claim.holds(topic._xla_launches({"rows": {"jax_jit": {"launches": cpu}}}), "cpu")
    assert claim.threshold_for("gpu") is None  # nothing claimed of XLA's choice on a GPU


def test_candidate_names_as_the_slide_writes_them():
    assert [short(n) for n in ("_mkl_linear", "cpp_CppMicroGemmFP32Vec_0", "triton_mm_12", "mm",
                               "triton_tem_fused_mm_relu_0")] == \
        ["MKL linear", "C++ micro-GEMM (FP32Vec)", "Triton mm #12", "library mm", "mm+relu"]


@pytest.fixture(scope="module")
def measured():
    return topic.gemms.run()


@pytest.mark.slow  # a compile with caches off and its autotuning: 10–20 s on 2 cores
def test_autotuning_is_recorded_with_its_candidates_and_its_seconds(measured):
    rows = measured["rows"]
    tuned = rows["max-autotune"]["autotuned"]
    assert [t["op"] for t in tuned] and all(len(t["candidates"]) >= 2 for t in tuned)
    for t in tuned:
        ms = [c["ms"] for c in t["candidates"]]
        assert ms == sorted(ms) and t["seconds"] > 0 and len(t["shapes"]) >= 2
    # the generated code agrees with the choice: the first launch is the first GEMM's winner's kind
    first = tuned[0]["candidates"][0]["name"]
    assert (topic.kinds(measured, "max-autotune")[0] == "library GEMM") == ("Micro" not in first
                                                                            and "triton" not in first)
    assert all(0 < rows[m]["compile_s"] <= rows[m]["first_s"] for m in ("default", "max-autotune")), rows
    assert all(rows[f]["steady"]["n"] >= 5 for f in ("torch_eager", "default", "max-autotune"))
    assert topic.gemms.ask.answer(measured)[0] in (0, 1)


def test_the_autotuning_hook_leaves_inductor_as_it_found_it():
    from torch._inductor.select_algorithm import AlgorithmSelectorCache, get_algorithm_selector_cache

    before = (AlgorithmSelectorCache.__call__, list(get_algorithm_selector_cache().feedback_saver_fns))
    with pytest.raises(RuntimeError):
        with autotuned():
            assert AlgorithmSelectorCache.__call__ is not before[0]
            raise RuntimeError("a compile failed")
    assert (AlgorithmSelectorCache.__call__, get_algorithm_selector_cache().feedback_saver_fns) == before
