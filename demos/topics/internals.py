"""Part 4 — inside the compilers: capture, guards, graph breaks, generated code and IRs.

Two bets on one page (seed card 004, §02–§03): ``torch.compile`` captures Python bytecode
with Dynamo, guards its assumptions, breaks the graph where it cannot capture and lets
Inductor generate the kernels (Triton on a GPU, C++/OpenMP on a CPU); ``jax.jit`` traces a
pure, shape-static function to a jaxpr, lowers it to StableHLO and lets XLA optimise the whole
program (fusions in the optimized HLO).

Live panels (each ``name(show=True)``; ``show=False`` returns the :class:`ui.Panel`):

- ``pipeline()``      a workload walked through both compilers, stage by stage, as highlighted
  excerpts (kernel bodies first, boilerplate folded) with counts: graphs, guards, generated
  kernels, HLO fusions. Code and IR come from :mod:`demos.introspection.codegen`.
- ``guards()``        the guards Dynamo recorded for a call, in plain words; then one property of
  the input changes and the panel shows the guard that failed and the recompile it caused.
- ``graph_breaks()``  a data-dependent ``if`` and a ``print``: Dynamo's explanation (graphs,
  breaks, reason, source line) next to what ``jax.jit`` does with the same function (an
  expected error, shown on purpose); then the fixed versions (``where`` / ``cond``).
- ``capture_cost()``  eager vs compiled for the broken function and its fixes, measured.

Measuring is split from drawing: ``measure_*`` return JSON-able dicts, ``figure_*`` draw them
(a live run or a recorded one from ``results.reference()``).

How the compilers are asked (checked in torch 2.13 / JAX 0.10): graph breaks come from
``torch._dynamo.backends.debugging.ExplainWithBackend`` — the same data as
``torch._dynamo.explain(fn)(*args)`` but without the ``torch._dynamo.reset()`` that ``explain``
performs (it would throw away every other compiled function of the session); guards come from
Dynamo's ``guards`` log (its guard tree) and failed guards from its ``recompiles`` log, both
captured through logging handlers without printing anything. Every capture compiles a fresh
copy of the function (a new code object), so Dynamo's cache for it starts empty and re-running
a cell gives the same answer.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import json
import logging
import re
import time
import types
from typing import Any, Callable

from demos.engine import plots

from demos.deck import ui
from demos.engine.devices import device_kind, require_jax, require_torch, set_threads, torch_device
from demos.engine.errors import DemoError, one_line
from demos.engine.timing import first_call, fmt_seconds, measure, sync_for

TOPIC = "internals"
TORCH_STAGES = ("FX graph", "guards", "generated code")
JAX_STAGES = ("jaxpr", "StableHLO", "optimized HLO")
PIPELINE_WORKLOADS = ("complex_activation", "chain", "two_matmuls", "mlp_block", "mlp_dead_code")


# =======================================================================================
# The example functions: a data-dependent branch, a print, and their fixes (torch / JAX twins)
# =======================================================================================
class _Log:
    """Where the example's ``print`` writes: discarded, or collected while ``capture()`` runs."""

    def __init__(self) -> None:
        self.buffer: list[str] | None = None

    def write(self, s: str) -> None:
        if self.buffer is not None:
            self.buffer.append(s)

    def flush(self) -> None:
        pass

    @contextlib.contextmanager
    def capture(self):
        """Yields a list that holds the printed lines once the block ends."""
        self.buffer = []
        lines: list[str] = []
        try:
            yield lines
        finally:
            lines.extend(ln for ln in "".join(self.buffer).splitlines() if ln.strip())
            self.buffer = None


LOG = _Log()


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


# torch / jax / jnp are bound lazily into this module's globals (importing demos stays cheap).
def _bind_frameworks(need_jax: bool = False) -> None:
    g = globals()
    if "torch" not in g:
        g["torch"] = require_torch()
    if need_jax and "jax" not in g:
        g["jax"] = require_jax()
        import jax.numpy as _jnp

        g["jnp"] = _jnp


VARIANTS: dict[str, dict[str, Any]] = {
    "branch": dict(label="if y.sum() > 0:", torch=branch_torch, jax=branch_jax, fixed=False,
                   title="data-dependent branch"),
    "print": dict(label="print(...)", torch=print_torch, jax=print_jax, fixed=False,
                  title="side effect: print"),
    "where": dict(label="where (fixed)", torch=where_torch, jax=where_jax, fixed=True,
                  title="fixed: torch.where / jnp.where"),
    "cond": dict(label="cond (fixed)", torch=cond_torch, jax=cond_jax, fixed=True,
                 title="fixed: torch.cond / lax.cond"),
}


def _variant(name: str) -> dict[str, Any]:
    if name not in VARIANTS:
        from demos.engine.errors import unknown_name

        raise unknown_name("function", name, VARIANTS)
    return VARIANTS[name]


def _fresh(fn: Callable) -> Callable:
    """The same function with a new code object: Dynamo's and jit's caches start empty for it."""
    code = fn.__code__.replace()
    g = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    g.__kwdefaults__ = fn.__kwdefaults__
    g.__qualname__ = fn.__qualname__
    return g


def source_lines(fn: Callable) -> list[str]:
    """The example's source, as shown on the slide (comments kept)."""
    return inspect.getsource(fn).rstrip("\n").splitlines()


# =======================================================================================
# Capturing what Dynamo says (guards, recompiles) without printing it
# =======================================================================================
_GUARDS_LOGGER = "torch._dynamo.guards.__guards"
_RECOMPILES_LOGGER = "torch._dynamo.guards.__recompiles"


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[tuple[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.messages.append((record.name, record.getMessage()))
        except Exception:  # pragma: no cover
            pass

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
    cap = _Capture()
    saved = []
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


def guard_tree(cap: _Capture) -> str:
    """The last guard tree Dynamo logged."""
    trees = [m for m in cap.texts(_GUARDS_LOGGER) if "GUARD_MANAGER" in m or "+- " in m]
    return trees[-1] if trees else ""


_LEAF = re.compile(r"\+-\s+(?P<kind>[A-Z_]+):\s*(?P<code>.*)$")


def guard_leaves(tree: str) -> list[tuple[str, str]]:
    """(kind, code) of every check in a guard tree (the managers that group them excluded)."""
    out = []
    for line in tree.splitlines():
        m = _LEAF.search(line)
        if m:
            code = re.sub(r"\s+#\s.*$", "", m.group("code")).strip()
            out.append((m.group("kind"), code))
    return out


_TENSOR = re.compile(
    r"check_tensor\(L\['(?P<name>[^']+)'\],\s*\w+,\s*DispatchKeySet\((?P<keys>[^)]*)\),\s*torch\.(?P<dtype>\w+),"
    r"\s*device=(?P<device>[^,]+),\s*requires_grad=(?P<rg>\w+),\s*size=\[(?P<size>[^\]]*)\],\s*stride=\[(?P<stride>[^\]]*)\]"
)


def _device_of(keys: str, device: str) -> str:
    for k in keys.split(","):
        k = k.strip()
        if k in ("CUDA", "MPS", "XPU"):
            return f"{k.lower()}:{device}" if device not in ("None", "") else k.lower()
    return "cpu"


def plain_guards(tree: str) -> list[str]:
    """The guard tree in plain words: one line per assumption, tensors first."""
    tensors, others = [], []
    dyn_marks: dict[str, int] = {}
    ids: list[str] = []
    for kind, code in guard_leaves(tree):
        if kind == "TENSOR_MATCH":
            m = _TENSOR.search(code)
            if m:
                size = m.group("size").replace(" ", "")
                stride = m.group("stride").replace(" ", "")
                rg = "" if m.group("rg") == "False" else ", requires grad"
                tensors.append(f"{m.group('name')}: {m.group('dtype')} on {_device_of(m.group('keys'), m.group('device'))}, "
                               f"shape [{size}], stride [{stride}]{rg}")
            else:
                tensors.append("tensor: " + code[:80])
        elif kind == "DIMENSION_DYNAMIC_MARKING_GUARD":
            n = re.search(r"L\['([^']+)'\]", code)
            key = n.group(1) if n else "?"
            dyn_marks[key] = dyn_marks.get(key, 0) + 1
        elif kind == "NO_TENSOR_ALIASING":
            names = re.findall(r"L\['([^']+)'\]", code)
            if names:
                others.append(f"{' and '.join(names)} do not share memory")
        elif kind == "ID_MATCH":
            n = re.search(r"___check_obj_id\((?P<obj>[^,]+),", code)
            if n:
                obj = n.group("obj").replace("G['", "").replace("']", "").replace("__import_", "")
                ids.append(obj)
        elif kind == "GLOBAL_STATE":
            st = {}
            j = code.find("{")
            if j >= 0:
                try:
                    st = json.loads(code[j:])
                except ValueError:
                    st = {}
            bits = []
            if "grad_mode" in st:
                bits.append("grad mode " + ("on" if st["grad_mode"] else "off"))
            if "num_threads" in st:
                bits.append(f"{st['num_threads']} threads")
            if st.get("autocast_state", {}).get("enabled") is not None:
                bits.append("autocast " + ("on" if any(st["autocast_state"]["enabled"]) else "off"))
            others.append("global state unchanged (" + ", ".join(bits) + ")" if bits else "global state unchanged")
        elif kind == "DEFAULT_DEVICE":
            others.append("no default-device override")
        elif kind == "TORCH_FUNCTION_MODE_STACK":
            others.append("no torch-function modes active")
        elif kind == "LAMBDA_GUARD" and "saved_tensors_hooks" in code:
            others.append("no saved-tensor hooks")
        else:
            others.append(f"{kind.lower()}: {code[:70]}")
    out = list(tensors)
    for name, n in dyn_marks.items():
        out.append(f"{name}: no dynamic-shape marks ({n} checks)")
    if ids:
        shown = ", ".join(i for i in ids if "." in i) or ", ".join(ids)
        out.append(f"same objects: {shown}")
    out.extend(others)
    return out


def failed_guard(message: str) -> str:
    """The first failed guard of a 'Recompiling function …' message, without its id."""
    for line in message.splitlines():
        s = line.strip()
        if s.startswith("- "):
            s = s[2:]
            return re.sub(r"^\d+/\d+:\s*", "", s)
    return ""


# =======================================================================================
# 1. The pipeline: both compilers, stage by stage
# =======================================================================================
_PIPE_CACHE: dict[tuple, dict[str, Any]] = {}
MAX_LINES = 400  # kept per stage in a measurement (figures show the first ~24)


def _sizes(workload: str, size: str, kind: str | None = None) -> dict[str, int]:
    from demos.engine.workloads import get

    w = get(workload)
    kind = kind or device_kind()
    if size == "small":
        return {p.name: p.quick for p in w.params}
    if size != "default":
        raise DemoError(f"size must be 'default' or 'small', not {size!r}")
    return w.defaults(kind)


def torch_capture(fn: Callable, *args: Any, dynamic: bool | None = False) -> dict[str, Any]:
    """Dynamo's capture of ``fn(*args)``: FX graphs (code), graph count, guards (raw + plain)."""
    torch_ = require_torch()
    graphs: list[str] = []

    def backend(gm, _example_inputs):
        graphs.append(gm.code.strip("\n"))
        return gm.forward

    compiled = torch_.compile(_fresh(fn), backend=backend, dynamic=dynamic)
    with dynamo_logs() as cap:
        compiled(*args)
    tree = guard_tree(cap)
    leaves = guard_leaves(tree)
    return {"graphs": graphs, "graph_count": len(graphs), "guard_tree": tree,
            "guard_count": len(leaves), "guards_plain": plain_guards(tree)}


def _fold_cpp(body: str) -> list[str]:
    """A C++ kernel body, readable: includes, error-flag plumbing and brace-only lines folded,
    ``static_cast<int64_t>(…)`` elided, indentation halved."""
    out, folded = [], 0
    for line in body.splitlines():
        s = line.strip()
        if (not s or s in ("{", "}") or s.startswith("#include") or "integer_div_error" in s
                or "omp_get_thread_num" in s or "C10_LIKELY" in s):
            folded += 1 if s else 0
            continue
        line = re.sub(r"static_cast<int64_t>\(([^()]*)\)", r"\1", line)
        line = re.sub(r"(\d+)L\b", r"\1", line)
        line = line.replace("at::vec::Vectorized<float>::", "Vec::").replace("at::vec::", "")
        indent = len(line) - len(line.lstrip())
        out.append(" " * (indent // 4) + line.strip())
    # the signature on one line
    text = "\n".join(out)
    text = re.sub(r"\(\s*\n\s*", "(", text)
    text = re.sub(r",\s*\n\s+(?=(const |float|double|int|bool|half|bfloat16|c10::))", ", ", text)
    out = text.splitlines()
    if folded:
        out.append(f"// ({folded} lines folded: braces, includes, bounds checks)")
    return out


def _fold_triton(body: str) -> list[str]:
    """A Triton kernel body: imports and the autotuning decorator folded."""
    out, folded, inside = [], 0, False
    for line in body.splitlines():
        s = line.strip()
        if s.startswith("def "):
            inside = True
        if not inside:
            folded += 1 if s else 0
            continue
        if s:
            out.append(line.rstrip())
    if folded:
        out.append(f"# ({folded} lines of imports/autotuning metadata folded)")
    return out


def kernel_sources(source: str) -> list[tuple[str, str, str]]:
    """(name, kind, body) of every kernel Inductor compiled in ``source``."""
    out = []
    for m in re.finditer(
            r"^(?P<name>[A-Za-z_]\w*)\s*=\s*async_compile\.(?P<kind>\w+)\(.*?(?P<q>'''|\"\"\")(?P<body>.*?)(?P=q)",
            source, re.S | re.M):
        out.append((m.group("name"), m.group("kind"), m.group("body")))
    return out


def generated_excerpt(code) -> list[str]:
    """Inductor's output, kernel bodies first, then the wrapper's call() (boilerplate folded)."""
    from demos.introspection.codegen import call_body

    lines: list[str] = []
    kernels = kernel_sources(code.source)
    lang = {"cpp": "C++", "cpp_pybinding": "C++/OpenMP", "triton": "Triton"}
    for i, (name, kind, body) in enumerate(kernels):
        lines.append(f"# kernel {i + 1}/{len(kernels)}: {name} ({lang.get(kind, kind)})")
        lines += _fold_cpp(body) if kind.startswith("cpp") else _fold_triton(body)
    wrapper = [ln for ln in call_body(code.source).splitlines()
               if ln.strip() and not ln.strip().startswith(("args.clear", "del ", "assert_size_stride", "assert_alignment",
                                                            "#", "stream0 = get_raw_stream", "with torch.cuda._DeviceGuard"))]
    lines.append("# wrapper: call(args) — launches and allocations in order")
    lines += wrapper
    return lines


def _strip_hlo(line: str) -> str:
    line = re.sub(r",?\s*metadata=\{[^}]*\}", "", line)
    line = re.sub(r",?\s*backend_config=\{.*\}\s*$", "", line)
    line = re.sub(r",?\s*frontend_attributes=\{[^}]*\}", "", line)
    line = re.sub(r",?\s*operand_precision=\{[^}]*\}", "", line)
    line = re.sub(r"\{[0-9,]*\}(?=[\s,)])", "", line)  # layouts {1,0}
    return line.rstrip()


def hlo_excerpt(hlo: str) -> list[str]:
    """Optimized HLO: fused computations (the kernels) first, then ENTRY; metadata stripped."""
    blocks: list[list[str]] = []
    current: list[str] | None = None
    for line in hlo.splitlines():
        if re.match(r"^(ENTRY\s+)?%[\w.\-]+\s.*\{\s*$", line):
            current = [line]
            continue
        if current is not None:
            current.append(line)
            if line.startswith("}"):
                blocks.append(current)
                current = None
    fused = [b for b in blocks if not b[0].startswith("ENTRY") and ("fused" in b[0] or "fusion" in b[0])]
    entry = [b for b in blocks if b[0].startswith("ENTRY")]
    rest = [b for b in blocks if b not in fused and b not in entry]
    out: list[str] = []
    for b in fused + entry:
        for line in b:
            s = _strip_hlo(line)
            if re.search(r"\bparameter\(\d+\)", s):
                continue  # parameters folded: the signature above names them
            out.append(s)
    if rest:
        out.append(f"// ({len(rest)} helper computations folded: reducers, comparators)")
    return out


def stablehlo_excerpt(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        s = re.sub(r"\s*loc\(.*?\)\s*$", "", line.rstrip())
        s = re.sub(r"\s*\{jax\.result_info = \"[^\"]*\"\}", "", s)
        if not s.strip() or s.strip().startswith("#loc") or s.startswith("module @"):
            continue
        if s.strip() == "}" and not s.startswith("  "):
            continue
        out.append(s[2:] if s.startswith("  ") else s)
    return out


def measure_pipeline(workload: str = "complex_activation", size: str = "default", dtype: str = "float32",
                     progress: ui.Progress | None = None, fresh: bool = False) -> dict[str, Any]:
    """Both compilers' stages for one workload at these sizes (cached per sizes/dtype/device).

    A side that cannot run (JAX missing, dtype unsupported) carries an ``error`` line instead.
    """
    from demos.introspection import codegen
    from demos.engine.workloads import get, prepare

    w = get(workload)
    params = _sizes(w.name, size)
    device = torch_device()
    key = (w.name, tuple(sorted(params.items())), dtype, device)
    if key in _PIPE_CACHE and not fresh:
        return _PIPE_CACHE[key]
    progress = progress or (lambda f, m="": None)
    data: dict[str, Any] = {"workload": w.name, "params": params, "dtype": dtype, "device": device,
                            "size": size, "torch": {}, "jax": {}}
    t0 = time.perf_counter()
    try:
        progress(0.05, f"Dynamo: capturing {w.name}…")
        prep = prepare(w, "torch_eager", params, dtype, device)
        cap = torch_capture(w.torch_fn, *prep.args)
        progress(0.3, f"Inductor: generating code for {w.name} (seconds when cold)…")
        code = codegen.workload_inductor_code(w.name, params, dtype, device)
        data["torch"] = {
            "stages": {"FX graph": "\n\n".join(cap["graphs"]).splitlines()[:MAX_LINES],
                       "guards": cap["guards_plain"],
                       "generated code": generated_excerpt(code)[:MAX_LINES]},
            "counts": {"graphs": cap["graph_count"], "guards": cap["guard_count"],
                       "kernels": code.kernel_count, "library calls": len(code.extern_calls)},
            "kernels": list(code.kernels), "extern_calls": list(code.extern_calls),
            "kernel_lang": "Triton" if code.device == "cuda" else ("C++/OpenMP" if code.device == "cpu" else code.device),
        }
    except Exception as exc:  # one line on the figure; the other side still shows
        data["torch"] = {"error": one_line(exc)}
    try:
        progress(0.7, f"XLA: lowering and compiling {w.name}…")
        xc = codegen.workload_xla_code(w.name, params, dtype, device)
        data["jax"] = {
            "stages": {"jaxpr": xc.jaxpr.splitlines()[:MAX_LINES],
                       "StableHLO": stablehlo_excerpt(xc.stablehlo)[:MAX_LINES],
                       "optimized HLO": hlo_excerpt(xc.hlo)[:MAX_LINES]},
            "counts": {"jaxpr eqns": xc.jaxpr_eqns, "StableHLO ops": xc.stablehlo_ops,
                       "HLO fusions": xc.fusion_count, "HLO ops": xc.kernel_count},
            "fusions": list(xc.fusions), "backend": xc.backend,
        }
    except Exception as exc:
        data["jax"] = {"error": one_line(exc)}
    data["seconds"] = time.perf_counter() - t0
    progress(1.0, "")
    _PIPE_CACHE[key] = data
    return data


# -- drawing code with syntax colours ---------------------------------------------------
CODE_COLORS = {
    "text": "#1a1a1a",
    "comment": "#6a737d",
    "string": "#a31515",
    "keyword": "#7d3c98",
    "call": "#0057a8",
    "shape": "#007a5e",
    "number": "#b35900",
    "var": "#444444",
}
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
    drawn layer over layer lines up exactly, with a handful of artists instead of hundreds."""
    layers: dict[str, list[list[str]]] = {k: [] for k in CODE_COLORS}
    for line in lines:
        row = {k: [" "] * len(line) for k in CODE_COLORS}
        taken = [False] * len(line)
        for m in _TOKEN.finditer(line):
            kind = m.lastgroup or "text"
            for i in range(m.start(), m.end()):
                row[kind][i] = line[i]
                taken[i] = True
        for i, ch in enumerate(line):
            if not taken[i]:
                row["text"][i] = ch
        for k in CODE_COLORS:
            layers[k].append(row[k])
    return {k: ["".join(r).rstrip() for r in rows] for k, rows in layers.items()
            if any("".join(r).strip() for r in rows)}


@functools.lru_cache(maxsize=None)
def _char_px(fontsize: float) -> float:
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextPath

    tp = TextPath((0, 0), "M" * 20, size=fontsize, prop=FontProperties(family="DejaVu Sans Mono"))
    return tp.get_extents().width / 20 * plots.DPI / 72.0


def _clip(lines: list[str], max_chars: int, max_lines: int) -> list[str]:
    out = [ln if len(ln) <= max_chars else ln[: max_chars - 1] + "…" for ln in lines[:max_lines]]
    if len(lines) > max_lines:
        out[-1] = f"… {len(lines) - max_lines + 1} more lines"
    return out


def draw_code(fig, x0: float, y_top: float, width: float, height: float, lines: list[str], *,
              fontsize: float = 10.0, mark: set[int] | None = None) -> int:
    """Draw ``lines`` as coloured monospace code in a box of figure coordinates.

    Returns how many lines were drawn; lines in ``mark`` get a highlighted background.
    """
    from matplotlib.patches import Rectangle

    W, H = fig.get_size_inches() * plots.DPI
    cw = _char_px(fontsize)
    lh = fontsize * 1.32 * plots.DPI / 72.0
    max_chars = max(10, int(width * W / cw) - 1)
    max_lines = max(1, int(height * H / lh))
    shown = _clip(lines, max_chars, max_lines)
    for i in sorted(mark or ()):
        if i < len(shown):
            y = y_top - (i + 1) * lh / H
            fig.add_artist(Rectangle((x0 - 0.003, y - 0.2 * lh / H), width, lh / H, transform=fig.transFigure,
                                     facecolor="#ffe9b3", edgecolor="none", zorder=0))
    for kind, layer in color_layers(shown).items():
        fig.text(x0, y_top, "\n".join(layer) if layer else "", family="DejaVu Sans Mono", fontsize=fontsize,
                 color=CODE_COLORS[kind], va="top", ha="left", linespacing=1.32,
                 fontweight="bold" if kind in ("call",) else "normal")
    return len(shown)


def _counts_line(counts: dict[str, Any]) -> str:
    return " · ".join(f"{k} {v}" for k, v in counts.items())


def _sizes_text(data: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v:,}" for k, v in data.get("params", {}).items())


def figure_pipeline(data: dict[str, Any], torch_stage: str = "generated code", jax_stage: str = "optimized HLO",
                    reference: dict[str, Any] | None = None, ref_stamp: str = "", stamp: str | None = None,
                    where: str = "Measured on"):
    """Two columns: torch.compile's stage (left) and jax.jit's stage (right), with counts."""
    if torch_stage not in TORCH_STAGES:
        raise DemoError(f"unknown torch stage {torch_stage!r}; valid: {', '.join(TORCH_STAGES)}")
    if jax_stage not in JAX_STAGES:
        raise DemoError(f"unknown JAX stage {jax_stage!r}; valid: {', '.join(JAX_STAGES)}")
    fig, ax = plots.figure()
    ax.axis("off")
    cols = [
        ("torch.compile", "torch_compile", data.get("torch", {}), torch_stage),
        ("jax.jit", "jax_jit", data.get("jax", {}), jax_stage),
    ]
    for i, (name, backend, side, stage) in enumerate(cols):
        x0 = 0.012 + i * 0.5
        head = f"{name} · {stage}"
        fig.text(x0, 0.975, head, fontsize=14, fontweight="bold", color=plots.color(backend), va="top")
        if "error" in side:
            fig.text(x0, 0.86, "⚠ " + side["error"], fontsize=11, color="#b00020", va="top", wrap=True)
            continue
        counts = side.get("counts", {})
        fig.text(x0, 0.905, _counts_line(counts), fontsize=10.5, color="#333333", va="top")
        ref_side = (reference or {}).get("torch" if i == 0 else "jax", {})
        y_top = 0.855
        if ref_side.get("counts"):
            fig.text(x0, 0.86, f"recorded ({ref_stamp}): " + _counts_line(ref_side["counts"]), fontsize=9,
                     color=plots.PALETTE["reference"], va="top")
            y_top = 0.815
        draw_code(fig, x0, y_top, 0.475, y_top - 0.06, side.get("stages", {}).get(stage, []), fontsize=9.5)
    fig.add_artist(__import__("matplotlib").lines.Line2D([0.5, 0.5], [0.06, 0.98], transform=fig.transFigure,
                                                          color="#cccccc", lw=1))
    extra = f"{data.get('workload', '?')}, {_sizes_text(data)}, {data.get('dtype', '?')}"
    plots.stamp(fig, stamp or plots.live_stamp(extra), where=where)
    return fig


# =======================================================================================
# 2. Guards: what Dynamo assumed, and which assumption a changed input broke
# =======================================================================================
CHANGES = ("nothing (same properties)", "dtype → float64", "dtype → bfloat16", "shape → N/2",
           "requires_grad → True", "non-contiguous (stride 2)")
GUARD_N = {"cpu": 2**14, "gpu": 2**20}


def _changed_inputs(change: str, x, y):
    torch_ = require_torch()
    if change == CHANGES[0]:
        return x.clone(), y.clone()
    if change == CHANGES[1]:
        return x.double(), y.double()
    if change == CHANGES[2]:
        return x.to(torch_.bfloat16), y.to(torch_.bfloat16)
    if change == CHANGES[3]:
        n = x.shape[0] // 2
        return x[:n].clone(), y[:n].clone()
    if change == CHANGES[4]:
        return x.clone().requires_grad_(True), y.clone()
    if change == CHANGES[5]:
        big = torch_.stack([x, x], dim=1).reshape(-1)
        return big[::2], y.clone()
    raise DemoError(f"unknown change {change!r}; valid: {', '.join(CHANGES)}")


def measure_guards(change: str = "dtype → float64", N: int | None = None, dtype: str = "float32",
                   progress: ui.Progress | None = None) -> dict[str, Any]:
    """Compile ``complex_activation`` (dynamic=False, Dynamo capture only), call it again with the
    same inputs, then with one property changed; report guards, timings and any recompile."""
    from demos.engine.workloads import complex_activation_torch

    torch_ = require_torch()
    set_threads()
    if change not in CHANGES:
        raise DemoError(f"unknown change {change!r}; valid: {', '.join(CHANGES)}")
    N = int(N or GUARD_N[device_kind()])
    device = torch_device()
    gen = torch_.Generator().manual_seed(0)
    x = torch_.randn(N, generator=gen).to(device=device, dtype=getattr(torch_, dtype))
    y = torch_.randn(N, generator=gen).to(device=device, dtype=getattr(torch_, dtype))
    x2, y2 = _changed_inputs(change, x, y)
    compiles: list[int] = []

    def backend(gm, _example_inputs):
        compiles.append(len(gm.graph.nodes))
        return gm.forward

    f = torch_.compile(_fresh(complex_activation_torch), backend=backend, dynamic=False)
    sync = sync_for("torch_eager", device)
    calls = []
    with dynamo_logs() as cap:
        for label, args in (("1st call", (x, y)), ("2nd call, same inputs", (x, y)), (f"3rd call: {change}", (x2, y2))):
            before, n_msgs = len(compiles), len(cap.messages)
            if progress:
                progress(len(calls) / 3, label)
            secs, _ = first_call(lambda: f(*args), sync)
            new = cap.messages[n_msgs:]
            reason = ""
            for name, msg in new:
                if name == _RECOMPILES_LOGGER:
                    reason = failed_guard(msg)
            calls.append({"label": label, "seconds": secs, "compiled": len(compiles) > before, "reason": reason})
        trees = [m for m in cap.texts(_GUARDS_LOGGER) if "+- " in m]
    first_tree = trees[0] if trees else ""
    return {"change": change, "N": N, "dtype": dtype, "device": device,
            "guards_plain": plain_guards(first_tree), "guard_count": len(guard_leaves(first_tree)),
            "calls": calls, "compiles": len(compiles),
            "recompiled": calls[2]["compiled"], "failed_guard": calls[2]["reason"]}


def figure_guards(data: dict[str, Any], stamp: str | None = None, where: str = "Measured on"):
    """Left: the guards in plain words. Right: three calls' latency. Bottom: the failed guard."""
    fig, ax = plots.figure()
    ax.axis("off")
    fig.text(0.012, 0.975, f"Guards Dynamo recorded on the 1st call ({data['guard_count']} checks)", fontsize=13.5,
             fontweight="bold", color=plots.color("torch_compile"), va="top")
    draw_code(fig, 0.012, 0.9, 0.5, 0.64, [f"• {g}" for g in data["guards_plain"]], fontsize=9.5)
    right = fig.add_axes((0.7, 0.36, 0.17, 0.54))
    calls = data["calls"]
    secs = [c["seconds"] for c in calls]
    ys = list(range(len(calls)))[::-1]
    right.barh(ys, secs, color=[plots.PALETTE["accent"] if c["compiled"] else plots.color("torch_compile")
                                for c in calls], height=0.6)
    right.set_xscale("log")
    right.set_yticks(ys)
    right.set_yticklabels([c["label"] if len(c["label"]) < 28 else c["label"][:27] + "…" for c in calls], fontsize=10)
    right.set_xlabel("seconds (log)", fontsize=10)
    right.tick_params(axis="x", labelsize=9)
    right.spines[["top", "right"]].set_visible(False)
    right.set_xlim(min(secs) / 3, max(secs) * 3)
    for yv, c in zip(ys, calls):
        tag = "compiled" if c["compiled"] else "cache hit"
        right.text(max(secs) * 3.3, yv, f"{fmt_seconds(c['seconds'])}\n{tag}", va="center", fontsize=10,
                   clip_on=False)
    right.set_title("three calls, same compiled function", fontsize=11.5)
    if data["recompiled"]:
        msg = f"RECOMPILE · failed guard: {data['failed_guard'] or '(reason not logged)'}"
        col = "#b00020"
    else:
        msg = "no recompile: every guard still holds"
        col = "#1b7f3a"
    fig.text(0.012, 0.2, msg, fontsize=13, fontweight="bold", color=col, va="top")
    fig.text(0.012, 0.12, "torch.compile(dynamic=False); backend: Dynamo capture only — guards are Dynamo's "
             "(Part 5 measures Inductor's compile cost)", fontsize=9.5, color="#555555", va="top")
    extra = f"complex_activation, N={data['N']:,}, {data['dtype']}"
    plots.stamp(fig, stamp or plots.live_stamp(extra), where=where)
    return fig


# =======================================================================================
# 3. Graph breaks: Dynamo's explanation next to jax.jit's answer
# =======================================================================================
BREAK_N = {"cpu": 2**12, "gpu": 2**16}
_BREAK_CACHE: dict[tuple, dict[str, Any]] = {}


def _inputs_1d(N: int, dtype: str, sign: float = 1.0):
    """One input vector for the branch examples (torch on the torch device)."""
    torch_ = require_torch()
    gen = torch_.Generator().manual_seed(1)
    x = torch_.randn(N, generator=gen) * sign
    return x.to(device=torch_device(), dtype=getattr(torch_, dtype))


def _to_jax(x):
    jax_ = require_jax()
    import jax.numpy as jnp_

    arr = jnp_.asarray(x.detach().float().cpu().numpy())
    return jax_.device_put(arr.astype(getattr(jnp_, str(x.dtype).replace("torch.", ""))))


def plain_reason(reason: str) -> str:
    """Dynamo's break reason, in plain words."""
    r = reason.strip()
    low = r.lower()
    if "generic_jump" in low or "data-dependent" in low or "data dependent" in low:
        return "data-dependent branch: Python needs a bool from a tensor's value"
    if "print" in low:
        return "side effect: print() cannot be put in a graph"
    if "builtin operator" in low:
        m = re.search(r"builtin operator `(\w+)`", r)
        return f"unsupported Python builtin{(' ' + m.group(1)) if m else ''}"
    return r.splitlines()[0][:100] if r else "?"


def explain_torch(fn: Callable, *args: Any) -> dict[str, Any]:
    """Graphs, breaks and reasons for ``fn(*args)`` (ExplainWithBackend on a fresh copy; no reset)."""
    torch_ = require_torch()
    _bind_frameworks()
    from torch._dynamo.backends.debugging import ExplainWithBackend

    eb = ExplainWithBackend("eager")
    compiled = torch_.compile(_fresh(fn), backend=eb)
    t0 = time.perf_counter()
    out = compiled(*args)
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
    with LOG.capture() as printed:
        try:
            for _ in range(3):
                out = jitted(*args)
                out.block_until_ready()
        except Exception as exc:  # the expected error, kept as data
            error = exc
    if error is not None:
        return {"ok": False, "error_type": type(error).__name__, "error": _first_line(error), "printed": list(printed)}
    return {"ok": True, "error_type": "", "error": "", "printed": list(printed), "output": out}


def _first_line(exc: BaseException) -> str:
    text = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return text[0][:200] if text else type(exc).__name__


def measure_breaks(variant: str = "branch", N: int | None = None, dtype: str = "float32",
                   fresh: bool = False) -> dict[str, Any]:
    """Dynamo's explanation and jax.jit's answer for one example (cached: both are deterministic)."""
    import numpy as np

    v = _variant(variant)
    _bind_frameworks(need_jax=False)
    N = int(N or BREAK_N[device_kind()])
    key = (variant, N, dtype, torch_device())
    if key in _BREAK_CACHE and not fresh:
        return _BREAK_CACHE[key]
    set_threads()
    x = _inputs_1d(N, dtype)
    ex = explain_torch(v["torch"], x)
    eager = v["torch"](x)
    ref = eager.detach().float().cpu().numpy()
    got = ex.pop("output").detach().float().cpu().numpy()
    data: dict[str, Any] = {"variant": variant, "N": N, "dtype": dtype, "device": torch_device(),
                            "title": v["title"], "fixed": v["fixed"],
                            "torch_source": source_lines(v["torch"]), "torch": ex,
                            "torch_matches": bool(np.allclose(got, ref, **_tol(dtype)))}
    try:
        _bind_frameworks(need_jax=True)
        ja = jit_attempt(v["jax"], _to_jax(x))
        out = ja.pop("output", None)
        if out is not None:
            ja["matches"] = bool(np.allclose(np.asarray(out.astype("float32")), ref, **_tol(dtype)))
        data["jax"] = ja
        data["jax_source"] = source_lines(v["jax"])
    except DemoError as exc:
        data["jax"] = {"ok": False, "error_type": "missing", "error": str(exc), "printed": []}
        data["jax_source"] = []
    _BREAK_CACHE[key] = data
    return data


def _tol(dtype: str) -> dict[str, float]:
    from demos.engine.workloads import tolerance

    return tolerance(dtype)


def _marked(source: list[str], needle: str | None) -> set[int]:
    if not needle:
        return set()
    return {i for i, ln in enumerate(source) if needle.strip() and ln.strip() == needle.strip()}


def _no_comment(line: str) -> str:
    return re.sub(r"\s+#.*$", "", line).rstrip()


def figure_breaks(data: dict[str, Any], stamp: str | None = None, where: str = "Measured on"):
    """Left: Dynamo's explanation (graphs, breaks, reason, line). Right: what jax.jit does."""
    fig, ax = plots.figure()
    ax.axis("off")
    t, j = data["torch"], data["jax"]
    Y = 0.6  # verdict line
    fig.text(0.012, 0.975, "torch.compile (Dynamo)", fontsize=14, fontweight="bold",
             color=plots.color("torch_compile"), va="top")
    needle = t["reasons"][0]["source"] if t["reasons"] else None
    src = [_no_comment(ln) for ln in data["torch_source"]]
    draw_code(fig, 0.012, 0.9, 0.475, 0.28, src, fontsize=10,
              mark=_marked(src, _no_comment(needle) if needle else None))
    fig.text(0.012, Y, f"graphs: {t['graphs']} · graph breaks: {t['breaks']}", fontsize=15, fontweight="bold",
             color="#b00020" if t["breaks"] else "#1b7f3a", va="top")
    y = Y - 0.095
    for r in t["reasons"][:1]:
        for k, chunk in enumerate(_wrap("reason: " + r["plain"], 56)[:2]):
            fig.text(0.012, y - 0.062 * k, chunk, fontsize=11.5, va="top")
        y -= 0.062 * min(2, len(_wrap("reason: " + r["plain"], 56))) + 0.01
        fig.text(0.012, y, f"line {r['line']}: {_no_comment(r['source'])[:44]}", fontsize=11,
                 family="DejaVu Sans Mono", color="#7a4f00", va="top")
        fig.text(0.012, y - 0.065, f"Dynamo says: {r['reason'][:64]}", fontsize=9, color="#555555", va="top")
    if not t["reasons"]:
        fig.text(0.012, y, "the whole function is one graph", fontsize=11.5, va="top")
    fig.text(0.012, 0.12, "compiled output matches eager: " + ("yes" if data["torch_matches"] else "NO"),
             fontsize=10.5, va="top", color="#333333")
    # right: JAX
    fig.text(0.512, 0.975, "jax.jit", fontsize=14, fontweight="bold", color=plots.color("jax_jit"), va="top")
    jsrc = [_no_comment(ln) for ln in (data.get("jax_source") or [])]
    jmark = {i for i, ln in enumerate(jsrc) if ln.strip().startswith(("if ", "print("))}
    draw_code(fig, 0.512, 0.9, 0.475, 0.28, jsrc, fontsize=10, mark=jmark)
    y = Y - 0.095
    if j.get("ok"):
        fig.text(0.512, Y, "runs under jit: one program", fontsize=15, fontweight="bold", color="#1b7f3a", va="top")
        if j.get("printed"):
            fig.text(0.512, y, f"print ran {len(j['printed'])}× in 3 calls (at trace time):", fontsize=11.5,
                     va="top")
            fig.text(0.512, y - 0.07, j["printed"][0][:52], fontsize=10.5, family="DejaVu Sans Mono",
                     color="#7a4f00", va="top")
            fig.text(0.512, y - 0.14, "a tracer, not numbers — jax.debug.print runs every call", fontsize=10.5,
                     va="top", color="#555555")
        elif data.get("fixed"):
            fig.text(0.512, y, "the branch is data now: no Python bool needed", fontsize=11.5, va="top")
        if "matches" in j:
            fig.text(0.512, 0.12, "output matches torch eager: " + ("yes" if j["matches"] else "NO"), fontsize=10.5,
                     va="top", color="#333333")
    else:
        fig.text(0.512, Y, f"expected error: {j['error_type']}", fontsize=14, fontweight="bold", color="#b00020",
                 va="top")
        for k, chunk in enumerate(_wrap(j.get("error", ""), 58)[:3]):
            fig.text(0.512, y - 0.062 * k, chunk, fontsize=11, va="top", color="#333333")
        fig.text(0.512, 0.12, "jit needs the branch as data: jnp.where or lax.cond", fontsize=10.5, va="top",
                 color="#333333")
    fig.add_artist(__import__("matplotlib").lines.Line2D([0.5, 0.5], [0.06, 0.98], transform=fig.transFigure,
                                                          color="#cccccc", lw=1))
    extra = f"{data['title']}, N={data['N']:,}, {data['dtype']}"
    plots.stamp(fig, stamp or plots.live_stamp(extra), where=where)
    return fig


def _wrap(text: str, width: int) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width) or [""]


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


def measure_capture_cost(N: int | None = None, dtype: str = "float32", budget_s: float = 0.06,
                         progress: ui.Progress | None = None, rows: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Steady-state time per call of the branching function and its fixes, eager and compiled.

    Compile time (first call) is kept apart; each row also says how many graphs Dynamo made.
    """
    import numpy as np

    _bind_frameworks()
    set_threads()
    kind = device_kind()
    N = int(N or COST_N[kind][0])
    if N <= 0 or N > 2 ** COST_N[kind][2]:
        raise DemoError(f"N={N} is outside 1…2^{COST_N[kind][2]} for this demo")
    device = torch_device()
    x = _inputs_1d(N, dtype)
    ref = None
    out_rows = []
    wanted = [r for r in COST_ROWS if rows is None or r[0] in rows]
    for i, (key, backend, label, variant) in enumerate(wanted):
        if progress:
            progress(i / len(wanted), f"measuring {label}…")
        v = _variant(variant)
        row: dict[str, Any] = {"key": key, "backend": backend, "label": label, "variant": variant}
        try:
            if backend == "torch_eager":
                fn, args = v["torch"], (x,)
            elif backend == "torch_compile":
                fn, args = _compiled(v["torch"]), (x,)
            else:
                _bind_frameworks(need_jax=True)
                fn, args = _jitted(v["jax"]), (_to_jax(x),)
            sync = sync_for(backend, device)
            fkey = (key, N, dtype, device)
            if fkey not in _FIRST_CALL:
                if progress and backend != "torch_eager":
                    progress(i / len(wanted), f"compiling {label} (first call)…")
                secs, out = first_call(lambda: fn(*args), sync)
                _FIRST_CALL[fkey] = secs
            t = measure(lambda: fn(*args), sync, budget_s=budget_s, warmup=1, min_samples=5)
            row.update(median_s=t.median, p10_s=t.p10, p90_s=t.p90, n=t.n, first_call_s=_FIRST_CALL[fkey])
            if backend != "jax_jit":
                row["graphs"] = 0 if backend == "torch_eager" else measure_breaks(variant, N, dtype)["torch"]["graphs"]
            else:
                row["graphs"] = 1
            out = fn(*args)
            arr = np.asarray(out.detach().float().cpu().numpy() if hasattr(out, "detach") else out.astype("float32"))
            if ref is None:
                ref = arr
            row["matches_eager"] = bool(np.allclose(arr, ref, **_tol(dtype)))
        except DemoError as exc:
            row["error"] = str(exc)
        except Exception as exc:
            row["error"] = one_line(exc)
        out_rows.append(row)
    if progress:
        progress(1.0, "")
    return {"N": N, "dtype": dtype, "device": device, "rows": out_rows}


def figure_capture_cost(data: dict[str, Any], reference: dict[str, Any] | None = None, ref_stamp: str = "",
                        stamp: str | None = None, where: str = "Measured on"):
    fig, ax = plots.figure()
    rows = [r for r in data["rows"]]
    ys = list(range(len(rows)))[::-1]
    h = 0.38 if reference else 0.7
    ok = [r for r in rows if r.get("median_s")]
    for yv, r in zip(ys, rows):
        if not r.get("median_s"):
            ax.text(0, yv, f"  {r.get('error', 'not measured')}", va="center", fontsize=10, color="#b00020")
            continue
        off = h / 2 if reference else 0
        ax.barh(yv + off, r["median_s"] * 1e3, height=h, color=plots.color(r["backend"]))
        ax.errorbar(r["median_s"] * 1e3, yv + off, xerr=[[max(0.0, r["median_s"] - r["p10_s"]) * 1e3],
                                                          [max(0.0, r["p90_s"] - r["median_s"]) * 1e3]],
                    fmt="none", ecolor="#333333", capsize=3, lw=1)
        g = r.get("graphs")
        gtxt = "eager" if r["backend"] == "torch_eager" else f"{g} graph{'s' if g != 1 else ''}"
        ax.text(r["p90_s"] * 1e3, yv + off, f"  {fmt_seconds(r['median_s'])} · {gtxt} · 1st call "
                f"{fmt_seconds(r.get('first_call_s'))}" if r["backend"] != "torch_eager"
                else f"  {fmt_seconds(r['median_s'])}", va="center", fontsize=10)
    if reference:
        ref_rows = {r["key"]: r for r in reference.get("rows", [])}
        for yv, r in zip(ys, rows):
            rr = ref_rows.get(r["key"])
            if rr and rr.get("median_s"):
                ax.barh(yv - h / 2, rr["median_s"] * 1e3, height=h, color=plots.PALETTE["reference"], alpha=0.8)
                ax.text(rr["median_s"] * 1e3, yv - h / 2, f"  {fmt_seconds(rr['median_s'])} (recorded)", va="center",
                        fontsize=9, color="#555555")
        ax.barh([], [], color=plots.PALETTE["reference"], label=f"recorded: {ref_stamp}")
        ax.legend(loc="lower right", fontsize=9)
    ax.set_yticks(ys)
    ax.set_yticklabels([r["label"] for r in rows])
    ax.set_xlabel("milliseconds per call (median, p10–p90 whiskers)")
    top = max([r["p90_s"] for r in ok] + [1e-6]) * 1e3
    if reference:
        top = max([top] + [r.get("median_s", 0) * 1e3 for r in reference.get("rows", []) if r.get("median_s")])
    ax.set_xlim(0, top * 1.9)
    ax.set_title("the same function, broken vs fixed: steady state after compiling")
    extra = f"sin→branch→cos/tanh chain, N={data['N']:,}, {data['dtype']}"
    plots.stamp(fig, stamp or plots.live_stamp(extra), where=where)
    return fig


# =======================================================================================
# Recorded runs
# =======================================================================================
def _reference_section() -> tuple[dict[str, Any] | None, str]:
    from demos.engine.results import reference

    try:
        ref = reference()
    except Exception:
        return None, ""
    if ref is None or TOPIC not in ref.sections:
        return None, ""
    return ref.sections[TOPIC], ref.stamp


def _slim_pipeline(data: dict[str, Any], keep: int = 60) -> dict[str, Any]:
    d = json.loads(json.dumps(data, default=str))
    for side in ("torch", "jax"):
        for k, v in d.get(side, {}).get("stages", {}).items():
            d[side]["stages"][k] = v[:keep]
    return d


def record(rec, quick: bool = False) -> None:
    """Store this part's default measurements in ``rec.sections['internals']``."""
    size = "small" if quick else "default"
    section: dict[str, Any] = {"pipeline": {}, "guards": None, "breaks": {}, "capture_cost": None}
    for w in (("complex_activation",) if quick else PIPELINE_WORKLOADS):
        section["pipeline"][w] = _slim_pipeline(measure_pipeline(w, size))
    section["guards"] = measure_guards("dtype → float64")
    for v in VARIANTS:
        d = dict(measure_breaks(v))
        section["breaks"][v] = json.loads(json.dumps(d, default=str))
    cc = measure_capture_cost(None if not quick else 2**16, budget_s=0.05 if quick else 0.3)
    section["capture_cost"] = cc
    rec.sections[TOPIC] = section


def warm() -> None:
    """Compile what the live cells use at their default sizes (Inductor + XLA caches)."""
    for w in PIPELINE_WORKLOADS:
        measure_pipeline(w, "default")
    for v in VARIANTS:
        measure_breaks(v)
    measure_guards("dtype → float64")
    measure_capture_cost()


# =======================================================================================
# Live panels
# =======================================================================================
def _recorded(part: str):
    sec, stamp_ = _reference_section()
    if ui.recorded_only() and sec and sec.get(part):
        return sec[part], stamp_
    return None, stamp_


def pipeline(show: bool = True, workload: str = "complex_activation"):
    """Live: one workload through both compilers, a stage per side, with counts."""
    controls = {
        "workload": ui.choice("workload", list(PIPELINE_WORKLOADS), workload),
        "torch_stage": ui.toggle("torch.compile", list(TORCH_STAGES), "generated code"),
        "jax_stage": ui.toggle("jax.jit", list(JAX_STAGES), "optimized HLO"),
        "dtype": ui.dtype_choice(),
        "size": ui.toggle("size", ["default", "small"], "default"),
    }

    def render(values, progress):
        rec, ref_stamp = _recorded("pipeline")
        if rec and values["workload"] in rec:
            return figure_pipeline(rec[values["workload"]], values["torch_stage"], values["jax_stage"],
                                   stamp=ref_stamp, where="Recorded on")
        data = measure_pipeline(values["workload"], values["size"], values["dtype"], progress)
        sec, stamp_ = _reference_section()
        ref = (sec or {}).get("pipeline", {}).get(values["workload"]) if sec else None
        return figure_pipeline(data, values["torch_stage"], values["jax_stage"], reference=ref, ref_stamp=stamp_)

    panel = ui.Panel("Inside the compilers: the pipeline", controls, render)
    return _show(panel, show)


def guards(show: bool = True):
    """Live: Dynamo's guards for a call, then a changed input and the guard it fails."""
    controls = {"change": ui.choice("then call it with", list(CHANGES), "dtype → float64")}

    def render(values, progress):
        rec, ref_stamp = _recorded("guards")
        if rec:
            return figure_guards(rec, stamp=ref_stamp, where="Recorded on")
        return figure_guards(measure_guards(values["change"], progress=progress))

    panel = ui.Panel("Guards and the recompile they trigger", controls, render)
    return _show(panel, show)


def graph_breaks(show: bool = True, variant: str = "branch"):
    """Live: Dynamo's explanation of a function vs what jax.jit does with it."""
    options = [(VARIANTS[k]["title"], k) for k in VARIANTS]
    controls = {"variant": ui.choice("function", options, variant)}

    def render(values, progress):
        rec, ref_stamp = _recorded("breaks")
        if rec and values["variant"] in rec:
            return figure_breaks(rec[values["variant"]], stamp=ref_stamp, where="Recorded on")
        progress(0.1, "Dynamo: explaining…")
        return figure_breaks(measure_breaks(values["variant"]))

    panel = ui.Panel("Graph breaks: Dynamo vs jax.jit", controls, render)
    return _show(panel, show)


def capture_cost(show: bool = True):
    """Live (Run button): the broken function and its fixes, eager vs compiled, measured."""
    kind = device_kind()
    default, lo, hi = COST_N[kind]
    controls = {"N": ui.pow2_slider("N (elements)", lo, hi, default), "dtype": ui.dtype_choice()}

    def render(values, progress):
        rec, ref_stamp = _recorded("capture_cost")
        if rec:
            return figure_capture_cost(rec, stamp=ref_stamp, where="Recorded on")
        data = measure_capture_cost(values["N"], values["dtype"], progress=progress)
        sec, stamp_ = _reference_section()
        return figure_capture_cost(data, reference=(sec or {}).get("capture_cost"), ref_stamp=stamp_)

    panel = ui.Panel("What a graph break costs", controls, render, run_button=True)
    return _show(panel, show)


def _show(panel: ui.Panel, show: bool):
    if show:
        panel.show()
        return None
    return panel


def panels() -> dict[str, Callable[[], ui.Panel]]:
    return {
        "pipeline": lambda: pipeline(show=False),
        "guards": lambda: guards(show=False),
        "graph_breaks": lambda: graph_breaks(show=False),
        "capture_cost": lambda: capture_cost(show=False),
    }
