"""XLA's view of a jax.jit function (jaxpr, StableHLO, optimized HLO), parsed into counts and
folded for a slide.

:func:`xla_code` lowers and compiles ``jax.jit(fn)`` for example arguments (nothing runs) and
returns an :class:`XlaCode`: the jaxpr, StableHLO and optimized HLO text, and ``fusions``
(fusion instructions in the entry computation), ``matmuls`` (``dot``/``convolution`` plus GPU
GEMM custom calls), ``library_calls`` (entry custom-calls into cuBLAS/cuDNN/…, e.g.
``__cublas$gemm``; Triton GEMM fusions are generated code and listed with their backend kind
among ``fusions``), ``transposes``, ``memory`` (``memory_analysis()``) and ``cost``
(``cost_analysis()``) where the backend provides them.

:func:`parse_hlo` is a pure function of HLO text, usable on HLO captured any other way.
:func:`donation` compiles and calls a function with ``donate_argnums`` and reports which input
buffers the output took over (:func:`aliased_parameters` reads them from the HLO header).
For slides: :func:`excerpt` picks the lines matching some patterns (shortened by
:func:`shorten`: metadata and default layouts dropped), :func:`hlo_excerpt` shows a whole
optimized module (fused computations first, metadata stripped by :func:`strip_hlo`) and
:func:`stablehlo_excerpt` a StableHLO module without locations. The JAX APIs used are public.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable

from demos.engine.devices import require_jax

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
    def temp_bytes(self) -> int | None:
        """The scratch memory XLA allocates for one call, in bytes (None where not reported)."""
        return None if self.memory is None else self.memory.get("temp_size_in_bytes")

    @property
    def fusion_count(self) -> int:
        return len(self.fusions)

    @property
    def kernel_count(self) -> int:
        """Operations the entry computation executes (fusions, dots, copies…; not params)."""
        return len(self.entry_ops)

    def to_dict(self, with_text: bool = False) -> dict[str, Any]:
        texts = () if with_text else ("jaxpr", "stablehlo", "hlo")
        d = {k: v for k, v in asdict(self).items() if k not in texts}
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
                transposes.append(shorten(line))
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


def shorten(line: str, width: int = 140) -> str:
    """A code line for a slide: HLO's metadata, backend config, operand precision and ``calls``/
    ``kind`` attributes dropped, default (row-major) layouts dropped, cut to ``width`` with "…"."""
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


_ALIAS = re.compile(r"input_output_alias=\{(?P<body>.*?)\}\s*,\s*entry_computation_layout")


def aliased_parameters(hlo: str) -> list[int]:
    """The parameters whose buffers the module's output may take over (HLO's module header
    ``input_output_alias={ {}: (0, {}, may-alias) }``), in order; [] when there is no alias."""
    head = hlo.split("\n", 1)[0]
    m = _ALIAS.search(head)
    return sorted({int(p) for p in re.findall(r":\s*\((\d+),", m.group("body"))}) if m else []


def donation(fn: Callable, make_args: Callable[[], tuple], donate_argnums: tuple[int, ...] = ()) -> dict[str, Any]:
    """``jax.jit(fn, donate_argnums=…)`` compiled and called once on fresh arguments from
    ``make_args()``: ``memory_analysis()`` (argument, output, temp and alias bytes), the
    parameters the output aliases (from the optimized HLO), which arguments were deleted by the
    call (``is_deleted()``: their buffer was handed over), and JAX's warning when a donated
    buffer could not be used, or donation is not implemented on the backend (else None)."""
    import warnings

    jax = require_jax()
    args = make_args()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = jax.jit(fn, donate_argnums=donate_argnums).lower(*args).compile()
        out = compiled(*args)
        jax.block_until_ready(out)
    notes = [str(w.message).splitlines()[0] for w in caught if "donat" in str(w.message).lower()]
    return {"donate_argnums": list(donate_argnums), "memory": _memory_dict(compiled) or {},
            "aliased": aliased_parameters(compiled.as_text() or ""),
            "deleted": [bool(a.is_deleted()) for a in args], "warning": notes[0] if notes else None}


# ---------------------------------------------------------------------------------------
# Showing the code on a slide
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
    out = [shorten(lines[i].strip(), width) for i in keep]
    return out[:max_lines]


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
