"""Inductor's output code: captured from torch.compile, parsed into counts, folded for a slide.

:func:`inductor_code` compiles a function with torch.compile (Inductor) through a fresh copy of
its code object (so wrappers other demos hold stay compiled; ``torch._dynamo`` is never reset),
runs it once, and returns an :class:`InductorCode`: the Python wrapper plus kernels Inductor
generated, and what they contain: ``kernels`` (launched kernels, in order: ``cpp_fused_*`` on
CPU, ``triton_*`` on GPU), ``extern_calls`` (``extern_kernels.mm/addmm/bmm/…``),
``fallback_calls`` (ATen ops called as they are), ``library_calls`` (both), ``matmuls``,
``buffers`` (every ``empty_strided*`` allocation), ``reused`` (buffers Inductor recycled in
place: ``buf1 = buf0; del buf0  # reuse``) and ``in_place`` (launches of kernels that take an
``in_out_ptr``: they read a buffer and write their result over it). With CUDA graphs the launches sit in graph partitions (``def partition_0(args)``): they
are read where ``call`` invokes them (:func:`call_body`).

:func:`parse_inductor` is a pure function of the code's text, usable on code captured any other
way. :func:`generated_excerpt` makes the whole output readable: kernel bodies first
(:func:`fold_cpp`, :func:`fold_triton` fold their boilerplate), then the wrapper's ``call``.
Inductor's generated code is captured through :func:`demos.introspection.hooks.output_code`.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable

from demos.engine.devices import require_torch
from demos.engine.errors import DemoError
from demos.engine.protocol import fresh_function
from demos.introspection.hooks import output_code

_KERNEL_DEF = re.compile(
    r"^(?P<name>[A-Za-z_]\w*)\s*=\s*async_compile\.(?P<kind>cpp_pybinding|cpp|triton|cuda|halide|mps)\(",
    re.M,
)
_IN_OUT = re.compile(r"\bin_out_ptr\d+\b")  # a kernel argument it reads and writes over
_ALLOC = re.compile(r"^\s*(?P<buf>\w+)\s*=\s*(?P<fn>empty_strided(?:_\w+)?)\((?P<args>.*)\)\s*$", re.M)
# "buf1 = buf0; del buf0  # reuse" and "buf6 = reinterpret_tensor(buf0, (…), (…), 0); del buf0  # reuse"
_REUSE = re.compile(
    r"^[ \t]*(?P<new>\w+)[ \t]*=[ \t]*(?:reinterpret_tensor\()?(?P<old>\w+)[^;\n]*;[ \t]*del[ \t]+\w+[ \t]*#[ \t]*reuse", re.M)
# ATen fallbacks Inductor calls as they are: "buf0 = aten.convolution(…)",
# "buf1 = torch.ops.aten._scaled_dot_product_flash_attention.default(…)"
# and, with freezing on a CPU, the GEMM libraries' packed linears: "buf0 = torch.ops.mkl._mkl_linear.default(…)"
_FALLBACK = re.compile(
    r"^(?:\w+(?:,\s*\w+)*\s*=\s*)?(?:torch\.ops\.)?(?P<ns>aten|mkl|mkldnn)\.(?!_assert)(?P<op>\w+)(?:\.\w+)?\(")
_EXTERN = re.compile(r"\bextern_kernels\.(?P<op>\w+)\(")
MATMUL_EXTERNS = ("mm", "addmm", "bmm", "baddbmm", "_mm_plus_mm", "convolution", "_int_mm", "_scaled_mm",
                  "mkl._mkl_linear", "mkldnn._linear_pointwise")
# GEMM templates (max-autotune): triton_tem_fused_mm_0 on a GPU; on a CPU a C++ kernel built on
# Inductor's micro-GEMM (its source defines ``…_micro_gemm``), named after its ops (cpp_fused_mm_relu_0)
_MATMUL_TEMPLATE = re.compile(r"_tem_|template")
_MICRO_GEMM = re.compile(r"\bmicro_gemm\b|_micro_gemm")


@dataclass
class InductorCode:
    """Inductor's generated code for one compiled graph set, and what it contains."""

    source: str
    kernels: list[str] = field(default_factory=list)  # launched, in order of the call
    kernel_defs: list[str] = field(default_factory=list)  # distinct kernels compiled
    extern_calls: list[str] = field(default_factory=list)  # e.g. ["mm", "mm"]
    fallback_calls: list[str] = field(default_factory=list)  # ATen ops called as they are, e.g. ["convolution"]
    buffers: list[str] = field(default_factory=list)  # "buf0 (32, 128) float32"
    reused: list[str] = field(default_factory=list)  # "buf1 ← buf0"
    in_place: list[str] = field(default_factory=list)  # launches that write a buffer they read: "cpp_fused_relu_0(buf1)"
    gemm_templates: list[str] = field(default_factory=list)  # launched kernels that are generated GEMMs
    graphs: int = 1
    device: str = "cpu"

    @property
    def kernel_count(self) -> int:
        """Generated kernels launched per call (fused C++ on CPU, Triton on GPU)."""
        return len(self.kernels)

    @property
    def matmuls(self) -> int:
        """Matmul calls: library calls (extern_kernels.mm/addmm/bmm…, ATen fallbacks) plus GEMM templates."""
        templ = sum(1 for k in self.kernels if k in self.gemm_templates or _MATMUL_TEMPLATE.search(k))
        return sum(1 for op in self.extern_calls + self.fallback_calls if op in MATMUL_EXTERNS) + templ

    @property
    def library_calls(self) -> list[str]:
        """Calls into libraries rather than generated kernels (cuBLAS/oneDNN via extern_kernels,
        ATen fallbacks), in order."""
        return list(self.extern_calls) + [op if "." in op else f"aten.{op}" for op in self.fallback_calls]

    @property
    def launches(self) -> int:
        """Everything the wrapper launches: generated kernels plus library (extern, fallback) calls."""
        return len(self.kernels) + len(self.extern_calls) + len(self.fallback_calls)

    @property
    def wrapper(self) -> str:
        """The ``call`` function of the wrapper: the order of launches and allocations."""
        return call_body(self.source)

    def to_dict(self, with_source: bool = False) -> dict[str, Any]:
        d = asdict(self)
        if not with_source:
            d.pop("source")
        d.update(kernel_count=self.kernel_count, matmuls=self.matmuls, launches=self.launches,
                 library_calls=self.library_calls)
        return d


def _function_bodies(lines: list[str], header: "re.Pattern[str]") -> list[tuple[str, list[str]]]:
    """(name, dedented body lines) of every function whose ``def`` line matches ``header``."""
    out: list[tuple[str, list[str]]] = []
    i = 0
    while i < len(lines):
        m = header.match(lines[i])
        if not m:
            i += 1
            continue
        indent, body = len(m.group(1)), []
        i += 1
        while i < len(lines):
            line = lines[i]
            if line.strip() and (len(line) - len(line.lstrip())) <= indent:
                break
            if line.strip():
                body.append(line[indent + 4:] if len(line) > indent + 4 else line.strip())
            i += 1
        out.append((m.group("name"), body))
    return out


_CALL_DEF = re.compile(r"^(\s*)def (?P<name>call)\((?:self, )?args\b")
_PARTITION_DEF = re.compile(r"^(\s*)def (?P<name>partition_\d+)\(args\b")
_PARTITION_CALL = re.compile(r"self\.partitions\[(\d+)\]\(")


def call_body(source: str) -> str:
    """The body of the generated ``call(args)`` function(s): launches and buffers, in order.

    With CUDA graphs (``mode="reduce-overhead"``) Inductor moves the launches into graph
    partitions (``def partition_0(args):``, called as ``self.partitions[0](…)`` from
    ``Runner.call``): each partition's body is spliced in where ``call`` invokes it."""
    out: list[str] = []
    for module in _split_modules(source):
        lines = module.splitlines()
        partitions = dict(_function_bodies(lines, _PARTITION_DEF))
        used: set[str] = set()
        for _name, body in _function_bodies(lines, _CALL_DEF):
            for line in body:
                m = _PARTITION_CALL.search(line)
                if m and f"partition_{m.group(1)}" in partitions:
                    used.add(f"partition_{m.group(1)}")
                    out.extend(partitions[f"partition_{m.group(1)}"])
                else:
                    out.append(line)
        for name, body in partitions.items():  # partitions no call refers to (should not happen)
            if name not in used:
                out.extend(body)
    return "\n".join(out)


_MODULE_SEP = "\n# ==== next generated module ====\n"


def _split_modules(source: str) -> list[str]:
    return source.split(_MODULE_SEP)


def parse_inductor(source: str | Iterable[str], device: str = "cpu") -> InductorCode:
    """Count kernels, extern calls and buffers in Inductor output code (one or more modules)."""
    modules = [source] if isinstance(source, str) else list(source)
    text = _MODULE_SEP.join(modules)
    defs: list[str] = []
    writes: dict[str, int] = {}  # kernel → how many in_out_ptr arguments it takes (its first ones)
    templates: set[str] = set()  # kernels built on a GEMM template
    for module in modules:
        found = list(_KERNEL_DEF.finditer(module))
        defs += [m.group("name") for m in found]
        for m, nxt in zip(found, found[1:] + [None]):
            segment = module[m.start():nxt.start() if nxt else len(module)]
            writes[m.group("name")] = len(set(_IN_OUT.findall(segment)))
            if _MATMUL_TEMPLATE.search(m.group("name")) or _MICRO_GEMM.search(segment):
                templates.add(m.group("name"))
    body = call_body(text)
    kernels: list[str] = []
    in_place: list[str] = []
    names = set(defs)
    for line in body.splitlines():
        s = line.strip()
        if s.startswith("#"):
            continue
        m = re.match(r"^(?P<name>[A-Za-z_]\w*)(?:\.run)?\((?P<args>[^)]*)", s)
        if m and m.group("name") in names:
            kernels.append(m.group("name"))
            n_out = writes.get(m.group("name"), 0)
            if n_out:
                args = [a.strip() for a in m.group("args").split(",")][:n_out]
                in_place.append(f"{m.group('name')}({', '.join(args)})")
    code_lines = [ln for ln in body.splitlines() if not ln.strip().startswith("#")]
    extern = [m.group("op") for m in _EXTERN.finditer("\n".join(code_lines))]
    fallback = [m.group("op") if m.group("ns") == "aten" else f"{m.group('ns')}.{m.group('op')}"
                for ln in code_lines if (m := _FALLBACK.match(ln.strip()))]
    buffers = []
    for m in _ALLOC.finditer(body):
        shape = re.match(r"\s*(\([^)]*\))", m.group("args"))
        dt = re.search(r"torch\.(\w+)", m.group("args"))
        buffers.append(f"{m.group('buf')} {shape.group(1) if shape else '?'} {dt.group(1) if dt else ''}".strip())
    reused = [f"{m.group('new')} ← {m.group('old')}" for m in _REUSE.finditer(body)]
    return InductorCode(source=text, kernels=kernels, kernel_defs=defs, extern_calls=extern,
                        fallback_calls=fallback, buffers=buffers, reused=reused, in_place=in_place,
                        gemm_templates=[k for k in kernels if k in templates], graphs=len(modules), device=device)


def inductor_code(fn: Callable, *args: Any, mode: str | None = None, dynamic: bool | None = None,
                  **kwargs: Any) -> InductorCode:
    """Compile ``fn`` with torch.compile (Inductor), run it on ``args``, return its code.

    Uses a fresh copy of ``fn`` so existing compiled wrappers stay warm (a builtin such as
    ``F.gelu`` is called from a fresh function of its name). Raises DemoError when
    nothing was generated (e.g. the function fell back to eager entirely).
    """
    torch = require_torch()
    opts: dict[str, Any] = {}
    if mode:
        opts["mode"] = mode
    if dynamic is not None:
        opts["dynamic"] = dynamic
    with output_code() as codes:
        compiled = torch.compile(fresh_function(fn), **opts)
        compiled(*args, **kwargs)
    if not codes:
        raise DemoError(f"torch.compile generated no code for {fn.__name__} (graph break or eager fallback)")
    device = "cpu"
    for a in args:
        if hasattr(a, "device"):
            device = a.device.type
            break
    return parse_inductor(codes, device=device)


# ---------------------------------------------------------------------------------------
# Showing the code on a slide
# ---------------------------------------------------------------------------------------
def fold_cpp(body: str) -> list[str]:
    """A C++ kernel body: includes, error-flag plumbing and brace-only lines folded,
    ``static_cast<int64_t>(…)`` elided, indentation halved, the signature on one line."""
    out, folded = [], 0
    for line in body.splitlines():
        s = line.strip()
        if (not s or s in ("{", "}") or s.startswith("#include")
                or any(k in s for k in ("integer_div_error", "omp_get_thread_num", "C10_LIKELY"))):
            folded += bool(s)
            continue
        line = re.sub(r"static_cast<int64_t>\(([^()]*)\)", r"\1", line)
        line = re.sub(r"(\d+)L\b", r"\1", line)
        line = line.replace("at::vec::Vectorized<float>::", "Vec::").replace("at::vec::", "")
        out.append(" " * ((len(line) - len(line.lstrip())) // 4) + line.strip())
    text = re.sub(r"\(\s*\n\s*", "(", "\n".join(out))
    text = re.sub(r",\s*\n\s+(?=(const |float|double|int|bool|half|bfloat16|c10::))", ", ", text)
    return text.splitlines() + ([f"// ({folded} lines folded: braces, includes, bounds checks)"] if folded else [])


def fold_triton(body: str) -> list[str]:
    """A Triton kernel body: imports and the autotuning decorator folded."""
    lines = [ln.rstrip() for ln in body.splitlines()]
    start = next((i for i, ln in enumerate(lines) if ln.strip().startswith("def ")), len(lines))
    folded = sum(1 for ln in lines[:start] if ln.strip())
    return ([ln for ln in lines[start:] if ln.strip()]
            + ([f"# ({folded} lines of imports/autotuning metadata folded)"] if folded else []))


_ASYNC_KERNEL = re.compile(
    r"^(?P<name>[A-Za-z_]\w*)\s*=\s*async_compile\.(?P<kind>\w+)\(.*?(?P<q>'''|\"\"\")(?P<body>.*?)(?P=q)", re.S | re.M)
_WRAPPER_NOISE = ("args.clear", "del ", "assert_size_stride", "assert_alignment", "#", "stream0 = get_raw_stream",
                  "with torch.cuda._DeviceGuard")


def generated_excerpt(code: InductorCode) -> list[str]:
    """Inductor's output, kernel bodies first, then the wrapper's call() (boilerplate folded)."""
    kernels = [(m.group("name"), m.group("kind"), m.group("body")) for m in _ASYNC_KERNEL.finditer(code.source)]
    lang = {"cpp": "C++", "cpp_pybinding": "C++/OpenMP", "triton": "Triton"}
    lines: list[str] = []
    for i, (name, kind, body) in enumerate(kernels):
        lines.append(f"# kernel {i + 1}/{len(kernels)}: {name} ({lang.get(kind, kind)})")
        lines += fold_cpp(body) if kind.startswith("cpp") else fold_triton(body)
    lines.append("# wrapper: call(args) — launches and allocations in order")
    return lines + [ln for ln in call_body(code.source).splitlines()
                    if ln.strip() and not ln.strip().startswith(_WRAPPER_NOISE)]
