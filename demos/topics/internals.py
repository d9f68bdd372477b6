"""Part 4 — inside the compilers: capture, guards, graph breaks, generated code and IRs.

Two bets on one page (seed card 004, §02–§03): ``torch.compile`` captures Python bytecode
with Dynamo, guards its assumptions, breaks the graph where it cannot capture and lets
Inductor generate the kernels (Triton on a GPU, C++/OpenMP on a CPU); ``jax.jit`` traces a
pure, shape-static function to a jaxpr, lowers it to StableHLO and lets XLA optimise the whole
program (fusions in the optimized HLO).

Four live demos, each declared once (:class:`demos.deck.demo.Demo`) from a ``measure_*``
(JSON-able data) and a pure ``figure_*``:

``pipeline()``      a workload through both compilers, one stage per side as highlighted
                    excerpts (kernel bodies first, boilerplate folded) with counts: graphs,
                    guards, generated kernels, HLO fusions. The stage buttons only redraw.
``guards()``        the guards Dynamo recorded for a call, in plain words; then one property of
                    the input changes and the figure shows the guard that failed.
``graph_breaks()``  a data-dependent ``if`` and a ``print``: Dynamo's explanation (graphs,
                    breaks, reason, source line) next to what ``jax.jit`` does with the same
                    function (an expected error, shown on purpose); then the fixed versions.
``capture_cost()``  eager vs compiled for the broken function and its fixes, measured.

How the compilers are asked (checked in torch 2.13 / JAX 0.10): graph breaks come from
``torch._dynamo.backends.debugging.ExplainWithBackend`` — the same data as
``torch._dynamo.explain(fn)(*args)`` without the ``torch._dynamo.reset()`` ``explain``
performs (it would throw away every other compiled function of the session); guards come from
Dynamo's ``guards`` log (its guard tree), failed guards from its ``recompiles`` log, both
captured through logging handlers without printing anything. Every capture compiles a fresh
copy of the function (a new code object), so re-running a cell gives the same answer.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import io
import json
import logging
import re
import textwrap
import time
import types
from typing import Any, Callable

from demos.deck.demo import Choice, Demo, Pow2, Progress
from demos.engine import plots
from demos.engine.devices import device_kind, require_jax, require_torch, set_threads, torch_device
from demos.engine.errors import DemoError, one_line, unknown_name
from demos.engine.timing import first_call, fmt_seconds, measure, sync_for
from demos.engine.workloads import tolerance

PART = 4

DTYPES = ("float32", "bfloat16")
TORCH_STAGES = ("FX graph", "guards", "generated code")
JAX_STAGES = ("jaxpr", "StableHLO", "optimized HLO")
PIPELINE_WORKLOADS = ("complex_activation", "chain", "two_matmuls", "mlp_block", "mlp_dead_code")


def _quiet(_fraction: float, _message: str = "") -> None:
    pass


# =======================================================================================
# The example functions: a data-dependent branch, a print, and their fixes (torch / JAX twins)
# =======================================================================================
LOG = io.StringIO()  # where the examples' print writes (read by jit_attempt, never the console)


def branch_torch(x):
    y = torch.sin(x) * 2.0
    if y.sum() > 0:  # a Python bool of a tensor value
        return torch.relu(torch.cos(y) * x + 1.0)
    return torch.relu(torch.tanh(y) * x - 1.0)


def print_torch(x):
    y = torch.sin(x) * 2.0
    print("checkpoint:", y.shape, file=LOG)
    return torch.relu(torch.cos(y) * x + 1.0)


def where_torch(x):
    y = torch.sin(x) * 2.0
    pos = torch.relu(torch.cos(y) * x + 1.0)
    neg = torch.relu(torch.tanh(y) * x - 1.0)
    return torch.where(y.sum() > 0, pos, neg)


def _pos_torch(y, x):
    return torch.relu(torch.cos(y) * x + 1.0)


def _neg_torch(y, x):
    return torch.relu(torch.tanh(y) * x - 1.0)


def cond_torch(x):
    y = torch.sin(x) * 2.0
    return torch.cond(y.sum() > 0, _pos_torch, _neg_torch, (y, x))


def branch_jax(x):
    y = jnp.sin(x) * 2.0
    if y.sum() > 0:  # a Python bool of a traced value
        return jax.nn.relu(jnp.cos(y) * x + 1.0)
    return jax.nn.relu(jnp.tanh(y) * x - 1.0)


def print_jax(x):
    y = jnp.sin(x) * 2.0
    print("checkpoint:", y, file=LOG)
    return jax.nn.relu(jnp.cos(y) * x + 1.0)


def where_jax(x):
    y = jnp.sin(x) * 2.0
    pos = jax.nn.relu(jnp.cos(y) * x + 1.0)
    neg = jax.nn.relu(jnp.tanh(y) * x - 1.0)
    return jnp.where(y.sum() > 0, pos, neg)


def _pos_jax(y, x):
    return jax.nn.relu(jnp.cos(y) * x + 1.0)


def _neg_jax(y, x):
    return jax.nn.relu(jnp.tanh(y) * x - 1.0)


def cond_jax(x):
    y = jnp.sin(x) * 2.0
    return jax.lax.cond(y.sum() > 0, _pos_jax, _neg_jax, y, x)


def _bind_frameworks(need_jax: bool = False) -> None:
    """torch / jax / jnp become this module's globals on first use (importing demos stays cheap)."""
    g = globals()
    if "torch" not in g:
        g["torch"] = require_torch()
    if need_jax and "jax" not in g:
        g["jax"] = require_jax()
        import jax.numpy as _jnp

        g["jnp"] = _jnp


VARIANTS: dict[str, dict[str, Any]] = {
    "branch": dict(torch=branch_torch, jax=branch_jax, fixed=False, title="data-dependent branch"),
    "print": dict(torch=print_torch, jax=print_jax, fixed=False, title="side effect: print"),
    "where": dict(torch=where_torch, jax=where_jax, fixed=True, title="fixed: torch.where / jnp.where"),
    "cond": dict(torch=cond_torch, jax=cond_jax, fixed=True, title="fixed: torch.cond / lax.cond"),
}


def _fresh(fn: Callable) -> Callable:
    """The same function with a new code object: Dynamo's and jit's caches start empty for it
    (the same as ``codegen._fresh_copy``, which is private there)."""
    g = types.FunctionType(fn.__code__.replace(), fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    g.__kwdefaults__, g.__qualname__ = fn.__kwdefaults__, fn.__qualname__
    return g


def _variant(name: str) -> dict[str, Any]:
    if name not in VARIANTS:
        raise unknown_name("function", name, VARIANTS)
    return VARIANTS[name]


def _inputs_1d(N: int, dtype: str, sign: float = 1.0):
    """One input vector for the branch examples (torch, on the torch device)."""
    torch_ = require_torch()
    x = torch_.randn(N, generator=torch_.Generator().manual_seed(1)) * sign
    return x.to(device=torch_device(), dtype=getattr(torch_, dtype))


def _to_jax(x):
    jax_ = require_jax()
    import jax.numpy as jnp_

    arr = jnp_.asarray(x.detach().float().cpu().numpy())
    return jax_.device_put(arr.astype(getattr(jnp_, str(x.dtype).replace("torch.", ""))))


def _numpy(out):
    import numpy as np

    return np.asarray(out.detach().float().cpu().numpy() if hasattr(out, "detach") else out.astype("float32"))


# =======================================================================================
# What Dynamo says (guards, recompiles), captured from its logs without printing it
# =======================================================================================
_GUARDS_LOGGER = "torch._dynamo.guards.__guards"
_RECOMPILES_LOGGER = "torch._dynamo.guards.__recompiles"


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[tuple[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append((record.name, record.getMessage()))

    def texts(self, logger: str) -> list[str]:
        return [m for n, m in self.messages if n == logger]


@contextlib.contextmanager
def dynamo_logs():
    """Collect Dynamo's guard trees and recompile reasons for the duration (additively: other
    log settings stay as they are; nothing reaches the console)."""
    require_torch()
    from torch._logging._internal import log_state

    added = "recompiles" not in log_state.artifact_names
    if added:
        log_state.enable_artifact("recompiles")
    cap, saved = _Capture(), []
    for name in (_GUARDS_LOGGER, _RECOMPILES_LOGGER):
        lg = logging.getLogger(name)
        saved.append((lg, lg.level, lg.propagate))
        lg.addHandler(cap)
        lg.setLevel(logging.DEBUG)
        lg.propagate = False
    try:
        yield cap
    finally:
        for lg, level, prop in saved:
            lg.removeHandler(cap)
            lg.setLevel(level)
            lg.propagate = prop
        if added:
            log_state.artifact_names.discard("recompiles")


def guard_trees(cap: _Capture) -> list[str]:
    return [m for m in cap.texts(_GUARDS_LOGGER) if "GUARD_MANAGER" in m or "+- " in m]


_LEAF = re.compile(r"\+-\s+(?P<kind>[A-Z_]+):\s*(?P<code>.*)$")
_TENSOR = re.compile(
    r"check_tensor\(L\['(?P<name>[^']+)'\],\s*\w+,\s*DispatchKeySet\((?P<keys>[^)]*)\),\s*torch\.(?P<dtype>\w+),"
    r"\s*device=(?P<device>[^,]+),\s*requires_grad=(?P<rg>\w+),\s*size=\[(?P<size>[^\]]*)\],\s*stride=\[(?P<stride>[^\]]*)\]"
)


def guard_leaves(tree: str) -> list[tuple[str, str]]:
    """(kind, code) of every check in a guard tree (the managers that group them excluded)."""
    return [(m.group("kind"), re.sub(r"\s+#\s.*$", "", m.group("code")).strip())
            for m in map(_LEAF.search, tree.splitlines()) if m]


def _device_of(keys: str, device: str) -> str:
    for k in (k.strip() for k in keys.split(",")):
        if k in ("CUDA", "MPS", "XPU"):
            return f"{k.lower()}:{device}" if device not in ("None", "") else k.lower()
    return "cpu"


def _global_state(code: str) -> str:
    try:
        st = json.loads(code[code.index("{"):])
    except ValueError:
        st = {}
    bits = []
    if "grad_mode" in st:
        bits.append("grad mode " + ("on" if st["grad_mode"] else "off"))
    if "num_threads" in st:
        bits.append(f"{st['num_threads']} threads")
    if st.get("autocast_state", {}).get("enabled") is not None:
        bits.append("autocast " + ("on" if any(st["autocast_state"]["enabled"]) else "off"))
    return "global state unchanged" + (f" ({', '.join(bits)})" if bits else "")


_FIXED_WORDS = {"DEFAULT_DEVICE": "no default-device override",
                "TORCH_FUNCTION_MODE_STACK": "no torch-function modes active"}


def plain_guards(tree: str) -> list[str]:
    """The guard tree in plain words: one line per assumption, tensors first."""
    tensors, others, ids, dyn_marks = [], [], [], {}
    for kind, code in guard_leaves(tree):
        if kind == "TENSOR_MATCH":
            m = _TENSOR.search(code)
            if not m:
                tensors.append("tensor: " + code[:80])
                continue
            rg = "" if m.group("rg") == "False" else ", requires grad"
            tensors.append(f"{m.group('name')}: {m.group('dtype')} on {_device_of(m.group('keys'), m.group('device'))}, "
                           f"shape [{m.group('size').replace(' ', '')}], stride [{m.group('stride').replace(' ', '')}]{rg}")
        elif kind == "DIMENSION_DYNAMIC_MARKING_GUARD":
            n = re.search(r"L\['([^']+)'\]", code)
            dyn_marks[n.group(1) if n else "?"] = dyn_marks.get(n.group(1) if n else "?", 0) + 1
        elif kind == "NO_TENSOR_ALIASING":
            names = re.findall(r"L\['([^']+)'\]", code)
            if names:
                others.append(f"{' and '.join(names)} do not share memory")
        elif kind == "ID_MATCH":
            n = re.search(r"___check_obj_id\((?P<obj>[^,]+),", code)
            if n:
                ids.append(n.group("obj").replace("G['", "").replace("']", "").replace("__import_", ""))
        elif kind == "GLOBAL_STATE":
            others.append(_global_state(code))
        elif kind in _FIXED_WORDS:
            others.append(_FIXED_WORDS[kind])
        elif kind == "LAMBDA_GUARD" and "saved_tensors_hooks" in code:
            others.append("no saved-tensor hooks")
        else:
            others.append(f"{kind.lower()}: {code[:70]}")
    out = tensors + [f"{name}: no dynamic-shape marks ({n} checks)" for name, n in dyn_marks.items()]
    if ids:
        out.append("same objects: " + (", ".join(i for i in ids if "." in i) or ", ".join(ids)))
    return out + others


def failed_guard(message: str) -> str:
    """The first failed guard of a 'Recompiling function …' message, without its id."""
    for line in message.splitlines():
        if line.strip().startswith("- "):
            return re.sub(r"^\d+/\d+:\s*", "", line.strip()[2:])
    return ""


def plain_reason(reason: str) -> str:
    """Dynamo's break reason, in plain words."""
    r, low = reason.strip(), reason.lower()
    if "generic_jump" in low or "data-dependent" in low or "data dependent" in low:
        return "data-dependent branch: Python needs a bool from a tensor's value"
    if "print" in low:
        return "side effect: print() cannot be put in a graph"
    if "builtin operator" in low:
        m = re.search(r"builtin operator `(\w+)`", r)
        return f"unsupported Python builtin{(' ' + m.group(1)) if m else ''}"
    return r.splitlines()[0][:100] if r else "?"


# =======================================================================================
# Generated code and IR, made readable (kernel bodies first, boilerplate folded)
# =======================================================================================
def _fold_cpp(body: str) -> list[str]:
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


def _fold_triton(body: str) -> list[str]:
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


def generated_excerpt(code) -> list[str]:
    """Inductor's output, kernel bodies first, then the wrapper's call() (boilerplate folded)."""
    from demos.introspection.codegen import call_body

    kernels = [(m.group("name"), m.group("kind"), m.group("body")) for m in _ASYNC_KERNEL.finditer(code.source)]
    lang = {"cpp": "C++", "cpp_pybinding": "C++/OpenMP", "triton": "Triton"}
    lines: list[str] = []
    for i, (name, kind, body) in enumerate(kernels):
        lines.append(f"# kernel {i + 1}/{len(kernels)}: {name} ({lang.get(kind, kind)})")
        lines += _fold_cpp(body) if kind.startswith("cpp") else _fold_triton(body)
    lines.append("# wrapper: call(args) — launches and allocations in order")
    return lines + [ln for ln in call_body(code.source).splitlines()
                    if ln.strip() and not ln.strip().startswith(_WRAPPER_NOISE)]


def _strip_hlo(line: str) -> str:
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
    out = [s for b in fused + entry for s in map(_strip_hlo, b)
           if not re.search(r"\bparameter\(\d+\)", s)]  # parameters folded: the signature names them
    return out + ([f"// ({rest} helper computations folded: reducers, comparators)"] if rest else [])


def stablehlo_excerpt(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        s = re.sub(r"\s*loc\(.*?\)\s*$", "", line.rstrip())
        s = re.sub(r"\s*\{jax\.result_info = \"[^\"]*\"\}", "", s)
        if (not s.strip() or s.strip().startswith("#loc") or s.startswith("module @")
                or (s.strip() == "}" and not s.startswith("  "))):
            continue
        out.append(s[2:] if s.startswith("  ") else s)
    return out


# =======================================================================================
# Drawing code with syntax colours (monospace layers, one per colour, rasterised by PIL)
# =======================================================================================
CODE_COLORS = {"text": "#1a1a1a", "comment": "#6a737d", "string": "#a31515", "keyword": "#7d3c98",
               "call": "#0057a8", "shape": "#007a5e", "number": "#b35900", "var": "#444444"}
_TOKEN = re.compile(
    r"(?P<comment>(?:#|//)(?!include).*$)"
    r"|(?P<string>'[^']*'|\"[^\"]*\")"
    r"|(?P<shape>\b(?:f|bf|s|u|pred|i)\d*\[[^\]]*\]|tensor<[^>]*>|\bf32\b|\bbf16\b|\bfloat32\b|\bbfloat16\b)"
    r"|(?P<keyword>\b(?:def|return|for|if|else|in|let|lambda|auto|const|ROOT|ENTRY|fusion|func\.func|kind|calls|with|"
    r"tl\.\w+|extern|void|float|int64_t|public)\b)"
    r"|(?P<call>[A-Za-z_][\w.]*(?=\())"
    r"|(?P<var>%[\w.\-#]+)"
    r"|(?P<number>\b\d+(?:\.\d+)?(?:[eE][-+]?\d+)?\b)",
    re.M,
)


def color_layers(lines: list[str]) -> dict[str, list[str]]:
    """Split lines into one same-width layer per colour (spaces elsewhere): monospace text
    drawn layer over layer lines up exactly, one draw call per colour and line."""
    layers: dict[str, list[str]] = {k: [] for k in CODE_COLORS}
    for line in lines:
        kinds = ["text"] * len(line)
        for m in _TOKEN.finditer(line):
            kinds[m.start():m.end()] = [m.lastgroup or "text"] * (m.end() - m.start())
        for k in CODE_COLORS:
            layers[k].append("".join(ch if kd == k else " " for ch, kd in zip(line, kinds)).rstrip())
    return {k: rows for k, rows in layers.items() if any(r.strip() for r in rows)}


@functools.lru_cache(maxsize=None)
def _mono_font(px: int, bold: bool = False):
    from matplotlib.font_manager import FontProperties, findfont
    from PIL import ImageFont

    return ImageFont.truetype(findfont(FontProperties(family="DejaVu Sans Mono", weight="bold" if bold else "normal")), px)


def draw_code(fig, x0: float, y_top: float, width: float, height: float, lines: list[str], *,
              fontsize: float = 10.0, mark: set[int] | None = None) -> int:
    """Draw ``lines`` as coloured monospace code in a box of figure coordinates, clipped to
    it (long lines end in …; the last line says how many more); lines in ``mark`` get a
    highlighted background. Returns how many lines were drawn.

    The box is rasterised with PIL and placed as one image: matplotlib 3.11's Agg renders text
    glyph by glyph (~0.3 ms each here), which made a page of code cost a second per redraw."""
    import numpy as np
    from PIL import Image, ImageDraw

    W, H = fig.get_size_inches() * plots.DPI
    font, bold = _mono_font(round(fontsize * plots.DPI / 72)), _mono_font(round(fontsize * plots.DPI / 72), True)
    cw, lh = font.getlength("M"), fontsize * 1.32 * plots.DPI / 72.0
    max_chars, max_lines = max(10, int(width * W / cw) - 1), max(1, int(height * H / lh))
    shown = [ln if len(ln) <= max_chars else ln[:max_chars - 1] + "…" for ln in lines[:max_lines]]
    if len(lines) > max_lines:
        shown[-1] = f"… {len(lines) - max_lines + 1} more lines"
    img = Image.new("RGB", (int(width * W), max(1, round(len(shown) * lh))), "white")
    draw = ImageDraw.Draw(img)
    for i in sorted(i for i in (mark or ()) if i < len(shown)):
        draw.rectangle((0, round(i * lh), img.width, round((i + 1) * lh)), fill="#ffe9b3")
    for kind, layer in color_layers(shown).items():
        for i, text in enumerate(layer):
            if text.strip():
                draw.text((0, round(i * lh)), text, font=bold if kind == "call" else font, fill=CODE_COLORS[kind])
    fig.figimage(np.asarray(img), xo=int(x0 * W), yo=int(y_top * H) - img.height, origin="upper")
    return len(shown)


def _two_columns(fig) -> None:
    from matplotlib.lines import Line2D

    fig.add_artist(Line2D([0.5, 0.5], [0.06, 0.98], transform=fig.transFigure, color="#cccccc", lw=1))


def _where(d: dict) -> str:
    return d.get("machine_short", "recorded") if d.get("recorded") else "here"


# =======================================================================================
# 1. The pipeline: both compilers, stage by stage
# =======================================================================================
_PIPE_CACHE: dict[tuple, dict[str, Any]] = {}
MAX_LINES = 400  # kept per stage in a measurement (figures show the first ~24; a record keeps 60)


def _sizes(workload: str, size: str) -> dict[str, int]:
    from demos.engine.workloads import get

    w = get(workload)
    if size == "small":
        return {p.name: p.quick for p in w.params}
    if size != "default":
        raise DemoError(f"size must be 'default' or 'small', not {size!r}")
    return w.defaults(device_kind())


def torch_capture(fn: Callable, *args: Any, dynamic: bool | None = False) -> dict[str, Any]:
    """Dynamo's capture of ``fn(*args)``: FX graphs (code), graph count, guards (raw + plain)."""
    graphs: list[str] = []

    def backend(gm, _example_inputs):
        graphs.append(gm.code.strip("\n"))
        return gm.forward

    with dynamo_logs() as cap:
        require_torch().compile(_fresh(fn), backend=backend, dynamic=dynamic)(*args)
    tree = (guard_trees(cap) or [""])[-1]
    return {"graphs": graphs, "graph_count": len(graphs), "guard_tree": tree,
            "guard_count": len(guard_leaves(tree)), "guards_plain": plain_guards(tree)}


def measure_pipeline(workload: str = "complex_activation", size: str = "default", dtype: str = "float32",
                     progress: Progress | None = None, fresh: bool = False) -> dict[str, Any]:
    """Both compilers' stages for one workload at these sizes (cached per sizes/dtype/device).
    A side that cannot run (JAX missing, dtype unsupported) carries an ``error`` line instead."""
    from demos.engine.workloads import get, prepare
    from demos.introspection import codegen

    w = get(workload)
    params, device = _sizes(w.name, size), torch_device()
    key = (w.name, tuple(sorted(params.items())), dtype, device)
    if key in _PIPE_CACHE and not fresh:
        return dict(_PIPE_CACHE[key])
    progress = progress or _quiet
    data: dict[str, Any] = {"workload": w.name, "params": params, "dtype": dtype, "device": device, "size": size,
                            "extra": f"{w.name}, {', '.join(f'{k}={v:,}' for k, v in params.items())}, {dtype}"}
    t0 = time.perf_counter()
    try:
        progress(0.05, f"Dynamo: capturing {w.name}…")
        cap = torch_capture(w.torch_fn, *prepare(w, "torch_eager", params, dtype, device).args)
        progress(0.3, f"Inductor: generating code for {w.name} (seconds when cold)…")
        code = codegen.workload_inductor_code(w.name, params, dtype, device)
        data["torch"] = {
            "stages": {"FX graph": "\n\n".join(cap["graphs"]).splitlines()[:MAX_LINES],
                       "guards": cap["guards_plain"], "generated code": generated_excerpt(code)[:MAX_LINES]},
            "counts": {"graphs": cap["graph_count"], "guards": cap["guard_count"],
                       "kernels": code.kernel_count, "library calls": len(code.extern_calls)},
            "kernels": list(code.kernels), "extern_calls": list(code.extern_calls),
            "kernel_lang": {"cuda": "Triton", "cpu": "C++/OpenMP"}.get(code.device, code.device),
        }
    except Exception as exc:  # one line on the figure; the other side still shows
        data["torch"] = {"error": one_line(exc)}
    try:
        progress(0.7, f"XLA: lowering and compiling {w.name}…")
        xc = codegen.workload_xla_code(w.name, params, dtype, device)
        data["jax"] = {
            "stages": {"jaxpr": xc.jaxpr.splitlines()[:MAX_LINES], "StableHLO": stablehlo_excerpt(xc.stablehlo)[:MAX_LINES],
                       "optimized HLO": hlo_excerpt(xc.hlo)[:MAX_LINES]},
            "counts": {"jaxpr eqns": xc.jaxpr_eqns, "StableHLO ops": xc.stablehlo_ops,
                       "HLO fusions": xc.fusion_count, "HLO ops": xc.kernel_count},
            "fusions": list(xc.fusions), "backend": xc.backend,
        }
    except Exception as exc:
        data["jax"] = {"error": one_line(exc)}
    data["seconds"] = time.perf_counter() - t0
    _PIPE_CACHE[key] = data
    return dict(data)


def _slim_pipeline(data: dict[str, Any], keep: int = 60) -> dict[str, Any]:
    """A record keeps the first ``keep`` lines of each stage (a figure shows ~24)."""
    d = json.loads(json.dumps(data, default=str))
    for side in ("torch", "jax"):
        stages = d.get(side, {}).get("stages", {})
        stages.update({k: v[:keep] for k, v in stages.items()})
    return d


def _counts_line(counts: dict[str, Any]) -> str:
    return " · ".join(f"{k} {v}" for k, v in counts.items())


def figure_pipeline(data: dict[str, Any], reference: dict[str, Any] | None = None):
    """Two columns: torch.compile's stage (left) and jax.jit's stage (right), with counts; the
    stages come from ``data["values"]`` (view-only controls)."""
    values = data.get("values", {})
    stages = (values.get("torch_stage", "generated code"), values.get("jax_stage", "optimized HLO"))
    for stage, valid in zip(stages, (TORCH_STAGES, JAX_STAGES)):
        if stage not in valid:
            raise unknown_name("stage", stage, valid)
    fig, ax = plots.figure()
    ax.axis("off")
    for i, (name, side_key, stage) in enumerate((("torch.compile", "torch", stages[0]), ("jax.jit", "jax", stages[1]))):
        x0, side = 0.012 + i * 0.5, data.get(side_key, {})
        backend = "torch_compile" if i == 0 else "jax_jit"
        fig.text(x0, 0.975, f"{name} · {stage}", fontsize=14, fontweight="bold", color=plots.color(backend), va="top")
        if "error" in side:
            fig.text(x0, 0.86, "⚠ " + side["error"], fontsize=11, color="#b00020", va="top", wrap=True)
            continue
        fig.text(x0, 0.905, _counts_line(side.get("counts", {})), fontsize=10.5, color="#333333", va="top")
        ref_side, y_top = (reference or {}).get(side_key, {}), 0.855
        if ref_side.get("counts"):
            fig.text(x0, 0.86, f"recorded on {_where(reference)}: " + _counts_line(ref_side["counts"]), fontsize=9,
                     color=plots.PALETTE["reference"], va="top")
            y_top = 0.815
        draw_code(fig, x0, y_top, 0.475, y_top - 0.06, side.get("stages", {}).get(stage, []), fontsize=9.5)
    _two_columns(fig)
    plots.stamp_figure(fig, data, reference)
    return fig


pipeline = Demo(
    "pipeline", "Inside the compilers: the pipeline",
    controls=[Choice("workload", "complex_activation", options=PIPELINE_WORKLOADS),
              Choice("torch_stage", "generated code", label="torch.compile", options=TORCH_STAGES, toggle=True, view=True),
              Choice("jax_stage", "optimized HLO", label="jax.jit", options=JAX_STAGES, toggle=True, view=True),
              Choice("dtype", "float32", options=DTYPES),
              Choice("size", "default", options=("default", "small"), toggle=True)],
    measure=measure_pipeline, figure=figure_pipeline, match=("workload", "dtype"),
    record_quick={"size": "small"}, to_record=_slim_pipeline,
    warm=[{"workload": w} for w in PIPELINE_WORKLOADS],
)


# =======================================================================================
# 2. Guards: what Dynamo assumed, and which assumption a changed input broke
# =======================================================================================
CHANGES = ("nothing (same properties)", "dtype → float64", "dtype → bfloat16", "shape → N/2",
           "requires_grad → True", "non-contiguous (stride 2)")
GUARD_N = {"cpu": 2**14, "gpu": 2**20}


def _changed_inputs(change: str, x, y):
    torch_ = require_torch()
    n = x.shape[0] // 2
    return {CHANGES[0]: lambda: (x.clone(), y.clone()),
            CHANGES[1]: lambda: (x.double(), y.double()),
            CHANGES[2]: lambda: (x.to(torch_.bfloat16), y.to(torch_.bfloat16)),
            CHANGES[3]: lambda: (x[:n].clone(), y[:n].clone()),
            CHANGES[4]: lambda: (x.clone().requires_grad_(True), y.clone()),
            CHANGES[5]: lambda: (torch_.stack([x, x], dim=1).reshape(-1)[::2], y.clone())}[change]()


def measure_guards(change: str = "dtype → float64", N: int | None = None, dtype: str = "float32",
                   progress: Progress | None = None) -> dict[str, Any]:
    """Compile ``complex_activation`` (dynamic=False, Dynamo capture only), call it again with the
    same inputs, then with one property changed; report guards, timings and any recompile."""
    from demos.engine.workloads import complex_activation_torch

    if change not in CHANGES:
        raise DemoError(f"unknown change {change!r}; valid: {', '.join(CHANGES)}")
    torch_, progress = require_torch(), progress or _quiet
    set_threads()
    N, device = int(N or GUARD_N[device_kind()]), torch_device()
    gen = torch_.Generator().manual_seed(0)
    x, y = (torch_.randn(N, generator=gen).to(device=device, dtype=getattr(torch_, dtype)) for _ in range(2))
    compiles: list[int] = []

    def backend(gm, _example_inputs):
        compiles.append(len(gm.graph.nodes))
        return gm.forward

    f = torch_.compile(_fresh(complex_activation_torch), backend=backend, dynamic=False)
    sync, calls = sync_for("torch_eager", device), []
    with dynamo_logs() as cap:
        for label, args in (("1st call", (x, y)), ("2nd call, same inputs", (x, y)),
                            (f"3rd call: {change}", _changed_inputs(change, x, y))):
            before, n_msgs = len(compiles), len(cap.messages)
            progress(len(calls) / 3, label)
            secs, _ = first_call(lambda: f(*args), sync)
            reasons = [failed_guard(m) for n, m in cap.messages[n_msgs:] if n == _RECOMPILES_LOGGER]
            calls.append({"label": label, "seconds": secs, "compiled": len(compiles) > before,
                          "reason": reasons[-1] if reasons else ""})
        first_tree = next((t for t in guard_trees(cap) if "+- " in t), "")
    return {"change": change, "N": N, "dtype": dtype, "device": device,
            "guards_plain": plain_guards(first_tree), "guard_count": len(guard_leaves(first_tree)),
            "calls": calls, "compiles": len(compiles), "recompiled": calls[2]["compiled"],
            "failed_guard": calls[2]["reason"], "extra": f"complex_activation, N={N:,}, {dtype}"}


def figure_guards(data: dict[str, Any], reference: dict[str, Any] | None = None):
    """Left: the guards in plain words. Right: three calls' latency (the recorded run's as
    grey diamonds). Bottom: the failed guard."""
    from matplotlib.ticker import NullFormatter

    fig, ax = plots.figure()
    ax.axis("off")
    fig.text(0.012, 0.975, f"Guards Dynamo recorded on the 1st call ({data['guard_count']} checks)", fontsize=13.5,
             fontweight="bold", color=plots.color("torch_compile"), va="top")
    draw_code(fig, 0.012, 0.9, 0.5, 0.64, [f"• {g}" for g in data["guards_plain"]], fontsize=9.5)
    right = fig.add_axes((0.7, 0.36, 0.17, 0.54))
    calls = data["calls"]
    secs = [c["seconds"] for c in calls]
    ref_secs = [c["seconds"] for c in (reference or {}).get("calls", [])][:len(calls)]
    ys = list(range(len(calls)))[::-1]
    right.barh(ys, secs, height=0.6, color=[plots.PALETTE["accent"] if c["compiled"] else plots.color("torch_compile")
                                            for c in calls])
    if ref_secs:
        right.plot(ref_secs, ys[:len(ref_secs)], "D", color=plots.PALETTE["reference"], ms=7)
    lo, hi = min(secs + ref_secs) / 3, max(secs + ref_secs) * 3
    right.set_xscale("log")
    right.xaxis.set_minor_formatter(NullFormatter())  # labels on minor ticks overlap within a decade
    right.set_xlim(lo, hi)
    right.set_yticks(ys)
    right.set_yticklabels([c["label"] if len(c["label"]) < 28 else c["label"][:27] + "…" for c in calls], fontsize=10)
    right.set_xlabel("seconds (log)", fontsize=10)
    right.tick_params(axis="x", labelsize=9)
    right.spines[["top", "right"]].set_visible(False)
    for i, (yv, c) in enumerate(zip(ys, calls)):
        note = [fmt_seconds(c["seconds"]), "compiled" if c["compiled"] else "cache hit"]
        if i < len(ref_secs):
            note.append(f"◆ rec. {fmt_seconds(ref_secs[i])}")
        right.text(hi * 1.1, yv, "\n".join(note), va="center", fontsize=10, clip_on=False)
    right.set_title("three calls, same compiled function", fontsize=11.5)
    if data["recompiled"]:
        msg, col = f"RECOMPILE · failed guard: {data['failed_guard'] or '(reason not logged)'}", "#b00020"
    else:
        msg, col = "no recompile: every guard still holds", "#1b7f3a"
    fig.text(0.012, 0.2, msg, fontsize=13, fontweight="bold", color=col, va="top")
    fig.text(0.012, 0.12, "torch.compile(dynamic=False); backend: Dynamo capture only — guards are Dynamo's "
             "(Part 5 measures Inductor's compile cost)", fontsize=9.5, color="#555555", va="top")
    plots.stamp_figure(fig, data, reference)
    return fig


guards = Demo(
    "guards", "Guards and the recompile they trigger",
    controls=[Choice("change", "dtype → float64", label="then call it with", options=CHANGES)],
    measure=measure_guards, figure=figure_guards, match=("change",),
)


# =======================================================================================
# 3. Graph breaks: Dynamo's explanation next to jax.jit's answer
# =======================================================================================
BREAK_N = {"cpu": 2**12, "gpu": 2**16}
_BREAK_CACHE: dict[tuple, dict[str, Any]] = {}


def explain_torch(fn: Callable, *args: Any) -> dict[str, Any]:
    """Graphs, breaks and reasons for ``fn(*args)`` (ExplainWithBackend on a fresh copy; no reset)."""
    torch_ = require_torch()
    _bind_frameworks()
    from torch._dynamo.backends.debugging import ExplainWithBackend

    eb = ExplainWithBackend("eager")
    t0 = time.perf_counter()
    out = torch_.compile(_fresh(fn), backend=eb)(*args)
    seconds = time.perf_counter() - t0
    ex = eb.output()
    reasons = []
    for r in ex.break_reasons:
        frame = r.user_stack[-1] if r.user_stack else None
        reasons.append({"reason": str(r.reason).strip().splitlines()[0][:200], "plain": plain_reason(str(r.reason)),
                        "line": frame.lineno if frame else None, "source": (frame.line or "").strip() if frame else "",
                        "file": frame.filename if frame else ""})
    return {"graphs": ex.graph_count, "breaks": ex.graph_break_count, "reasons": reasons,
            "ops_per_graph": [len(o) for o in (ex.ops_per_graph or [])], "seconds": seconds, "output": out}


def jit_attempt(fn: Callable, *args: Any) -> dict[str, Any]:
    """What ``jax.jit`` does with ``fn``: runs (and what print() wrote while tracing, over three
    calls), or the expected error as one line."""
    jax_ = require_jax()
    _bind_frameworks(need_jax=True)
    jitted = jax_.jit(_fresh(fn))
    out, error = None, None
    LOG.seek(0)
    LOG.truncate()
    try:
        for _ in range(3):
            out = jitted(*args)
            out.block_until_ready()
    except Exception as exc:  # the expected error, kept as data
        error = exc
    printed = [ln for ln in LOG.getvalue().splitlines() if ln.strip()]
    if error is not None:
        text = [ln.strip() for ln in str(error).splitlines() if ln.strip()]
        return {"ok": False, "error_type": type(error).__name__, "error": text[0][:200] if text else type(error).__name__,
                "printed": printed}
    return {"ok": True, "error_type": "", "error": "", "printed": printed, "output": out}


def source_lines(fn: Callable) -> list[str]:
    """The example's source as shown on the slide, without trailing comments."""
    return [re.sub(r"\s+#.*$", "", ln).rstrip() for ln in inspect.getsource(fn).rstrip("\n").splitlines()]


def measure_breaks(variant: str = "branch", N: int | None = None, dtype: str = "float32",
                   fresh: bool = False, progress: Progress | None = None) -> dict[str, Any]:
    """Dynamo's explanation and jax.jit's answer for one example (cached: both are deterministic)."""
    import numpy as np

    v = _variant(variant)
    _bind_frameworks()
    N = int(N or BREAK_N[device_kind()])
    key = (variant, N, dtype, torch_device())
    if key in _BREAK_CACHE and not fresh:
        return dict(_BREAK_CACHE[key])
    set_threads()
    (progress or _quiet)(0.1, "Dynamo: explaining…")
    x = _inputs_1d(N, dtype)
    ex = explain_torch(v["torch"], x)
    ref = _numpy(v["torch"](x))
    data: dict[str, Any] = {"variant": variant, "N": N, "dtype": dtype, "device": torch_device(),
                            "title": v["title"], "fixed": v["fixed"], "torch_source": source_lines(v["torch"]),
                            "torch_matches": bool(np.allclose(_numpy(ex.pop("output")), ref, **tolerance(dtype))),
                            "torch": ex, "extra": f"{v['title']}, N={N:,}, {dtype}"}
    try:
        _bind_frameworks(need_jax=True)
        ja = jit_attempt(v["jax"], _to_jax(x))
        if ja.get("output") is not None:
            ja["matches"] = bool(np.allclose(_numpy(ja["output"]), ref, **tolerance(dtype)))
        ja.pop("output", None)
        data.update(jax=ja, jax_source=source_lines(v["jax"]))
    except DemoError as exc:
        data.update(jax={"ok": False, "error_type": "missing", "error": str(exc), "printed": []}, jax_source=[])
    _BREAK_CACHE[key] = data
    return dict(data)


def _text_lines(fig, x: float, y: float, lines: list[str], step: float = 0.062, **kw) -> float:
    """Draw lines one under another from y down; return the y below the last."""
    for line in lines:
        fig.text(x, y, line, va="top", **kw)
        y -= step
    return y


def figure_breaks(data: dict[str, Any], reference: dict[str, Any] | None = None):
    """Left: Dynamo's explanation (graphs, breaks, reason, line). Right: what jax.jit does."""
    fig, ax = plots.figure()
    ax.axis("off")
    t, j = data["torch"], data["jax"]
    Y, L, R = 0.6, 0.012, 0.512  # the verdict line, the two columns
    fig.text(L, 0.975, "torch.compile (Dynamo)", fontsize=14, fontweight="bold", color=plots.color("torch_compile"),
             va="top")
    src = data["torch_source"]
    needle = re.sub(r"\s+#.*$", "", t["reasons"][0]["source"]).strip() if t["reasons"] else ""
    draw_code(fig, L, 0.9, 0.475, 0.28, src, fontsize=10,
              mark={i for i, ln in enumerate(src) if needle and ln.strip() == needle})
    fig.text(L, Y, f"graphs: {t['graphs']} · graph breaks: {t['breaks']}", fontsize=15, fontweight="bold",
             color="#b00020" if t["breaks"] else "#1b7f3a", va="top")
    if t["reasons"]:
        r = t["reasons"][0]
        y = _text_lines(fig, L, Y - 0.095, textwrap.wrap("reason: " + r["plain"], 56)[:2], fontsize=11.5) - 0.01
        fig.text(L, y, f"line {r['line']}: {needle[:44]}", fontsize=11, family="DejaVu Sans Mono", color="#7a4f00",
                 va="top")
        fig.text(L, y - 0.065, f"Dynamo says: {r['reason'][:64]}", fontsize=9, color="#555555", va="top")
    else:
        fig.text(L, Y - 0.095, "the whole function is one graph", fontsize=11.5, va="top")
    fig.text(L, 0.12, "compiled output matches eager: " + ("yes" if data["torch_matches"] else "NO"), fontsize=10.5,
             va="top", color="#333333")
    fig.text(R, 0.975, "jax.jit", fontsize=14, fontweight="bold", color=plots.color("jax_jit"), va="top")
    jsrc = data.get("jax_source") or []
    draw_code(fig, R, 0.9, 0.475, 0.28, jsrc, fontsize=10,
              mark={i for i, ln in enumerate(jsrc) if ln.strip().startswith(("if ", "print("))})
    if j.get("ok"):
        fig.text(R, Y, "runs under jit: one program", fontsize=15, fontweight="bold", color="#1b7f3a", va="top")
        if j.get("printed"):
            _text_lines(fig, R, Y - 0.095, [f"print ran {len(j['printed'])}× in 3 calls (at trace time):"], fontsize=11.5)
            fig.text(R, Y - 0.165, j["printed"][0][:52], fontsize=10.5, family="DejaVu Sans Mono", color="#7a4f00",
                     va="top")
            fig.text(R, Y - 0.235, "a tracer, not numbers — jax.debug.print runs every call", fontsize=10.5,
                     va="top", color="#555555")
        elif data.get("fixed"):
            fig.text(R, Y - 0.095, "the branch is data now: no Python bool needed", fontsize=11.5, va="top")
        if "matches" in j:
            fig.text(R, 0.12, "output matches torch eager: " + ("yes" if j["matches"] else "NO"), fontsize=10.5,
                     va="top", color="#333333")
    else:
        fig.text(R, Y, f"expected error: {j['error_type']}", fontsize=14, fontweight="bold", color="#b00020", va="top")
        _text_lines(fig, R, Y - 0.095, textwrap.wrap(j.get("error", ""), 58)[:3], fontsize=11, color="#333333")
        fig.text(R, 0.12, "jit needs the branch as data: jnp.where or lax.cond", fontsize=10.5, va="top", color="#333333")
    if reference is not None:
        rt, rj = reference["torch"], reference["jax"]
        fig.text(L, 0.2, f"recorded on {_where(reference)}: graphs {rt['graphs']} · breaks {rt['breaks']} · "
                 f"jax.jit {'runs' if rj.get('ok') else rj.get('error_type', '?')}", fontsize=9.5,
                 color=plots.PALETTE["reference"], va="top")
    _two_columns(fig)
    plots.stamp_figure(fig, data, reference)
    return fig


graph_breaks = Demo(
    "graph_breaks", "Graph breaks: Dynamo vs jax.jit",
    controls=[Choice("variant", "branch", label="function", options=[(v["title"], k) for k, v in VARIANTS.items()])],
    measure=measure_breaks, figure=figure_breaks, match=("variant",),
    warm=[{"variant": v} for v in VARIANTS],
)


# =======================================================================================
# 4. What capture costs: eager vs compiled, broken vs fixed, measured
# =======================================================================================
COST_ROWS = (
    # key, backend (colour), label, variant
    ("eager", "torch_eager", "torch eager · if-branch", "branch"),
    ("compile_branch", "torch_compile", "torch.compile · if-branch", "branch"),
    ("compile_where", "torch_compile", "torch.compile · torch.where", "where"),
    ("compile_cond", "torch_compile", "torch.compile · torch.cond", "cond"),
    ("jit_where", "jax_jit", "jax.jit · jnp.where", "where"),
    ("jit_cond", "jax_jit", "jax.jit · lax.cond", "cond"),
)
COST_N = {"cpu": (2**16, 12, 24), "gpu": (2**22, 14, 27)}  # default, lo, hi (log2)
_FIRST_CALL: dict[tuple, float] = {}


@functools.lru_cache(maxsize=None)
def _compiled(fn: Callable) -> Callable:
    """One torch.compile wrapper per example (dynamic=False), reused across redraws."""
    return require_torch().compile(fn, dynamic=False)


@functools.lru_cache(maxsize=None)
def _jitted(fn: Callable) -> Callable:
    return require_jax().jit(fn)


def _cost_row(key: str, backend: str, label: str, variant: str, x, N: int, dtype: str, budget_s: float,
              say: Callable[[str], None]) -> dict[str, Any]:
    v = _variant(variant)
    if backend == "torch_eager":
        fn, args = v["torch"], (x,)
    elif backend == "torch_compile":
        fn, args = _compiled(v["torch"]), (x,)
    else:
        _bind_frameworks(need_jax=True)
        fn, args = _jitted(v["jax"]), (_to_jax(x),)
    sync = sync_for(backend, torch_device())
    fkey = (key, N, dtype, torch_device())
    if fkey not in _FIRST_CALL:
        if backend != "torch_eager":
            say(f"compiling {label} (first call)…")
        _FIRST_CALL[fkey] = first_call(lambda: fn(*args), sync)[0]
    t = measure(lambda: fn(*args), sync, budget_s=budget_s, warmup=1, min_samples=5)
    graphs = {"torch_eager": 0, "jax_jit": 1}.get(backend)
    if graphs is None:
        graphs = measure_breaks(variant, N, dtype)["torch"]["graphs"]
    return {"median_s": t.median, "p10_s": t.p10, "p90_s": t.p90, "n": t.n, "first_call_s": _FIRST_CALL[fkey],
            "graphs": graphs, "output": _numpy(fn(*args))}


def measure_capture_cost(N: int | None = None, dtype: str = "float32", budget_s: float = 0.06,
                         progress: Progress | None = None, rows: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Steady-state time per call of the branching function and its fixes, eager and compiled.
    Compile time (first call) is kept apart; each row also says how many graphs Dynamo made."""
    import numpy as np

    _bind_frameworks()
    set_threads()
    kind, progress = device_kind(), progress or _quiet
    N = int(N or COST_N[kind][0])
    if N <= 0 or N > 2 ** COST_N[kind][2]:
        raise DemoError(f"N={N} is outside 1…2^{COST_N[kind][2]} for this demo")
    x, ref, out_rows = _inputs_1d(N, dtype), None, []
    wanted = [r for r in COST_ROWS if rows is None or r[0] in rows]
    for i, (key, backend, label, variant) in enumerate(wanted):
        say = functools.partial(progress, i / len(wanted))
        say(f"measuring {label}…")
        row: dict[str, Any] = {"key": key, "backend": backend, "label": label, "variant": variant}
        try:
            row.update(_cost_row(key, backend, label, variant, x, N, dtype, budget_s, say))
            out = row.pop("output")
            ref = out if ref is None else ref
            row["matches_eager"] = bool(np.allclose(out, ref, **tolerance(dtype)))
        except Exception as exc:
            row["error"] = one_line(exc)
        out_rows.append(row)
    progress(1.0, "")
    return {"N": N, "dtype": dtype, "device": torch_device(), "rows": out_rows,
            "extra": f"sin→branch→cos/tanh chain, N={N:,}, {dtype}"}


def figure_capture_cost(data: dict[str, Any], reference: dict[str, Any] | None = None):
    """One bar per row (median, p10–p90), graph count and first-call time beside it; the
    recorded run's medians as grey bars under each."""
    fig, ax = plots.figure()
    rows = data["rows"]
    ref_rows = {r["key"]: r for r in (reference or {}).get("rows", []) if r.get("median_s")}
    ys = list(range(len(rows)))[::-1]
    h = 0.38 if reference else 0.7
    off = h / 2 if reference else 0
    for yv, r in zip(ys, rows):
        if not r.get("median_s"):
            ax.text(0, yv, f"  {r.get('error', 'not measured')}", va="center", fontsize=10, color="#b00020")
            continue
        med = r["median_s"] * 1e3
        ax.barh(yv + off, med, height=h, color=plots.color(r["backend"]))
        ax.errorbar(med, yv + off, xerr=[[max(0.0, r["median_s"] - r["p10_s"]) * 1e3],
                                         [max(0.0, r["p90_s"] - r["median_s"]) * 1e3]],
                    fmt="none", ecolor="#333333", capsize=3, lw=1)
        g = r.get("graphs")
        note = (f"  {fmt_seconds(r['median_s'])}" if r["backend"] == "torch_eager" else
                f"  {fmt_seconds(r['median_s'])} · {g} graph{'s' if g != 1 else ''} · 1st call "
                f"{fmt_seconds(r.get('first_call_s'))}")
        ax.text(r["p90_s"] * 1e3, yv + off, note, va="center", fontsize=10)
        rr = ref_rows.get(r["key"])
        if rr:
            ax.barh(yv - h / 2, rr["median_s"] * 1e3, height=h, color=plots.PALETTE["reference"], alpha=0.8)
            ax.text(rr["median_s"] * 1e3, yv - h / 2, f"  {fmt_seconds(rr['median_s'])} (recorded)", va="center",
                    fontsize=9, color="#555555")
    if reference is not None:
        from matplotlib.patches import Patch

        ax.legend(handles=[Patch(color=plots.PALETTE["reference"], label=f"recorded on {_where(reference)}")],
                  loc="lower right", fontsize=9)
    ax.set_yticks(ys)
    ax.set_yticklabels([r["label"] for r in rows])
    ax.set_xlabel("milliseconds per call (median, p10–p90 whiskers)")
    top = max([r["p90_s"] for r in rows if r.get("median_s")] + [r["median_s"] for r in ref_rows.values()] + [1e-6])
    ax.set_xlim(0, top * 1e3 * 1.9)
    where = f" — {_where(data)}" if data.get("recorded") else ""
    ax.set_title(f"the same function, broken vs fixed: steady state after compiling{where}")
    plots.stamp_figure(fig, data, reference)
    return fig


capture_cost = Demo(
    "capture_cost", "What a graph break costs",
    controls=lambda kind: [Pow2("N", COST_N[kind][0], label="N (elements)", lo=COST_N[kind][1], hi=COST_N[kind][2]),
                           Choice("dtype", "float32", options=DTYPES)],
    measure=measure_capture_cost, figure=figure_capture_cost, run_button=True, match=("N", "dtype"),
    record={"budget_s": 0.3}, record_quick={"N": 2**16, "budget_s": 0.05},
)
