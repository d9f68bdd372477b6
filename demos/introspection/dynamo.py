"""What Dynamo and JAX tell about capture and recompiles, read from their logs.

Three parts:

- captures (context managers that collect log records without printing anything and undo
  every setting they change on exit): ``dynamo_logs()`` (Dynamo's guard trees and recompile
  reasons), ``torch_recompile_log()`` (recompile reasons and the recompile-limit warning),
  ``jax_miss_log()`` (JAX's tracing-cache-miss explanations). All three are one
  :func:`capture_logs` over different loggers.
- parsers, pure functions of the logged text: ``guard_trees``, ``guard_leaves``,
  ``plain_guards`` (a guard tree in plain words), ``failed_guard`` / ``torch_reason`` (the
  first failed guard of a 'Recompiling function …' message), ``jax_reason`` (the 'now … and
  before …' line of a cache miss), ``read_recompiles`` / ``read_jax_misses`` (the same over
  what a capture collected) and ``plain_reason`` (a graph-break reason in plain words).
- questions about one call, each on a fresh copy of the function (a new code object, so
  nothing compiled elsewhere is reset): ``capture(fn, *args)`` (FX graphs and guards),
  ``guarded_calls(fn, calls)`` (successive calls: which compiled, the guard that failed),
  ``explain(fn, *args)`` (graphs, breaks and their reasons) and ``jit_attempt(fn, *args)``
  (whether ``jax.jit`` runs it, what it printed while tracing, or the error it raised); and
  ``recompile_limit()``. Compiles are counted by ``hooks.CaptureBackend`` (the one counting
  backend, with ``hooks.InductorBackend``).

Checked against torch 2.13 and JAX 0.10. Imports the engine (``protocol.fresh_function``);
torch and JAX only when asked.
"""
from __future__ import annotations

import contextlib
import io
import json
import logging
import re
from typing import Any, Callable, Iterable, Iterator, Sequence

from demos.engine.devices import require_jax, require_torch
from demos.engine.timing import Stopwatch, first_call
from demos.engine.protocol import fresh_function
from demos.introspection.hooks import CaptureBackend

GUARDS = "torch._dynamo.guards.__guards"           # the guards artifact: one guard tree per compile
RECOMPILES = "torch._dynamo.guards.__recompiles"   # the recompiles artifact: 'Recompiling function …'
CONVERT_FRAME = "torch._dynamo.convert_frame"      # where the recompile-limit warning is logged
JAX_LOGGERS = ("jax._src.interpreters.partial_eval", "jax._src.pjit", "jax._src.compiler",
               "jax._src.compilation_cache", "jax._src.dispatch")


# =======================================================================================
# Capturing
# =======================================================================================
class LogCapture(logging.Handler):
    """Keeps (logger name, message) of every record it receives."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[tuple[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.messages.append((record.name, record.getMessage()))
        except Exception:  # pragma: no cover  (a record whose arguments do not format)
            pass

    def texts(self, logger: str, since: int = 0) -> list[str]:
        """The messages of ``logger``, from the ``since``-th record captured on."""
        return [m for n, m in self.messages[since:] if n == logger]


@contextlib.contextmanager
def capture_logs(names: Iterable[str], debug: Iterable[str] = ()) -> Iterator[LogCapture]:
    """Collect the records of the loggers ``names`` for the duration, none of them reaching
    the console (they do not propagate meanwhile); the loggers in ``debug`` are set to DEBUG.
    Handlers, levels and propagation are restored on exit."""
    cap, saved, debug = LogCapture(), [], set(debug)
    for name in names:
        lg = logging.getLogger(name)
        saved.append((lg, lg.level, lg.propagate))
        lg.addHandler(cap)
        lg.propagate = False
        if name in debug:
            lg.setLevel(logging.DEBUG)
    try:
        yield cap
    finally:
        for lg, level, propagate in saved:
            lg.removeHandler(cap)
            lg.setLevel(level)
            lg.propagate = propagate


@contextlib.contextmanager
def _torch_logs(names: tuple[str, ...]) -> Iterator[LogCapture]:
    """Dynamo's artifact loggers among ``names`` switched on (the ``recompiles`` artifact
    enabled additively: other log settings stay as they are, and it is off again after
    unless it was on before)."""
    require_torch()
    from torch._logging._internal import log_state

    added = not log_state.is_artifact_enabled("recompiles")
    if added:
        log_state.enable_artifact("recompiles")
    try:
        with capture_logs(names, debug=[n for n in names if n in (GUARDS, RECOMPILES)]) as cap:
            yield cap
    finally:
        if added:
            log_state.artifact_names.discard("recompiles")


def dynamo_logs() -> contextlib.AbstractContextManager[LogCapture]:
    """Collect Dynamo's guard trees (``GUARDS``) and recompile reasons (``RECOMPILES``)."""
    return _torch_logs((GUARDS, RECOMPILES))


def torch_recompile_log() -> contextlib.AbstractContextManager[LogCapture]:
    """Collect Dynamo's recompile reasons (``RECOMPILES``) and its recompile-limit warning
    (``CONVERT_FRAME``); guard trees are not built."""
    return _torch_logs((RECOMPILES, CONVERT_FRAME))


@contextlib.contextmanager
def jax_miss_log() -> Iterator[LogCapture]:
    """Collect JAX's explanations of tracing-cache misses (``jax_explain_cache_misses`` on
    for the duration)."""
    jax = require_jax()
    old = jax.config.jax_explain_cache_misses
    jax.config.update("jax_explain_cache_misses", True)
    try:
        with capture_logs(JAX_LOGGERS) as cap:
            yield cap
    finally:
        jax.config.update("jax_explain_cache_misses", old)


# =======================================================================================
# Guard trees
# =======================================================================================
_LEAF = re.compile(r"\+-\s+(?P<kind>[A-Z_]+):\s*(?P<code>.*)$")
_TENSOR = re.compile(
    r"check_tensor\(L\['(?P<name>[^']+)'\],\s*\w+,\s*DispatchKeySet\((?P<keys>[^)]*)\),\s*torch\.(?P<dtype>\w+),"
    r"\s*device=(?P<device>[^,]+),\s*requires_grad=(?P<rg>\w+),\s*size=\[(?P<size>[^\]]*)\],\s*stride=\[(?P<stride>[^\]]*)\]"
)
_FIXED_WORDS = {"DEFAULT_DEVICE": "no default-device override",
                "TORCH_FUNCTION_MODE_STACK": "no torch-function modes active"}


def guard_trees(messages: Iterable[str]) -> list[str]:
    """The guard trees among messages of the ``GUARDS`` logger."""
    return [m for m in messages if "GUARD_MANAGER" in m or "+- " in m]


def guard_leaves(tree: str) -> list[tuple[str, str]]:
    """(kind, code) of every check in a guard tree (the managers that group them excluded)."""
    return [(m.group("kind"), re.sub(r"\s+#\s.*$", "", m.group("code")).strip())
            for m in map(_LEAF.search, tree.splitlines()) if m]


def _device_of(keys: str, device: str) -> str:
    """The device a TENSOR_MATCH guard names, from its dispatch keys and device index."""
    for k in (k.strip() for k in keys.split(",")):
        if k in ("CUDA", "MPS", "XPU"):
            return f"{k.lower()}:{device}" if device not in ("None", "") else k.lower()
    return "cpu"


def _global_state(code: str) -> str:
    """A GLOBAL_STATE guard in words: grad mode, threads, autocast."""
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


# =======================================================================================
# Reasons: recompiles (torch, JAX) and graph breaks
# =======================================================================================
_COMPILE_ID = re.compile(r"^(?:!\d+/)?\d+/\d+(?:_\d+)?:\s*")  # "0/1: ", the compile id before a failed guard


def failed_guard(message: str) -> str:
    """The first failed guard of a 'Recompiling function …' message, without its compile id
    ('' when the message names none)."""
    for line in message.splitlines():
        if line.strip().startswith("- "):
            return _COMPILE_ID.sub("", line.strip()[2:])
    return ""


def torch_reason(message: str) -> str:
    """Why Dynamo recompiled: the first failed guard, else the message's first line."""
    return failed_guard(message) or (message.splitlines()[0][:120] if message else "")


def jax_reason(message: str) -> str:
    """The 'now … and before …' part of a JAX tracing-cache-miss explanation."""
    lines = [ln.strip() for ln in message.splitlines() if ln.strip()]
    for ln in lines:
        if ln.startswith("* ") or "now " in ln and "before" in ln:
            return ln.lstrip("* ").strip()
    for ln in lines:
        if "never seen" in ln:
            return "first call: never seen function"
    return lines[-1][:120] if lines else ""


def limit_warning(message: str) -> bool:
    """Whether a Dynamo log message is the recompile-limit warning."""
    return "recompile_limit" in message or "cache_size_limit" in message


def read_recompiles(messages: Iterable[tuple[str, str]]) -> tuple[str, str]:
    """From (logger, message) pairs ``torch_recompile_log()`` captured: the last recompile's
    reason and the first line of the first recompile-limit warning ('' when not logged)."""
    reason = limit = ""
    for name, msg in messages:
        if name == RECOMPILES:
            reason = torch_reason(msg)
        elif limit_warning(msg) and not limit:
            limit = msg.splitlines()[0]
    return reason, limit


def read_jax_misses(messages: Iterable[tuple[str, str]]) -> str:
    """From (logger, message) pairs ``jax_miss_log()`` captured: the last tracing-cache miss's
    reason ('' when there was none)."""
    misses = [m for _name, m in messages if "CACHE MISS" in m and "TRACING" in m]
    return jax_reason(misses[-1]) if misses else ""


def plain_reason(reason: str) -> str:
    """Dynamo's graph-break reason, in plain words."""
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
# Asking Dynamo and jax.jit about one call (a fresh copy of the function: nothing else is reset)
# =======================================================================================
def capture(fn: Callable, *args: Any, dynamic: bool | None = False) -> dict[str, Any]:
    """Dynamo's capture of ``fn(*args)`` (no Inductor): the FX graphs' code, their count, the
    last guard tree, its number of checks and the guards in plain words."""
    backend = CaptureBackend()
    with dynamo_logs() as cap:
        require_torch().compile(fresh_function(fn), backend=backend, dynamic=dynamic)(*args)
    tree = (guard_trees(cap.texts(GUARDS)) or [""])[-1]
    return {"graphs": [g.code for g in backend.graphs], "graph_count": backend.compiles, "guard_tree": tree,
            "guard_count": len(guard_leaves(tree)), "guards_plain": plain_guards(tree)}


def explain(fn: Callable, *args: Any, in_file: str | None = None) -> dict[str, Any]:
    """Graphs, breaks and break reasons (raw, plain, whole text, source line) of ``fn(*args)``, its
    output and what it printed: the data of ``torch._dynamo.explain`` from ``ExplainWithBackend`` on a fresh copy,
    without the ``torch._dynamo.reset()`` ``explain`` performs (it would throw away every
    other compiled function of the session). A break's line is the innermost frame in
    ``in_file`` when given (the user's file), else the innermost frame."""
    torch = require_torch()
    from torch._dynamo.backends.debugging import ExplainWithBackend

    eb = ExplainWithBackend("eager")
    with Stopwatch() as watch, prints_caught() as printed:
        out = torch.compile(fresh_function(fn), backend=eb)(*args)
    seconds = watch.seconds
    ex = eb.output()
    reasons = []
    for r in ex.break_reasons:
        frames = [f for f in r.user_stack if f.filename == in_file] if in_file else []
        frame = (frames or list(r.user_stack))[-1] if r.user_stack else None
        text = str(r.reason)
        reasons.append({"reason": text.strip().splitlines()[0][:200], "plain": plain_reason(text), "text": text,
                        "line": frame.lineno if frame else None, "source": (frame.line or "").strip() if frame else "",
                        "file": frame.filename if frame else ""})
    return {"graphs": ex.graph_count, "breaks": ex.graph_break_count, "reasons": reasons,
            "ops_per_graph": [len(o) for o in (ex.ops_per_graph or [])], "seconds": seconds, "output": out,
            "printed": printed}


@contextlib.contextmanager
def prints_caught() -> Iterator[list[str]]:
    """What the code inside prints to stdout, as a list of its non-blank lines (filled on
    leaving), never the console: an example's ``print`` would otherwise land under the cell."""
    lines: list[str] = []
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            yield lines
    finally:
        lines += [ln for ln in buf.getvalue().splitlines() if ln.strip()]


def jit_attempt(fn: Callable, *args: Any, calls: int = 3) -> dict[str, Any]:
    """What ``jax.jit`` does with ``fn`` (a fresh copy) over ``calls`` calls: it runs — with the
    lines ``fn`` printed meanwhile (a print runs while tracing, not per call) and its output —
    or it raises, kept as data: the error's type and first line."""
    jax = require_jax()
    jitted = jax.jit(fresh_function(fn))
    out, error = None, None
    with prints_caught() as printed:
        try:
            for _ in range(calls):
                out = jitted(*args)
                out.block_until_ready()
        except Exception as exc:  # the expected error, kept as data
            error = exc
    if error is not None:
        text = [ln.strip() for ln in str(error).splitlines() if ln.strip()]
        return {"ok": False, "error_type": type(error).__name__, "error": text[0][:200] if text else type(error).__name__,
                "printed": printed}
    return {"ok": True, "error_type": "", "error": "", "printed": printed, "output": out}


def guarded_calls(fn: Callable, calls: Sequence[tuple[str, tuple]], sync: Callable[[Any], None] = lambda _out: None,
                  dynamic: bool | None = False, progress: Callable[[float, str], None] | None = None) -> dict[str, Any]:
    """Compile a fresh copy of ``fn`` capture-only (Dynamo, no Inductor) and call it once per
    ``(label, args)``: each call's latency (first-call timing), whether it compiled and, for a
    recompile, the guard that failed; the number of compiles and the first compile's guard tree."""
    torch = require_torch()
    backend = CaptureBackend()
    f, out = torch.compile(fresh_function(fn), backend=backend, dynamic=dynamic), []
    with dynamo_logs() as cap:
        for k, (label, args) in enumerate(calls):
            before, since = backend.compiles, len(cap.messages)
            if progress:
                progress(k / len(calls), label)
            secs, _ = first_call(lambda: f(*args), sync)
            reasons = [failed_guard(m) for m in cap.texts(RECOMPILES, since=since)]
            out.append({"label": label, "seconds": secs, "compiled": backend.compiles > before,
                        "reason": reasons[-1] if reasons else ""})
        tree = next((t for t in guard_trees(cap.texts(GUARDS)) if "+- " in t), "")
    return {"calls": out, "compiles": backend.compiles, "guard_tree": tree}


def recompile_limit() -> int:
    """How many compiles Dynamo keeps per function before it runs new inputs eagerly."""
    cfg = require_torch()._dynamo.config
    return int(getattr(cfg, "recompile_limit", getattr(cfg, "cache_size_limit", 8)))
