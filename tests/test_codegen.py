"""demos.introspection.codegen: Inductor's output code and XLA's HLO, parsed into counts."""
from __future__ import annotations

import pytest

import demos  # noqa: F401
from demos.introspection import codegen

# A hand-written wrapper in the shape Inductor emits for CUDA (two Triton kernels, one mm).
CUDA_WRAPPER = '''
triton_poi_fused_relu_0 = async_compile.triton('triton_poi_fused_relu_0', """
@triton.jit
def triton_poi_fused_relu_0(in_out_ptr0, xnumel, XBLOCK : tl.constexpr):
    pass
""")
triton_poi_fused_add_1 = async_compile.triton('triton_poi_fused_add_1', """
def triton_poi_fused_add_1(in_ptr0, out_ptr0, xnumel):
    pass
""")
async_compile.wait(globals())

class Runner:
    def call(self, args):
        arg0_1, arg1_1, arg2_1 = args
        args.clear()
        with torch.cuda._DeviceGuard(0):
            buf0 = empty_strided_cuda((32, 128), (128, 1), torch.bfloat16)
            # Topologically Sorted Source Nodes: [y], Original ATen: [aten.mm]
            extern_kernels.mm(arg0_1, arg1_1, out=buf0)
            buf1 = buf0; del buf0  # reuse
            stream0 = get_raw_stream(0)
            triton_poi_fused_relu_0.run(buf1, 4096, stream=stream0)
            buf2 = empty_strided_cuda((32, 64), (64, 1), torch.bfloat16)
            extern_kernels.addmm(arg2_1, buf1, arg1_1, alpha=1, beta=1, out=buf2)
            buf3 = empty_strided_cuda((32, 64), (64, 1), torch.bfloat16)
            triton_poi_fused_add_1.run(buf2, buf3, 2048, stream=stream0)
        return (buf3, )

runner = Runner(partitions=[])
'''

HLO = '''HloModule jit_f, entry_computation_layout={(f32[8,4]{1,0})->f32[4,8]{1,0}}

%fused_computation (param_0: f32[8,4]) -> f32[4,8] {
  %param_0 = f32[8,4]{1,0} parameter(0)
  ROOT %transpose.1 = f32[4,8]{0,1} transpose(%param_0), dimensions={1,0}, metadata={op_name="t"}
}

%fused_computation.1 (p0: f32[4,8], p1: f32[8,8]) -> f32[4,8] {
  %p0 = f32[4,8]{1,0} parameter(0)
  %p1 = f32[8,8]{1,0} parameter(1)
  ROOT %dot.0 = f32[4,8]{1,0} dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

ENTRY %main.1 (x.1: f32[8,4], w.1: f32[8,8]) -> f32[4,8] {
  %x.1 = f32[8,4]{1,0} parameter(0), metadata={op_name="x"}
  %w.1 = f32[8,8]{1,0} parameter(1)
  %transpose_fusion = f32[4,8]{1,0} fusion(%x.1), kind=kLoop, calls=%fused_computation
  %gemm = (f32[4,8]{1,0}, s8[0]{0}) custom-call(%transpose_fusion, %w.1), custom_call_target="__cublas$gemm"
  %gte = f32[4,8]{1,0} get-tuple-element(%gemm), index=0
  ROOT %dot_fusion = f32[4,8]{1,0} fusion(%gte, %w.1), kind=kCustom, calls=%fused_computation.1
}
'''


def test_parse_inductor_counts_a_cuda_wrapper_by_hand():
    code = codegen.parse_inductor(CUDA_WRAPPER, device="cuda")
    assert code.kernels == ["triton_poi_fused_relu_0", "triton_poi_fused_add_1"]
    assert code.kernel_count == 2
    assert code.extern_calls == ["mm", "addmm"]
    assert code.matmuls == 2
    assert code.launches == 4
    assert [b.split()[0] for b in code.buffers] == ["buf0", "buf2", "buf3"]
    assert code.buffers[0] == "buf0 (32, 128) bfloat16"
    assert code.reused == ["buf1 ← buf0"]
    assert "extern_kernels.mm" in code.wrapper and "async_compile" not in code.wrapper
    d = code.to_dict()
    assert d["kernel_count"] == 2 and "source" not in d


def test_parse_hlo_counts_by_hand():
    p = codegen.parse_hlo(HLO)
    assert p["fusions"] == ["transpose_fusion kind=kLoop", "dot_fusion kind=kCustom"]
    assert p["entry_ops"] == ["fusion", "custom-call", "fusion"]  # params and GTEs are not work
    assert p["matmuls"] == 2  # one dot inside a fusion + one cuBLAS custom call
    assert len(p["transposes"]) == 1 and "metadata" not in p["transposes"][0]


def test_excerpt_picks_and_shortens_lines():
    lines = codegen.excerpt(HLO, [r"custom-call", r"= .*fusion\("], max_lines=5, width=60)
    assert len(lines) == 3
    assert all(len(s) <= 60 for s in lines)
    assert lines[1].startswith("%gemm")


def test_inductor_fuses_complex_activation_into_one_cpp_kernel():
    code = codegen.workload_inductor_code("complex_activation", {"N": 4096}, device="cpu")
    assert code.kernel_count == 1
    assert code.kernels[0].startswith("cpp_fused_")
    for op in ("sin", "cos", "mul", "add", "relu"):
        assert op in code.kernels[0]
    assert code.extern_calls == []
    assert len(code.buffers) == 1  # only the output is allocated


def test_capture_does_not_reset_dynamo():
    import torch

    from demos.engine.workloads import complex_activation_torch, compiled_torch

    x = torch.randn(256)
    f = compiled_torch(complex_activation_torch)
    f(x, x)
    before = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    codegen.inductor_code(complex_activation_torch, x, x)
    f(x, x)  # still compiled: no new graph for the original wrapper
    after = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    assert after == before + 1  # exactly one: the capture's own copy


def test_dead_matmul_is_gone_from_both_compilers():
    params = {"B": 32, "D": 64, "F": 128}
    t = codegen.workload_inductor_code("mlp_dead_code", params, device="cpu")
    assert t.matmuls == 2
    x = codegen.workload_xla_code("mlp_dead_code", params, device="cpu")
    assert x.jaxpr_matmuls == 3  # as written
    assert x.matmuls == 2  # after XLA's passes


def test_xla_fuses_complex_activation_and_reports_memory_and_cost():
    x = codegen.workload_xla_code("complex_activation", {"N": 4096}, device="cpu")
    assert x.fusion_count == 1 and x.kernel_count == 1
    assert x.jaxpr_eqns >= 6
    assert x.memory is not None and x.memory["output_size_in_bytes"] == 4096 * 4
    assert x.memory["temp_size_in_bytes"] == 0
    assert x.cost is not None and x.cost["flops"] > 0
    assert "stablehlo.sine" in x.stablehlo


def test_no_code_is_one_clear_error():
    from demos.engine.errors import DemoError

    with pytest.raises(DemoError):
        codegen.inductor_code(len, [1, 2])


@pytest.mark.gpu
def test_inductor_emits_one_triton_kernel_on_gpu():
    code = codegen.workload_inductor_code("complex_activation", device="cuda")
    assert code.kernel_count == 1 and code.kernels[0].startswith("triton_")
    dead = codegen.workload_inductor_code("mlp_dead_code", dtype="bfloat16", device="cuda")
    assert dead.matmuls == 2
