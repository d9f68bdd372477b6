"""Readable names for the ops and kernels in a profiler trace.

:func:`short_name` turns what Kineto records into a label that fits a timeline: an aten op
loses its ``aten::`` prefix, ATen's templated CUDA kernels are named by the op they compute
(``sin``, ``mul``, ``sum``), library kernels (cuBLAS, cuDNN, CUTLASS) keep their family and tile
size, copies read ``memcpy HtoD``, and Triton and Inductor C++ kernel names stay whole (they
already name the fused ops). It is a pure function of the name; :mod:`demos.introspection.trace`
uses it for every lane event.
"""
from __future__ import annotations

import re

_FUNCTOR_GENERIC = {"AUnary", "BUnary", "Unary", "Binary", "Ternary", "Nullary", "Vectorized", "Compare",
                    "func_wrapper", "Reduce", "Welford", "CUDA"}
# ATen's generic launchers: the op is named inside their template arguments
_ATEN_LAUNCHERS = {"vectorized_elementwise_kernel", "unrolled_elementwise_kernel", "elementwise_kernel",
                   "elementwise_kernel_with_index", "reduce_kernel", "index_elementwise_kernel",
                   "distribution_elementwise_grid_stride_kernel", "Kernel", "Kernel2", "device_kernel",
                   "kernel", "launch_kernel"}
_LIB_KEYWORDS = re.compile(r"gemm|gemv|fprop|dgrad|wgrad|conv|matmul|nvjet|splitKreduce|softmax|attention|fmha",
                           re.I)
_TILE = re.compile(r"(?<![\d])(\d+x\d+(?:x\d+)?)(?![\d])")


def short_name(name: str) -> str:
    """A readable label for an op or kernel name.

    ``aten::sin`` → ``sin``; ``void at::native::vectorized_elementwise_kernel<4,
    at::native::sin_kernel_cuda(…)…>`` → ``sin``; ``…binary_internal::MulFunctor<float>…`` →
    ``mul``; ``…CUDAFunctor_add<float>…`` → ``add``; ``…sum_functor<…>…`` → ``sum``;
    ``sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_…_cublas`` →
    ``sm90_xmma_gemm 128x128x64``; ``void cudnn::cnn::conv2d_grouped_direct_kernel<…>(…)`` →
    ``conv2d_grouped_direct``; ``Memcpy HtoD (Pageable -> Device)`` → ``memcpy HtoD``.
    Triton and Inductor C++ kernel names are kept whole (they already name the fused ops).
    """
    name = name.strip()
    if name.startswith("aten::"):
        return name[6:]
    m = re.match(r"^(Memcpy|Memset)\s*(\w+)?", name)
    if m:
        return m.group(1).lower() + (f" {m.group(2)}" if m.group(2) and m.group(1) == "Memcpy" else "")
    m = re.search(r"graph_\d+_(cpp_fused\w*)", name)
    if m:
        return m.group(1)
    if name.startswith("## Call CompiledFxGraph"):
        return "CompiledFxGraph"
    if re.match(r"^(triton_|cpp_fused|cpp_kernel)\w*$", name):
        return name
    if "<" in name or "(" in name or "::" in name:
        return _short_templated(name)
    if re.fullmatch(r"[\w$.]+", name) and len(name) > 32:
        return _short_library(name)
    return name if len(name) <= 48 else name[:47] + "…"


def _short_templated(name: str) -> str:
    # ATen elementwise kernels: the op's own kernel function is named inside the template
    m = re.search(r"at::native::(?:\(anonymous namespace\)::)?(?:\w+::)*?(\w+?)_kernel_cuda\b", name)
    if m:
        return m.group(1)
    m = re.search(r"\bCUDAFunctor(?:OnSelf|OnOther)?_(\w+?)<", name)
    if m:
        return m.group(1)
    m = re.search(r"\blaunch_(\w+?)_(?:scalar|tensor|kernel)\b", name)
    if m:
        return m.group(1)
    m = re.search(r"\b(\w+?)CUDAKernelImpl\b", name)
    if m:
        return m.group(1).lower()
    functors = [f for f in re.findall(r"(\w+?)Functor(?:_\w+)?<", name) if f not in _FUNCTOR_GENERIC]
    if functors:
        return functors[-1].split("_")[-1].lower()
    m = re.search(r"\b(\w+?)_functor<", name)
    if m and m.group(1) not in _FUNCTOR_GENERIC:
        return m.group(1)
    m = re.search(r"\b(Max|Min|Mean|Norm|Sum|Prod|Argmax|Argmin)Ops<", name)
    if m:
        return m.group(1).lower()
    # the function's own name: the last component of the qualified name before "<" or "("
    head = re.sub(r"^\s*(?:void|static|__global__)\s+", "", name)
    base_m = re.match(r"([\w:\s()]*?)(?:<|\(|$)", head.replace("(anonymous namespace)", "anon"))
    base = (base_m.group(1) if base_m else head).strip().split("::")[-1].strip()
    if base in _ATEN_LAUNCHERS:
        # a generic launcher (cutlass::Kernel2<cutlass_80_…gemm…>): the first named argument
        inner = re.findall(r"([A-Za-z_]\w{3,})", head[len(base_m.group(0)) if base_m else 0:])
        inner = [w for w in inner if w not in ("float", "half", "char", "const", "int", "long", "unsigned",
                                               "bool", "double", "cutlass", "Params", "at", "native", "detail",
                                               "Array", "anon", "lambda", "operator", "void")]
        if inner:
            return _short_library(inner[0]) if len(inner[0]) > 32 else inner[0]
    if base:
        base = re.sub(r"(?i)_?kernel(?:_\w*)?$", "", base) or base
        return _short_library(base) if len(base) > 32 else base
    m = re.search(r"([A-Za-z_]\w{2,})", name.replace("void ", ""))
    return m.group(1)[:32] if m else name[:32]


def _short_library(name: str) -> str:
    """Library kernel names (cuBLAS, cuDNN, CUTLASS): keep the family and the tile size."""
    tokens = name.split("_")
    tile = _TILE.search(name)
    key = next((i for i, t in enumerate(tokens) if _LIB_KEYWORDS.search(t)), None)
    if key is None:
        out = "_".join(tokens[:2])
    else:
        out = "_".join(tokens[: key + 1])
        if len(out) > 24:
            out = f"{tokens[0]} {tokens[key]}"
    if tile and tile.group(1) not in out:
        out += f" {tile.group(1)}"
    return out if len(out) <= 40 else out[:39] + "…"
