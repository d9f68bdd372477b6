"""demos.introspection.codegen, inductor and hlo: Inductor's output code and XLA's HLO, parsed into counts."""
from __future__ import annotations

import pytest

import demos  # noqa: F401
from demos.engine.protocol import fresh_function
from demos.introspection import codegen
from demos.introspection.hlo import excerpt, hlo_excerpt, parse_hlo, stablehlo_excerpt, strip_hlo
from demos.introspection.inductor import fold_cpp, generated_excerpt, inductor_code, parse_inductor

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
    code = parse_inductor(CUDA_WRAPPER, device="cuda")
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
    p = parse_hlo(HLO)
    assert p["fusions"] == ["transpose_fusion kind=kLoop", "dot_fusion kind=kCustom"]
    assert p["entry_ops"] == ["fusion", "custom-call", "fusion"]  # params and GTEs are not work
    assert p["matmuls"] == 2  # one dot inside a fusion + one cuBLAS custom call
    assert len(p["transposes"]) == 1 and "metadata" not in p["transposes"][0]


def test_excerpt_picks_and_shortens_lines():
    lines = excerpt(HLO, [r"custom-call", r"= .*fusion\("], max_lines=5, width=60)
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

    from demos.engine.workload_defs import complex_activation_torch
    from demos.engine.workloads import compiled_torch

    x = torch.randn(256)
    f = compiled_torch(complex_activation_torch)
    f(x, x)
    before = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    inductor_code(complex_activation_torch, x, x)
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
        inductor_code(len, [1, 2])


@pytest.mark.gpu
def test_inductor_emits_one_triton_kernel_on_gpu():
    code = codegen.workload_inductor_code("complex_activation", device="cuda")
    assert code.kernel_count == 1 and code.kernels[0].startswith("triton_")
    dead = codegen.workload_inductor_code("mlp_dead_code", dtype="bfloat16", device="cuda")
    assert dead.matmuls == 2


# -- GPU forms, on fixtures in tests/fixtures/gpu/ (README.md there: where each format comes from) --
from pathlib import Path  # noqa: E402

from demos.engine.workload_defs import WORKLOADS  # noqa: E402

GPU = Path(__file__).resolve().parent / "fixtures" / "gpu"


def _inductor(name):
    return parse_inductor((GPU / name).read_text(), device="cuda")


def _hlo(name):
    return parse_hlo((GPU / name).read_text())


def test_gpu_inductor_six_eager_ops_become_one_triton_kernel():
    code = _inductor("inductor_complex_activation_cuda.py")
    assert len(WORKLOADS["complex_activation"].eager_ops) == 6
    assert code.kernels == ["triton_poi_fused_add_cos_mul_relu_sin_0"]  # 6 kernels become 1
    assert code.kernel_defs == code.kernels and code.launches == 1
    for op in ("sin", "cos", "mul", "add", "relu"):
        assert op in code.kernels[0]
    assert code.extern_calls == [] and code.library_calls == [] and code.matmuls == 0
    assert code.buffers == ["buf0 (20971520, ) float32"]  # only the output is allocated
    assert "get_raw_stream(0)" in code.wrapper and ".run(arg0_1, arg1_1, buf0" in code.wrapper
    assert "async_compile" not in code.wrapper and "@triton.jit" not in code.wrapper


def test_gpu_inductor_three_matmuls_become_two_library_calls():
    code = _inductor("inductor_mlp_dead_code_cuda.py")
    assert WORKLOADS["mlp_dead_code"].eager_ops.count("mm") == 3  # as written
    assert code.matmuls == 2  # the dead x @ gating1 is gone
    assert code.extern_calls == ["mm", "mm"] and code.library_calls == ["mm", "mm"]  # cuBLAS via extern_kernels
    assert code.kernels == ["triton_poi_fused_relu_0"]  # the relu is generated Triton
    assert code.launches == 3
    assert code.buffers == ["buf0 (512, 4096) bfloat16", "buf2 (512, 2048) bfloat16"]
    assert code.reused == ["buf1 ← buf0"]  # relu writes in place into the first GEMM's output
    assert code.in_place == ["triton_poi_fused_relu_0(buf1)"]  # its kernel takes in_out_ptr0
    assert _inductor("inductor_complex_activation_cuda.py").in_place == []  # fused: reads x, y, writes buf0
    # in launch order: GEMM, relu, GEMM
    calls = [s for s in code.wrapper.splitlines() if "extern_kernels." in s or ".run(" in s]
    assert [c.strip().split("(")[0] for c in calls] == ["extern_kernels.mm", "triton_poi_fused_relu_0.run", "extern_kernels.mm"]


def test_gpu_inductor_cuda_graph_partitions_are_read_through():
    """mode="reduce-overhead": Inductor moves the launches into ``def partition_0(args)``,
    called from Runner.call as ``self.partitions[0](…)`` — the counts must not drop to 0."""
    plain = _inductor("inductor_mlp_dead_code_cuda.py")
    graphs = _inductor("inductor_mlp_dead_code_cuda_cudagraphs.py")
    assert "def partition_0(args):" in graphs.source and "self.partitions[0](" in graphs.source
    assert graphs.kernels == plain.kernels and graphs.extern_calls == plain.extern_calls
    assert graphs.matmuls == 2 and graphs.launches == 3 and graphs.buffers == plain.buffers
    assert "self.partitions" not in graphs.wrapper and "extern_kernels.mm(buf1, arg3_1" in graphs.wrapper


def test_inductor_fallbacks_and_reinterpreted_reuse():
    src = '''
def call(args):
    arg0_1, arg1_1 = args
    args.clear()
    buf0 = aten.convolution(arg0_1, arg1_1, None, (1, 1), (0, 0), (1, 1), False, (0, 0), 1)
    # Topologically Sorted Source Nodes: [x], Original ATen: [aten.mm]
    buf1 = reinterpret_tensor(buf0, (16, 64), (64, 1), 0); del buf0  # reuse
    buf2 = torch.ops.aten._scaled_dot_product_flash_attention.default(buf1, buf1, buf1, scale=0.125)
    torch.ops.aten._assert_scalar.default(True, "check")
    return (buf2, )
'''
    code = parse_inductor(src, device="cuda")
    assert code.fallback_calls == ["convolution", "_scaled_dot_product_flash_attention"]
    assert code.library_calls == ["aten.convolution", "aten._scaled_dot_product_flash_attention"]
    assert code.matmuls == 1 and code.launches == 2
    assert code.reused == ["buf1 ← buf0"]


def test_gpu_xla_complex_activation_is_one_loop_fusion():
    p = _hlo("xla_complex_activation_gpu.hlo.txt")
    assert p["fusions"] == ["loop_maximum_fusion kind=kLoop"]
    assert p["entry_ops"] == ["fusion"]  # 6 ops become 1 kernel
    assert p["matmuls"] == 0 and p["library_calls"] == []


def test_gpu_xla_three_matmuls_become_two_cublas_calls():
    p = _hlo("xla_mlp_dead_code_gpu.hlo.txt")
    assert p["matmuls"] == 2  # 3 as written, the unused one removed
    assert p["library_calls"] == ["__cublas$gemm", "__cublas$gemm"]  # two matmuls are library calls
    assert p["entry_ops"] == ["custom-call", "fusion", "custom-call"]  # GTEs and params are not work
    assert p["fusions"] == ["loop_maximum_fusion kind=kLoop"]
    assert "gating1" not in "".join(excerpt(p["entry"], [r"custom-call\("]))


def test_gpu_xla_triton_gemm_fusions_are_generated_not_library_calls():
    p = _hlo("xla_mlp_dead_code_gpu_triton.hlo.txt")
    assert p["fusions"] == ["gemm_fusion_dot.1 kind=kCustom __triton_gemm",
                            "gemm_fusion_dot.3 kind=kCustom __triton_gemm"]
    assert p["matmuls"] == 2 and p["library_calls"] == []  # the dots live inside the fusions
    assert len(p["entry_ops"]) == 2  # relu fused into the second GEMM's prologue


def test_gpu_xla_reduction_is_input_fusions():
    p = _hlo("xla_chain_gpu.hlo.txt")
    assert p["fusions"] == ["input_reduce_fusion kind=kInput", "input_reduce_fusion.1 kind=kInput"]
    assert p["matmuls"] == 0 and p["entry_ops"] == ["fusion", "fusion"]


def test_hlo_instructions_printed_over_several_lines_and_output_fusions():
    hlo = '''HloModule m

fused_dot_add {
  p0 = f32[64,64]{1,0} parameter(0)
  p1 = f32[64,64]{1,0} parameter(1)
  p2 = f32[64,64]{1,0} parameter(2)
  dot = f32[64,64]{1,0} dot(p0, p1),
      lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT add = f32[64,64]{1,0} add(dot, p2)
}

ENTRY main {
  p0 = f32[64,64]{1,0} parameter(0)
  p1 = f32[64,64]{1,0} parameter(1)
  p2 = f32[64,64]{1,0} parameter(2)
  conv = (f32[1,54,54,64]{3,2,1,0}, u8[0]{0})
    custom-call(p0, p1),
    custom_call_target="__cudnn$convForward",
    window={size=3x3}, dim_labels=b01f_01io->b01f
  ROOT fusion = f32[64,64]{1,0} fusion(p0, p1, p2),
      kind=kOutput, calls=fused_dot_add,
      backend_config={"fusion_backend_config":{"kind":"__custom_fusion"}}
}
'''
    p = parse_hlo(hlo)
    assert p["entry_ops"] == ["custom-call", "fusion"]
    assert p["fusions"] == ["fusion kind=kOutput __custom_fusion"]
    assert p["library_calls"] == ["__cudnn$convForward"]
    assert p["matmuls"] == 2  # the dot in the output fusion + the cuDNN convolution


# -- Showing code on a slide: excerpts (kernel bodies first, boilerplate folded), colours --
def test_generated_excerpt_puts_the_triton_kernel_first_and_folds_its_metadata():
    lines = generated_excerpt(_inductor("inductor_complex_activation_cuda.py"))
    assert lines[0] == "# kernel 1/1: triton_poi_fused_add_cos_mul_relu_sin_0 (Triton)"
    assert lines[1].startswith("def triton_poi_fused_add_cos_mul_relu_sin_0(")  # decorators folded
    assert any("tl.load" in ln for ln in lines) and not any(ln.lstrip().startswith("@") for ln in lines)
    wrapper = lines.index("# wrapper: call(args) — launches and allocations in order")
    assert any(".run(arg0_1, arg1_1, buf0" in ln for ln in lines[wrapper:])
    assert not any(ln.strip().startswith(("del ", "args.clear", "assert_size_stride")) for ln in lines[wrapper:])


def test_cpp_kernel_folding_keeps_the_math_and_drops_the_plumbing():
    body = """
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C"  void  kernel(const float* in_ptr0,
                       float* out_ptr0)
{
    std::atomic<int> inductor_cpu_integer_div_error{0};
    for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(64L); x0+=static_cast<int64_t>(16L))
    {
        auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
        auto tmp1 = tmp0.sin();
    }
}
"""
    lines = fold_cpp(body)
    text = "\n".join(lines)
    assert 'extern "C"  void  kernel(const float* in_ptr0, float* out_ptr0)' in text
    assert "for(int64_t x0=0; x0<64; x0+=16)" in text and "Vec::loadu(in_ptr0 + x0, 16)" in text
    assert "tmp0.sin()" in text and "#include" not in text and "integer_div_error" not in text
    assert lines[-1].startswith("// (") and "folded" in lines[-1]


def test_hlo_excerpt_puts_fusions_first_and_strips_metadata():
    hlo = """HloModule m, entry_computation_layout={(f32[4]{0})->f32[4]{0}}

ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0), metadata={op_name="x"}
  ROOT %f = f32[4]{0} fusion(%x), kind=kLoop, calls=%fused_computation, metadata={op_name="y"}
}

%fused_computation (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %s = f32[4]{0} sine(%p), metadata={op_name="jit(f)/sin"}
}
"""
    ex = hlo_excerpt(hlo)
    assert ex[0].startswith("%fused_computation")
    assert any("sine(%p)" in ln for ln in ex) and any(ln.startswith("ENTRY") for ln in ex)
    assert not any("metadata" in ln or "parameter(" in ln for ln in ex)
    assert ex.index(next(ln for ln in ex if ln.startswith("ENTRY"))) > 1
    assert strip_hlo('  %d = f32[4,8]{1,0} dot(%a, %b), metadata={op_name="d"}') == "  %d = f32[4,8] dot(%a, %b)"


def test_stablehlo_excerpt_drops_locations_and_the_module_wrapper():
    text = '''module @jit_f attributes {mhlo.num_partitions = 1 : i32} {
  func.func public @main(%arg0: tensor<4xf32> loc("x")) -> (tensor<4xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.sine %arg0 : tensor<4xf32> loc(#loc3)
    return %0 : tensor<4xf32> loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
'''
    assert stablehlo_excerpt(text) == [
        'func.func public @main(%arg0: tensor<4xf32> loc("x")) -> (tensor<4xf32>) {',
        "  %0 = stablehlo.sine %arg0 : tensor<4xf32>", "  return %0 : tensor<4xf32>", "}"]


def test_color_layers_partition_every_character():
    from demos.engine.plots import color_layers

    lines = ["  %add.0 = f32[8]{0} add(%a, %b)  // sum", "def f(x):  # 'c'", "auto tmp0 = 1.5e3;"]
    layers = color_layers(lines)
    assert {"comment", "shape", "call", "var", "keyword", "number"} <= set(layers)
    for i, line in enumerate(lines):
        rebuilt = [" "] * len(line)
        for layer in layers.values():
            for j, ch in enumerate(layer[i]):
                if ch != " ":
                    assert rebuilt[j] == " ", (line, j)  # no character drawn twice
                    rebuilt[j] = ch
        assert "".join(rebuilt).rstrip() == line.rstrip()


def test_fresh_function_is_the_same_function_with_a_new_code_object():
    def f(x, *, k=2):
        return x * k

    g = fresh_function(f)
    assert g is not f and g.__code__ is not f.__code__ and g.__code__.co_code == f.__code__.co_code
    assert (g(3), g(3, k=5), g.__qualname__) == (6, 15, f.__qualname__)
    assert g.__name__.startswith(f.__name__ + "_") and g.__code__.co_name == g.__name__  # a name of its own
