"""What the compilers generate: Inductor's output code and XLA's HLO, as text plus counts.

Two entry points, one per compiler, both returning a small dataclass that holds the text and
the counts a slide needs (and ``to_dict()`` for JSON records):

    inductor_code(fn, *args, mode=None, dynamic=None) -> InductorCode
        the Python wrapper + kernels torch.compile (Inductor) generated for ``fn(*args)``:
        ``kernels`` (launched kernels, in order: ``cpp_fused_*`` on CPU, ``triton_*`` on GPU),
        ``extern_calls`` (``extern_kernels.mm/addmm/bmm/…``), ``fallback_calls`` (ATen ops called
        as they are), ``library_calls`` (both), ``matmuls``, ``buffers`` (every
        ``empty_strided*`` allocation) and ``reused`` (buffers Inductor recycled in place).
        With CUDA graphs the launches sit in graph partitions (``def partition_0(args)``):
        they are read where ``call`` invokes them.
    xla_code(fn, *args, static_argnums=()) -> XlaCode
        the jaxpr, StableHLO and optimized HLO of ``jax.jit(fn)``: ``fusions`` (fusion
        instructions in the entry computation), ``matmuls`` (``dot``/``convolution`` plus GPU
        GEMM custom calls), ``library_calls`` (entry custom-calls into cuBLAS/cuDNN/…, e.g.
        ``__cublas$gemm``; Triton GEMM fusions are generated code and listed with their
        backend kind among ``fusions``), ``transposes``, ``memory`` (``memory_analysis()``) and ``cost``
        (``cost_analysis()``) where the backend provides them.

For the seed workloads: ``workload_inductor_code(name, params, dtype)`` and
``workload_xla_code(name, params, dtype)`` (cached per sizes/dtype/device).

The parsers ``parse_inductor(source)`` and ``parse_hlo(text)`` are pure functions of text and
can be used on code captured any other way. ``excerpt(text, patterns)`` picks the lines worth
showing on a slide; ``generated_excerpt(code)``, ``hlo_excerpt(hlo)`` and
``stablehlo_excerpt(text)`` make a whole stage readable (kernel bodies first, boilerplate and
metadata folded).

Capturing Inductor's code never resets ``torch._dynamo``: the function is compiled through a
fresh copy of its code object, so wrappers other demos hold stay compiled (and Inductor's
FX-graph cache makes a repeat capture cost tens of milliseconds).
"""
from __future__ import annotations

import re
import types
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable

from demos.engine.devices import require_jax, require_torch
from demos.engine.errors import DemoError
from demos.engine.protocol import engine_cache, fresh_function
from demos.introspection.hooks import output_code

__all__ = [
    "InductorCode",
    "XlaCode",
    "inductor_code",
    "xla_code",
    "parse_inductor",
    "parse_hlo",
    "workload_inductor_code",
    "workload_xla_code",
    "excerpt",
    "generated_excerpt",
    "hlo_excerpt",
    "stablehlo_excerpt",
    "clear_cache",
]

# ---------------------------------------------------------------------------------------
# Inductor
# ---------------------------------------------------------------------------------------
_KERNEL_DEF = re.compile(
    r"^(?P<name>[A-Za-z_]\w*)\s*=\s*async_compile\.(?P<kind>cpp_pybinding|cpp|triton|cuda|halide|mps)\(",
    re.M,
)
_ALLOC = re.compile(r"^\s*(?P<buf>\w+)\s*=\s*(?P<fn>empty_strided(?:_\w+)?)\((?P<args>.*)\)\s*$", re.M)
# "buf1 = buf0; del buf0  # reuse" and "buf6 = reinterpret_tensor(buf0, (…), (…), 0); del buf0  # reuse"
_REUSE = re.compile(
    r"^[ \t]*(?P<new>\w+)[ \t]*=[ \t]*(?:reinterpret_tensor\()?(?P<old>\w+)[^;\n]*;[ \t]*del[ \t]+\w+[ \t]*#[ \t]*reuse", re.M)
# ATen fallbacks Inductor calls as they are: "buf0 = aten.convolution(…)",
# "buf1 = torch.ops.aten._scaled_dot_product_flash_attention.default(…)"
_FALLBACK = re.compile(r"^(?:\w+(?:,\s*\w+)*\s*=\s*)?(?:torch\.ops\.)?aten\.(?!_assert)(?P<op>\w+)(?:\.\w+)?\(")
_EXTERN = re.compile(r"\bextern_kernels\.(?P<op>\w+)\(")
MATMUL_EXTERNS = ("mm", "addmm", "bmm", "baddbmm", "_mm_plus_mm", "convolution", "_int_mm", "_scaled_mm")
# GEMM templates (max-autotune): triton_tem_fused_mm_0, cpp templates with "template" in the name
_MATMUL_TEMPLATE = re.compile(r"_tem_|template")


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
    graphs: int = 1
    device: str = "cpu"

    @property
    def kernel_count(self) -> int:
        """Generated kernels launched per call (fused C++ on CPU, Triton on GPU)."""
        return len(self.kernels)

    @property
    def matmuls(self) -> int:
        """Matmul calls: library calls (extern_kernels.mm/addmm/bmm…, ATen fallbacks) plus GEMM templates."""
        templ = sum(1 for k in self.kernels if _MATMUL_TEMPLATE.search(k))
        return sum(1 for op in self.extern_calls + self.fallback_calls if op in MATMUL_EXTERNS) + templ

    @property
    def library_calls(self) -> list[str]:
        """Calls into libraries rather than generated kernels (cuBLAS/oneDNN via extern_kernels,
        ATen fallbacks), in order."""
        return list(self.extern_calls) + [f"aten.{op}" for op in self.fallback_calls]

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
    for module in modules:
        defs += [m.group("name") for m in _KERNEL_DEF.finditer(module)]
    body = call_body(text)
    kernels: list[str] = []
    names = set(defs)
    for line in body.splitlines():
        s = line.strip()
        if s.startswith("#"):
            continue
        m = re.match(r"^(?P<name>[A-Za-z_]\w*)(?:\.run)?\(", s)
        if m and m.group("name") in names:
            kernels.append(m.group("name"))
    code_lines = [ln for ln in body.splitlines() if not ln.strip().startswith("#")]
    extern = [m.group("op") for m in _EXTERN.finditer("\n".join(code_lines))]
    fallback = [m.group("op") for ln in code_lines if (m := _FALLBACK.match(ln.strip()))]
    buffers = []
    for m in _ALLOC.finditer(body):
        shape = re.match(r"\s*(\([^)]*\))", m.group("args"))
        dt = re.search(r"torch\.(\w+)", m.group("args"))
        buffers.append(f"{m.group('buf')} {shape.group(1) if shape else '?'} {dt.group(1) if dt else ''}".strip())
    reused = [f"{m.group('new')} ← {m.group('old')}" for m in _REUSE.finditer(body)]
    return InductorCode(source=text, kernels=kernels, kernel_defs=defs, extern_calls=extern,
                        fallback_calls=fallback, buffers=buffers, reused=reused, graphs=len(modules), device=device)




def inductor_code(fn: Callable, *args: Any, mode: str | None = None, dynamic: bool | None = None,
                  **kwargs: Any) -> InductorCode:
    """Compile ``fn`` with torch.compile (Inductor), run it on ``args``, return its code.

    Uses a fresh copy of ``fn`` so existing compiled wrappers stay warm. Raises DemoError when
    nothing was generated (e.g. the function fell back to eager entirely).
    """
    torch = require_torch()
    if not isinstance(fn, types.FunctionType):
        raise DemoError(f"inductor_code needs a plain Python function, got {type(fn).__name__}")
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
# XLA
# ---------------------------------------------------------------------------------------
_HLO_INSTR = re.compile(
    r"^\s*(?:ROOT\s+)?%?(?P<name>[\w.\-]+)\s*=\s*(?P<shape>\(?[\w\[\],{}:\s()#*]*?\)?)\s+(?P<op>[\w\-]+)\(",
)
_GEMM_CALL = re.compile(r'custom_call_target="(?P<t>[^"]*(?:gemm|matmul|cublas|onednn\$matmul|__onednn|cudnn\$conv)[^"]*)"',
                        re.I)
_CUSTOM_TARGET = re.compile(r'custom_call_target="(?P<t>[^"]*)"')
# custom calls into vendor libraries (cuBLAS / cuBLASLt / cuDNN / hipBLAS / MIOpen / oneDNN / cuFFT …)
_LIBRARY_TARGET = re.compile(r"^__(?:cublas|cudnn|hipblas|miopen|onednn|mkl|cufft|cusolver|xnn)", re.I)
_FUSION_BACKEND = re.compile(r'"(?:fusion_backend_config|fusion_config)"\s*:\s*\{\s*"kind"\s*:\s*"(?P<k>[^"]+)"')


@dataclass
class XlaCode:
    """jax.jit's view of a function: jaxpr, StableHLO, optimized HLO and what it contains."""

    jaxpr: str
    stablehlo: str
    hlo: str
    entry: str  # the ENTRY computation of the optimized HLO
    fusions: list[str] = field(default_factory=list)  # "name kind=kLoop" in the entry computation
    matmuls: int = 0  # dot + convolution + GEMM custom calls, anywhere in the module
    library_calls: list[str] = field(default_factory=list)  # entry custom-calls into libraries: "__cublas$gemm"
    transposes: list[str] = field(default_factory=list)  # instructions that move data to a new layout
    entry_ops: list[str] = field(default_factory=list)  # opcodes of the entry computation (params excluded)
    jaxpr_eqns: int = 0
    jaxpr_matmuls: int = 0  # dot_general / conv equations as traced (before any optimisation)
    stablehlo_ops: int = 0
    stablehlo_matmuls: int = 0
    memory: dict[str, int] | None = None
    cost: dict[str, float] | None = None
    backend: str = "cpu"

    @property
    def fusion_count(self) -> int:
        return len(self.fusions)

    @property
    def kernel_count(self) -> int:
        """Operations the entry computation executes (fusions, dots, copies…; not params)."""
        return len(self.entry_ops)

    @property
    def temp_bytes(self) -> int | None:
        return None if self.memory is None else self.memory.get("temp_size_in_bytes")

    def to_dict(self, with_text: bool = False) -> dict[str, Any]:
        d = asdict(self)
        if not with_text:
            for k in ("jaxpr", "stablehlo", "hlo"):
                d.pop(k)
        d.update(fusion_count=self.fusion_count, kernel_count=self.kernel_count)
        return d


_SKIP_OPS = {"parameter", "constant", "bitcast", "get-tuple-element", "tuple"}


def _computations(hlo: str) -> dict[str, list[str]]:
    """Computation name → instruction lines (name ``ENTRY`` for the entry computation).

    An instruction printed over several lines (hand-written HLO, XLA's test files) is joined
    into one line; ``compiled.as_text()`` prints one instruction per line."""
    comps: dict[str, list[str]] = {}
    current: str | None = None
    for line in hlo.splitlines():
        m = re.match(r"^(ENTRY\s+)?%?(?P<name>[\w.\-]+)\s.*\{\s*$", line)
        if m and not line.startswith(" ") and "=" not in line.split("(")[0]:
            current = "ENTRY" if m.group(1) else m.group("name")
            comps[current] = []
            continue
        if line.startswith("}"):
            current = None
            continue
        if current is not None and line.strip():
            body = comps[current]
            if body and not _complete(body[-1]):
                body[-1] = f"{body[-1]} {line.strip()}"
            else:
                body.append(line.strip())
    return comps


def _complete(instr: str) -> bool:
    """Whether an instruction line is whole: brackets closed, no trailing comma, an opcode call."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', instr)  # brackets inside strings do not count
    if text.rstrip().endswith(",") or text.count("(") != text.count(")") or text.count("{") != text.count("}"):
        return False
    return _opcode(instr) is not None


def _opcode(line: str) -> str | None:
    m = _HLO_INSTR.match(line)
    if m:
        return m.group("op")
    # fallback: "name = shape opcode(" with complicated tuple shapes
    m = re.search(r"=\s*.*?\}?\s+([a-z][\w\-]*)\(", line)
    return m.group(1) if m else None


def parse_hlo(text: str) -> dict[str, Any]:
    """Counts in an optimized HLO module: fusions, matmuls, transposes, entry ops."""
    comps = _computations(text)
    entry = comps.get("ENTRY", [])
    fusions, entry_ops, transposes, library = [], [], [], []
    for line in entry:
        op = _opcode(line)
        if op is None or op in _SKIP_OPS:
            continue
        entry_ops.append(op)
        name = line.replace("ROOT ", "").split("=")[0].strip().lstrip("%")
        if op == "fusion":
            kind = re.search(r"kind=(\w+)", line)
            backend = _FUSION_BACKEND.search(line)  # "__triton_gemm", "__cudnn$fusion", "__ynn_fusion"…
            fusions.append(f"{name} {kind.group(0) if kind else ''}".strip()
                           + (f" {backend.group('k')}" if backend else ""))
        elif op == "custom-call":
            target = _CUSTOM_TARGET.search(line)
            if target and _LIBRARY_TARGET.match(target.group("t")):
                library.append(target.group("t"))
    matmuls = 0
    for lines in comps.values():
        for line in lines:
            op = _opcode(line)
            if op in ("dot", "convolution"):
                matmuls += 1
            elif op == "custom-call" and _GEMM_CALL.search(line):
                matmuls += 1
            if op == "transpose":
                transposes.append(_shorten(line))
    return {
        "entry": "\n".join(entry),
        "fusions": fusions,
        "entry_ops": entry_ops,
        "matmuls": matmuls,
        "transposes": transposes,
        "library_calls": library,
    }


def _layout_or_empty(m: "re.Match[str]") -> str:
    dims = [int(d) for d in m.group(1).split(",") if d]
    return "" if dims == sorted(dims, reverse=True) else m.group(0)


def _shorten(line: str, width: int = 140) -> str:
    line = re.sub(r",?\s*metadata=\{[^}]*\}", "", line)
    line = re.sub(r",?\s*backend_config=\{.*\}$", "", line)
    line = re.sub(r",?\s*operand_precision=\{[^}]*\}", "", line)
    line = re.sub(r",?\s*(?:calls|kind)=[%\w.\-]+", "", line)
    line = re.sub(r"(?<=\])\{([\d,]+)\}", _layout_or_empty, line)  # drop default row-major layouts
    return line if len(line) <= width else line[: width - 1] + "…"


def _memory_dict(compiled: Any) -> dict[str, int] | None:
    try:
        m = compiled.memory_analysis()
    except Exception:
        return None
    if m is None:
        return None
    keys = ("argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes", "temp_size_in_bytes",
            "generated_code_size_in_bytes")
    out = {k: int(getattr(m, k)) for k in keys if hasattr(m, k)}
    return out or None


def _cost_dict(compiled: Any) -> dict[str, float] | None:
    try:
        c = compiled.cost_analysis()
    except Exception:
        return None
    if isinstance(c, (list, tuple)):
        c = c[0] if c else None
    if not c:
        return None
    keep = ("flops", "transcendentals", "bytes accessed", "optimal_seconds")
    return {k: float(c[k]) for k in keep if k in c}


def xla_code(fn: Callable, *args: Any, static_argnums: tuple[int, ...] = ()) -> XlaCode:
    """Lower and compile ``jax.jit(fn)`` for ``args`` (nothing runs) and describe the result."""
    jax = require_jax()
    jitted = jax.jit(fn, static_argnums=static_argnums)
    lowered = jitted.lower(*args)
    compiled = lowered.compile()
    hlo = compiled.as_text() or ""
    stablehlo = lowered.as_text()
    try:
        jaxpr = jax.make_jaxpr(fn, static_argnums=static_argnums)(*args)
        jaxpr_text, eqns = str(jaxpr), len(jaxpr.jaxpr.eqns)
        jaxpr_mm = sum(1 for e in jaxpr.jaxpr.eqns if e.primitive.name in ("dot_general", "conv_general_dilated"))
    except Exception:
        jaxpr_text, eqns, jaxpr_mm = "", 0, 0
    parsed = parse_hlo(hlo)
    shlo_ops = len(re.findall(r"=\s*stablehlo\.\w+", stablehlo))
    shlo_mm = len(re.findall(r"=\s*stablehlo\.(?:dot_general|dot|convolution)\b", stablehlo))
    try:
        backend = jax.default_backend()
    except Exception:
        backend = "cpu"
    return XlaCode(jaxpr=jaxpr_text, stablehlo=stablehlo, hlo=hlo, entry=parsed["entry"],
                   fusions=parsed["fusions"], matmuls=parsed["matmuls"], transposes=parsed["transposes"],
                   library_calls=parsed["library_calls"],
                   entry_ops=parsed["entry_ops"], jaxpr_eqns=eqns, jaxpr_matmuls=jaxpr_mm,
                   stablehlo_ops=shlo_ops, stablehlo_matmuls=shlo_mm,
                   memory=_memory_dict(compiled), cost=_cost_dict(compiled), backend=backend)


# ---------------------------------------------------------------------------------------
# Seed workloads, cached
# ---------------------------------------------------------------------------------------
_CACHE: dict[tuple, Any] = engine_cache("introspection.codegen._CACHE", {})


def clear_cache() -> None:
    _CACHE.clear()


def _key(kind: str, workload: str, params: dict | None, dtype: str, device: str | None, extra: Any = None):
    from demos.engine.devices import torch_device
    from demos.engine.workloads import get

    device = device or torch_device()
    w = get(workload)
    p = w.resolve(params, "cpu" if device == "cpu" else "gpu")
    return (kind, w.name, tuple(sorted(p.items())), dtype, device, extra), w, p, device


def workload_inductor_code(workload: str, params: dict | None = None, dtype: str = "float32",
                           device: str | None = None, mode: str | None = None,
                           dynamic: bool | None = False) -> InductorCode:
    """Inductor's code for a seed workload at these sizes (cached).

    ``dynamic=False`` (default) asks for code specialised to these sizes, so the text shows
    real shapes; pass None to let torch.compile decide as the live wrappers do."""
    from demos.engine.workloads import prepare

    key, w, p, device = _key("inductor", workload, params, dtype, device, (mode, dynamic))
    if key not in _CACHE:
        prep = prepare(w, "torch_eager", p, dtype, device)
        _CACHE[key] = inductor_code(w.torch_fn, *prep.args, mode=mode, dynamic=dynamic)
    return _CACHE[key]


def workload_xla_code(workload: str, params: dict | None = None, dtype: str = "float32",
                      device: str | None = None) -> XlaCode:
    """XLA's code for a seed workload at these sizes (cached; lowering only, nothing runs)."""
    from demos.engine.workloads import prepare

    key, w, p, device = _key("xla", workload, params, dtype, device)
    if key not in _CACHE:
        prep = prepare(w, "jax_eager", p, dtype, device)
        _CACHE[key] = xla_code(w.jax_fn, *prep.args)
    return _CACHE[key]


# ---------------------------------------------------------------------------------------
# Showing code on a slide
# ---------------------------------------------------------------------------------------
def excerpt(text: str, patterns: Iterable[str], max_lines: int = 8, width: int = 110,
            context: int = 0) -> list[str]:
    """The lines of ``text`` matching any regex in ``patterns`` (metadata stripped, shortened)."""
    pats = [re.compile(p) for p in patterns]
    lines = text.splitlines()
    keep: list[int] = []
    for i, line in enumerate(lines):
        if any(p.search(line) for p in pats):
            for j in range(max(0, i - context), min(len(lines), i + context + 1)):
                if j not in keep:
                    keep.append(j)
    out = [_shorten(lines[i].strip(), width) for i in keep]
    return out[:max_lines]


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


def strip_hlo(line: str) -> str:
    """An HLO line without metadata, backend/frontend attributes, operand precision and layouts."""
    for pat in (r",?\s*metadata=\{[^}]*\}", r",?\s*backend_config=\{.*\}\s*$", r",?\s*frontend_attributes=\{[^}]*\}",
                r",?\s*operand_precision=\{[^}]*\}", r"\{[0-9,]*\}(?=[\s,)])"):  # the last: layouts {1,0}
        line = re.sub(pat, "", line)
    return line.rstrip()


def hlo_excerpt(hlo: str) -> list[str]:
    """Optimized HLO: fused computations (the kernels) first, then ENTRY; metadata stripped."""
    blocks: list[list[str]] = []
    current: list[str] | None = None
    for line in hlo.splitlines():
        if re.match(r"^(ENTRY\s+)?%[\w.\-]+\s.*\{\s*$", line):
            current = [line]
        elif current is not None:
            current.append(line)
            if line.startswith("}"):
                blocks.append(current)
                current = None
    entry = [b for b in blocks if b[0].startswith("ENTRY")]
    fused = [b for b in blocks if b not in entry and ("fused" in b[0] or "fusion" in b[0])]
    rest = len(blocks) - len(entry) - len(fused)
    out = [s for b in fused + entry for s in map(strip_hlo, b)
           if not re.search(r"\bparameter\(\d+\)", s)]  # parameters folded: the signature names them
    return out + ([f"// ({rest} helper computations folded: reducers, comparators)"] if rest else [])


def stablehlo_excerpt(text: str) -> list[str]:
    """StableHLO without locations, result-info attributes and the module wrapper, dedented."""
    out = []
    for line in text.splitlines():
        s = re.sub(r"\s*loc\(.*?\)\s*$", "", line.rstrip())
        s = re.sub(r"\s*\{jax\.result_info = \"[^\"]*\"\}", "", s)
        if (not s.strip() or s.strip().startswith("#loc") or s.startswith("module @")
                or (s.strip() == "}" and not s.startswith("  "))):
            continue
        out.append(s[2:] if s.startswith("  ") else s)
    return out
