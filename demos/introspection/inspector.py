"""What torch.compile and jax.jit do with *your* function: one report, usable in any notebook.

    from demos import inspect_fn
    report = inspect_fn(f, torch.randn(1024, 1024))          # torch.compile (Inductor)
    report = inspect_fn(f, x, jax_fn=f_jax)                   # … and jax.jit of a jax.numpy twin
    print(report.text())                                      # or report.to_dict()

For torch the report holds: the captured graphs; each graph break with its reason in plain words,
the line of your source it happened at, and the hint (torch's, or ours where torch gives none);
the guards in plain words; eager's aten ops against Inductor's kernels and library calls; an
excerpt of the generated code; the compile time with the caches bypassed (apart from the steady
state); eager and compiled latency, median with p10/p90, measured interleaved from the declared
state (:mod:`demos.engine.protocol`); the calls until compiling pays; and the largest difference
from eager, with why. For a jax.numpy twin: jaxpr equations against XLA fusions, ``cost_analysis``
FLOPs and bytes, an excerpt of the optimized HLO, the compile time, latency, and the tracer error
a data-dependent branch raises. :func:`sweep` calls the function over a range of one dimension's
sizes: hit or miss per call, the guard that failed, when automatic dynamic shapes take over, when
the recompile limit falls back to eager, and JAX's cache-miss reason beside each.

Eager and compiled each run on their own copies of the inputs, so a function that mutates its
inputs is reported (``mutates``) and measured fairly. Nothing here isolates a function that never
returns: the panel and ``python -m demos inspect`` run this module in a worker process with a
time limit and a memory cap (:mod:`demos.engine.worker`).

The private torch APIs are wrapped here and in :mod:`demos.introspection.dynamo` /
:mod:`demos.introspection.hooks`, one place each: ``torch._dynamo`` (``ExplainWithBackend``,
``config``, ``reset``), Inductor's generated code (``hooks.output_code``),
``torch._inductor.config.force_disable_caches`` (a compile with the caches bypassed) and
``torch._logging`` (the guard and recompile artifacts). The JAX APIs used are public.
"""
from __future__ import annotations

import contextlib
import io
import linecache
import math
import re
import sys
import time
import traceback
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from demos.engine.devices import require_jax, require_torch, torch_device
from demos.engine.errors import DemoError, one_line
from demos.engine.protocol import declared_state, fresh_function
from demos.engine.timing import first_call, measure_interleaved, sync_jax, sync_torch
from demos.introspection import codegen, dynamo
from demos.introspection.hooks import output_code

SOURCE_NAME = "<your code>"
DTYPES = ("float32", "float64", "bfloat16", "float16")
BUDGET_S = 0.3
# Hints where torch's own reason carries none (its newer reasons end in "Hint: …" lines).
_HINTS = (
    ("generic_jump", "a Python `if` on a tensor's value: use torch.where(cond, a, b), or torch.cond for two branches"),
    ("data-dependent", "a Python `if` on a tensor's value: use torch.where(cond, a, b), or torch.cond for two branches"),
    ("item()", "keep the value a tensor (no .item()), or set torch._dynamo.config.capture_scalar_outputs = True"),
    ("print", "move print() out of the compiled function, or log outside it"),
)


# =======================================================================================
# Source text → function (what the panel's code box and `inspect FILE.py:FUNC` hand in)
# =======================================================================================
_RUNS = [0]


def load_source(source: str, filename: str | None = None) -> dict[str, Any]:
    """Execute ``source`` in a namespace of its own, its lines registered with ``linecache``
    under ``filename`` (so tracebacks, Dynamo and this report can quote them). A syntax error is
    one line with its line and column; an error while defining is one line with its line."""
    if not isinstance(source, str) or not source.strip():
        raise DemoError("the code box is empty: define a function, e.g. def f(x): return x.sin() * 2")
    _RUNS[0] += 1
    filename = filename or f"{SOURCE_NAME[:-1]} #{_RUNS[0]}>"
    try:
        code = compile(source, filename, "exec")
    except SyntaxError as exc:
        where = f"line {exc.lineno}, column {exc.offset}" if exc.lineno else "somewhere"
        raise DemoError(f"syntax error at {where}: {exc.msg}") from None
    lines = source.splitlines(keepends=True)
    linecache.cache[filename] = (len(source), None, lines, filename)
    # a real module (torch.cond compiles its branches and imports their module by name)
    module = types.ModuleType(f"yourcode_{_RUNS[0]}")
    module.__file__ = filename
    sys.modules[module.__name__] = module
    namespace = module.__dict__
    try:
        exec(code, namespace)
    except Exception as exc:
        raise DemoError(f"defining your code failed: {user_error(exc, filename)}") from None
    namespace["__filename__"] = filename
    return namespace


def pick_function(namespace: dict[str, Any], name: str | None = None) -> Callable:
    """The function ``name`` of a loaded source, or the first one it defines."""
    filename = namespace.get("__filename__", "")
    funcs = {k: v for k, v in namespace.items() if isinstance(v, types.FunctionType)
             and v.__code__.co_filename == filename}
    if name:
        if name not in funcs:
            raise DemoError(f"no function {name!r} in your code (it defines: {', '.join(funcs) or 'none'})")
        return funcs[name]
    plain = [f for k, f in funcs.items() if not k.endswith("_jax")]
    if not plain:
        raise DemoError("your code defines no function (def f(x): …)")
    return plain[0]


def user_error(exc: BaseException, filename: str | None = None) -> str:
    """An exception raised inside the user's code as one line: its type, first line, and the last
    line of the user's source it passed through."""
    line = None
    for fr in traceback.extract_tb(exc.__traceback__):
        if (filename and fr.filename == filename) or (not filename and fr.filename.startswith(SOURCE_NAME[:-1])):
            line = fr
    text = one_line(exc)
    if line is not None:
        return f"line {line.lineno} ({(line.line or '').strip()[:60]}): {text}"
    return text


# =======================================================================================
# Inputs
# =======================================================================================
def parse_shape(text: str | Sequence[int]) -> tuple[int, ...]:
    """``"1024x1024"`` → (1024, 1024); at most 4 dimensions, each 1 … 2^26."""
    if isinstance(text, str):
        parts = [p.strip() for p in text.lower().replace("×", "x").replace(",", "x").split("x")]
        try:
            dims = tuple(int(p, 10) for p in parts if p)
        except ValueError:
            raise DemoError(f"shape {text!r}: give sizes like 1024x1024") from None
    else:
        dims = tuple(text)
    if not 1 <= len(dims) <= 4 or any(isinstance(d, bool) or not isinstance(d, int) or not 1 <= d <= 2**26 for d in dims):
        raise DemoError(f"shape {text!r}: 1 to 4 sizes, each from 1 to 2^26")
    return dims


def positional_count(fn: Callable) -> int:
    """How many inputs the function takes (positional parameters without defaults), 1 … 4."""
    import inspect

    params = [p for p in inspect.signature(fn).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    if not 1 <= len(params) <= 4:
        raise DemoError(f"{fn.__name__} takes {len(params)} inputs; the inspector feeds 1 to 4 tensors")
    return len(params)


def input_bytes(shape: tuple[int, ...], dtype: str, count: int) -> int:
    item = {"float64": 8, "float32": 4, "bfloat16": 2, "float16": 2}[dtype]
    return math.prod(shape) * item * count


def check_fits(shape: tuple[int, ...], dtype: str, count: int, limit_bytes: int) -> None:
    """Refuse, before allocating anything, inputs whose copies would not fit: eager and compiled
    each get copies, and the function's intermediates need room too (×8)."""
    need = input_bytes(shape, dtype, count) * 8
    if need > limit_bytes:
        raise DemoError(f"shape {'x'.join(map(str, shape))} {dtype} × {count} input{'s' * (count != 1)} needs "
                        f"~{need / 2**30:.1f} GiB with copies and intermediates; the limit here is "
                        f"{limit_bytes / 2**30:.1f} GiB: choose a smaller shape")


def torch_inputs(shape: tuple[int, ...], dtype: str, count: int, device: str | None = None, rng: int = 0) -> list:
    torch = require_torch()
    if dtype not in DTYPES:
        raise DemoError(f"dtype {dtype!r}: one of {', '.join(DTYPES)}")
    g = torch.Generator().manual_seed(rng)
    dev = device or torch_device()
    return [torch.randn(shape, generator=g, dtype=torch.float32).to(device=dev, dtype=getattr(torch, dtype))
            for _ in range(count)]


def jax_inputs(torch_xs: list) -> list:
    """The same values as JAX arrays (through float32 numpy: JAX's CPU has no bfloat16 numpy)."""
    jax = require_jax()
    import jax.numpy as jnp

    out = []
    for x in torch_xs:
        arr = x.detach().float().cpu().numpy()
        out.append(jax.device_put(jnp.asarray(arr, dtype=str(x.dtype).replace("torch.", ""))))
    return out


# =======================================================================================
# The report
# =======================================================================================
@dataclass
class Report:
    """What :func:`inspect_fn` found (``to_dict()`` is JSON-able; ``text()`` reads in a terminal)."""
    name: str
    inputs: str
    device: str
    torch: dict[str, Any] = field(default_factory=dict)
    jax: dict[str, Any] | None = None
    sweep: dict[str, Any] | None = None
    source: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "inputs": self.inputs, "device": self.device, "torch": self.torch,
                "jax": self.jax, "sweep": self.sweep, "source": self.source, "seconds": round(self.seconds, 3)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Report":
        return cls(name=d["name"], inputs=d["inputs"], device=d["device"], torch=d.get("torch") or {},
                   jax=d.get("jax"), sweep=d.get("sweep"), source=d.get("source") or [], seconds=d.get("seconds", 0.0))

    def summary(self) -> str:
        """One line: breaks, recompiles, kernels eager → compiled, speedup, compile time."""
        return summary_line(self.to_dict())

    def text(self) -> str:
        return report_text(self.to_dict())


def summary_line(d: dict[str, Any]) -> str:
    t = d.get("torch") or {}
    if t.get("error"):
        return f"{d['name']}: {t['error']}"
    bits = [f"{t.get('graphs', 0)} graph{'s' * (t.get('graphs') != 1)}",
            f"{t.get('breaks', 0)} break{'s' * (t.get('breaks') != 1)}"]
    sw = d.get("sweep") or {}
    if sw.get("torch"):
        bits.append(f"{sw['torch']['compiles']} compiles over {len(sw['torch']['calls'])} sizes")
    if t.get("kernels") is not None:
        ops = "?" if t.get("eager_ops") is None else t["eager_ops"]
        bits.append(f"{ops} aten ops → {t['kernels']} kernel{'s' * (t['kernels'] != 1)}"
                    + (f" + {len(t['library_calls'])} library call{'s' * (len(t['library_calls']) != 1)}"
                       if t.get("library_calls") else ""))
    if t.get("speedup"):
        bits.append(f"{t['speedup']:.2f}× compiled vs eager")
    if t.get("compile_s") is not None:
        bits.append(f"compile {t['compile_s']:.2f} s")
    return f"{d['name']}: " + " · ".join(bits)


def call_kind(c: dict[str, Any]) -> str:
    """One sweep call in words: a cache hit, a (dynamic) recompile, or eager after the limit."""
    if c["fallback"] and not c["compiled"]:
        return "eager (recompile limit reached: runs uncompiled)"
    if c["compiled"]:
        return "miss → compiled" + (" dynamic" if c["dynamic"] else " static")
    return "hit"


def report_text(d: dict[str, Any]) -> str:
    from demos.engine.timing import fmt_seconds

    t = d.get("torch") or {}
    out = [f"{d['name']}({d['inputs']}) on {d['device']}", "  " + summary_line(d)]
    for b in t.get("break_list", []):
        out.append(f"  break at line {b['line']}: {b['source']}  — {b['plain']}")
        if b.get("hint"):
            out.append(f"      hint: {b['hint']}")
    if t.get("guards"):
        out.append(f"  guards ({t.get('guard_count', len(t['guards']))}): " + "; ".join(t["guards"][:6]))
    if t.get("eager") and t.get("compiled"):
        out.append(f"  eager {fmt_seconds(t['eager']['median'])} (p10–p90 {fmt_seconds(t['eager']['p10'])}–"
                   f"{fmt_seconds(t['eager']['p90'])}) · compiled {fmt_seconds(t['compiled']['median'])} "
                   f"(p10–p90 {fmt_seconds(t['compiled']['p10'])}–{fmt_seconds(t['compiled']['p90'])})")
        out.append(f"  pays after: {t['pays_after'] if t.get('pays_after') else 'never at this size'}"
                   + (" calls" if t.get("pays_after") else ""))
    if t.get("numerics"):
        out.append(f"  numerics: max |compiled − eager| = {t['numerics']['max_abs']:.3g} — {t['numerics']['why']}")
    if t.get("mutates"):
        out.append("  mutates its inputs: eager and compiled each ran on copies")
    j = d.get("jax")
    if j:
        if j.get("error"):
            out.append(f"  jax.jit: {j['error']}")
        else:
            out.append(f"  jax.jit: {j['jaxpr_eqns']} jaxpr equations → {j['fusions']} fusions, {j['kernels']} kernels; "
                       f"{j.get('flops') or 0:.3g} FLOPs, {j.get('bytes') or 0:.3g} bytes; compile {j['compile_s']:.2f} s")
    sw = d.get("sweep") or {}
    for c in (sw.get("torch") or {}).get("calls", []):
        jx = next((x for x in (sw.get("jax") or {}).get("calls", []) if x["size"] == c["size"]), None)
        out.append(f"  size {c['size']:>6}: {call_kind(c)}"
                   f"{(' — ' + c['reason']) if c['reason'] else ''}"
                   + (f" | jax {'miss' if jx['miss'] else 'hit'}{(' — ' + jx['reason']) if jx['reason'] else ''}"
                      if jx else ""))
    return "\n".join(out)


# =======================================================================================
# torch.compile
# =======================================================================================
@contextlib.contextmanager
def _quiet_torch():
    """Dynamo's and Inductor's warnings collected, not printed (a graph break logs a paragraph)."""
    with dynamo.capture_logs(["torch._dynamo", "torch._inductor", "torch.fx.experimental.symbolic_shapes"]) as cap:
        yield cap


def _clone(xs: list) -> list:
    return [x.detach().clone() for x in xs]


def _tensors(out: Any) -> list:
    """The tensors of an output (a tensor, or a tuple/list/dict of them); DemoError otherwise."""
    torch = require_torch()
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)) and out and all(isinstance(o, torch.Tensor) for o in out):
        return list(out)
    if isinstance(out, dict) and out and all(isinstance(o, torch.Tensor) for o in out.values()):
        return list(out.values())
    raise DemoError(f"your function returned {type(out).__name__}, not a tensor (return a tensor or a tuple of tensors)")


class _OpCounter:
    """Counts the aten ops eager dispatches (views and allocations left out)."""

    def __init__(self):
        from torch.utils._python_dispatch import TorchDispatchMode

        from demos.introspection.trace import BOOKKEEPING_OPS

        counter = self

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types_, args=(), kwargs=None):
                name = "aten::" + func.__name__.split(".")[0]
                if name not in BOOKKEEPING_OPS:
                    counter.ops.append(name[6:])
                return func(*args, **(kwargs or {}))

        self.ops: list[str] = []
        self.mode = Mode()


def hint_for(reason: str) -> str:
    """torch's own hint (its 'Hint:' lines), else ours for the reasons it gives none."""
    hints = [ln.strip()[len("Hint:"):].strip() for ln in reason.splitlines() if ln.strip().startswith("Hint:")]
    hints = [h for h in hints if "report an issue" not in h.lower()]
    if hints:
        return hints[0]
    low = reason.lower()
    return next((h for key, h in _HINTS if key in low), "")


def _breaks(fn: Callable, xs: list, filename: str) -> dict[str, Any]:
    """Graphs, breaks (reason, plain words, your line, hint) and guards, from a capture-only compile."""
    torch = require_torch()
    from torch._dynamo.backends.debugging import ExplainWithBackend

    eb = ExplainWithBackend("eager")
    with dynamo.dynamo_logs() as cap:
        torch.compile(fresh_function(fn, "explain"), backend=eb)(*_clone(xs))
    ex = eb.output()
    found = []
    for r in ex.break_reasons:
        frames = [f for f in r.user_stack if f.filename == filename] or list(r.user_stack[-1:])
        fr = frames[-1] if frames else None
        reason = str(r.reason)
        found.append({"reason": reason.strip().splitlines()[0][:200], "plain": dynamo.plain_reason(reason),
                      "hint": hint_for(reason), "line": fr.lineno if fr else None,
                      "source": (fr.line or "").strip() if fr else ""})
    trees = dynamo.guard_trees(cap.texts(dynamo.GUARDS))
    tree = next((t for t in trees if "+- " in t), trees[-1] if trees else "")
    return {"graphs": ex.graph_count, "breaks": ex.graph_break_count, "break_list": found,
            "ops_per_graph": [len(o) for o in (ex.ops_per_graph or [])],
            "guards": dynamo.plain_guards(tree) if tree else [], "guard_count": len(dynamo.guard_leaves(tree))}


def _cold_compile(fn: Callable, xs: list, sync) -> tuple[float, Any, list[str]]:
    """torch.compile (Inductor) of a fresh copy, first call timed with every cache bypassed
    (``force_disable_caches``): compile seconds, the compiled callable, the generated code."""
    torch = require_torch()
    from torch._inductor import config as inductor_config

    compiled = torch.compile(fresh_function(fn, "inspect"))
    with output_code() as codes, inductor_config.patch(force_disable_caches=True):
        secs, _ = first_call(lambda: compiled(*_clone(xs)), sync)
    return secs, compiled, codes


def _numerics(eager: list, compiled: list, source: str) -> dict[str, Any]:
    torch = require_torch()
    worst, scale = 0.0, 0.0
    for a, b in zip(eager, compiled):
        if a.shape != b.shape:
            return {"max_abs": float("nan"), "rel": float("nan"),
                    "why": f"compiled output has shape {tuple(b.shape)}, eager {tuple(a.shape)}"}
        if a.numel():
            d = (a.double() - b.double()).abs()
            worst = max(worst, float(torch.nan_to_num(d, nan=0.0).max()))
            scale = max(scale, float(torch.nan_to_num(a.double().abs(), nan=0.0).max()))
    rel = worst / scale if scale else worst
    rng = bool(re.search(r"\b(rand\w*|bernoulli\w*|dropout\w*|normal_|uniform_|multinomial|randperm)\b", source))
    if worst == 0.0:
        why = "bit-identical to eager"
    elif rng:
        why = ("random numbers differ: Inductor draws its own (set torch._inductor.config.fallback_random = True "
               "to match eager's)")
    else:
        why = ("floating-point reassociation: fused kernels add and multiply in another order (and may use "
               "FMA or vectorised reductions), so the last bits differ")
    return {"max_abs": worst, "rel": rel, "why": why}


def inspect_torch(fn: Callable, xs: list, budget_s: float = BUDGET_S, progress=None) -> dict[str, Any]:
    """The torch half of the report (see the module docstring)."""
    torch = require_torch()
    progress = progress or (lambda _f, _m="": None)
    filename = fn.__code__.co_filename
    source = "".join(linecache.getlines(filename))
    device = xs[0].device.type if xs else torch_device()
    sync = sync_torch(device)
    out: dict[str, Any] = {"device": device}
    # eager, on copies: does it run, what does it return, does it mutate its inputs, how many ops
    progress(0.05, "running it eagerly")
    ins = _clone(xs)
    try:
        eager_ts = [t.detach().clone() for t in _tensors(fn(*ins))]
    except DemoError:
        raise
    except Exception as exc:
        raise DemoError(f"your function raised in eager mode: {user_error(exc, filename)}") from None
    counter = _OpCounter()
    if "torch.cond" in source or "higher_order" in source:
        counter.ops = None  # a higher-order op: the counting mode cannot enter it (and would leave it broken)
    else:
        try:
            copies = _clone(xs)  # cloned outside the count
            with counter.mode:
                fn(*copies)
        except Exception:  # counting is a nicety: the report says "?" rather than fail
            counter.ops = None
    out["mutates"] = any(not torch.equal(a, b) for a, b in zip(ins, xs) if a.dtype == b.dtype and a.shape == b.shape)
    out["eager_ops"] = None if counter.ops is None else len(counter.ops)
    out["eager_op_names"] = (counter.ops or [])[:40]
    with _quiet_torch():
        progress(0.2, "capturing graphs, breaks and guards")
        try:
            out.update(_breaks(fn, xs, filename))
        except Exception as exc:
            raise DemoError(f"torch.compile could not capture it: {user_error(exc, filename)}") from None
        progress(0.35, "compiling with Inductor (caches bypassed)")
        try:
            secs, compiled, codes = _cold_compile(fn, xs, sync)
        except Exception as exc:
            raise DemoError(f"torch.compile failed: {user_error(exc, filename)}") from None
        out["compile_s"] = secs
        if codes:
            parsed = codegen.parse_inductor(codes, device=device)
            out["kernels"] = parsed.kernel_count
            out["library_calls"] = parsed.library_calls
            out["code_excerpt"] = codegen.generated_excerpt(parsed)[:60]
        else:
            out["kernels"], out["library_calls"], out["code_excerpt"] = 0, [], ["# nothing was compiled: it all ran eagerly"]
        compiled_ts = [t.detach().clone() for t in _tensors(compiled(*_clone(xs)))]
        out["numerics"] = _numerics(eager_ts, compiled_ts, source)
        progress(0.55, "timing eager and compiled, interleaved")
        a, b = _clone(xs), _clone(xs)
        with declared_state() as cond:
            times = measure_interleaved({"eager": (lambda: fn(*a), sync), "compiled": (lambda: compiled(*b), sync)},
                                        budget_s=budget_s)
    out["conditions"] = cond.stamp()
    out["eager"], out["compiled"] = times["eager"].to_dict(), times["compiled"].to_dict()
    e, c = times["eager"].median, times["compiled"].median
    out["speedup"] = e / c if c > 0 else None
    out["pays_after"] = math.ceil(secs / (e - c)) if e > c else None
    return out


# =======================================================================================
# jax.jit
# =======================================================================================
def inspect_jax(fn: Callable, xs: list, budget_s: float = BUDGET_S) -> dict[str, Any]:
    """The JAX half: jaxpr equations, XLA fusions and kernels, cost analysis, HLO excerpt, compile
    time (persistent cache off), op-by-op vs jit latency; or the tracer error and your line."""
    jax = require_jax()
    filename = fn.__code__.co_filename
    out: dict[str, Any] = {"error": "", "error_type": ""}
    f = fresh_function(fn, "jit")
    try:
        old = jax.config.jax_enable_compilation_cache
        jax.config.update("jax_enable_compilation_cache", False)
        try:
            t0 = time.perf_counter()
            jax.jit(f).lower(*xs).compile()
            out["compile_s"] = time.perf_counter() - t0
        finally:
            jax.config.update("jax_enable_compilation_cache", old)
    except Exception as exc:
        out["error_type"] = type(exc).__name__
        out["error"] = user_error(exc, filename)
        out["line"] = next((fr.lineno for fr in traceback.extract_tb(exc.__traceback__) if fr.filename == filename), None)
        return out
    code = codegen.xla_code(f, *xs)
    out.update(jaxpr_eqns=code.jaxpr_eqns, fusions=code.fusion_count, kernels=code.kernel_count,
               library_calls=code.library_calls, flops=(code.cost or {}).get("flops"),
               bytes=(code.cost or {}).get("bytes accessed"), hlo_excerpt=codegen.hlo_excerpt(code.hlo)[:40],
               jaxpr=code.jaxpr.splitlines()[:30])
    jitted = jax.jit(f)
    sync = sync_jax()
    with declared_state():
        times = measure_interleaved({"op-by-op": (lambda: fn(*xs), sync), "jit": (lambda: jitted(*xs), sync)},
                                    budget_s=budget_s)
    out["op_by_op"], out["jit"] = times["op-by-op"].to_dict(), times["jit"].to_dict()
    return out


# =======================================================================================
# Recompilation: one dimension swept
# =======================================================================================
def sweep_sizes(base: int, count: int = 10) -> list[int]:
    """``count`` distinct sizes of one dimension: base, base+1, … (more than the recompile limit)."""
    return [max(1, base + k) for k in range(count)]


def sweep(fn: Callable, xs: list, dim: int = 0, sizes: Sequence[int] | None = None,
          jax_fn: Callable | None = None) -> dict[str, Any]:
    """Call a fresh compiled copy once per size of dimension ``dim`` (default automatic dynamic,
    as ``torch.compile(fn)`` does): per call, hit or miss, the guard that failed, whether the graph
    compiled dynamic, whether the recompile limit sent it to eager; JAX's cache-miss reason beside."""
    torch = require_torch()
    if not xs or dim >= xs[0].dim():
        raise DemoError(f"cannot sweep dimension {dim} of inputs with {xs[0].dim() if xs else 0} dimensions")
    sizes = list(sizes or sweep_sizes(xs[0].shape[dim]))
    compiles: list[bool] = []

    def backend(gm, example_inputs):
        compiles.append(dynamo.symbolic(example_inputs))
        return gm.forward

    def resized(n: int) -> list:
        ys = []
        for x in xs:
            shape = list(x.shape)
            if dim < len(shape):
                shape[dim] = n
            ys.append(torch.randn(shape, dtype=torch.float32).to(x.dtype).to(x.device))
        return ys

    f = torch.compile(fresh_function(fn, "sweep"), backend=backend)
    calls = []
    fell_back = False
    with _quiet_torch(), dynamo.torch_recompile_log() as cap:
        for n in sizes:
            before, since = len(compiles), len(cap.messages)
            f(*resized(n))
            new = cap.messages[since:]
            reason, limit = dynamo.read_recompiles(new)
            fell_back = fell_back or bool(limit)
            compiled = len(compiles) > before
            calls.append({"size": n, "compiled": compiled, "dynamic": bool(compiled and compiles[-1]),
                          "fallback": bool(limit) or (fell_back and not compiled), "reason": reason})
    out: dict[str, Any] = {"dim": dim, "torch": {"calls": calls, "compiles": len(compiles),
                                                  "limit": dynamo.recompile_limit()}}
    if jax_fn is not None:
        out["jax"] = _jax_sweep(jax_fn, xs, dim, sizes)
    return out


def _jax_sweep(fn: Callable, xs: list, dim: int, sizes: list[int]) -> dict[str, Any]:
    jax = require_jax()
    import jax.numpy as jnp

    jitted = jax.jit(fresh_function(fn, "jsweep"))
    calls = []
    try:
        with dynamo.jax_miss_log() as cap:
            for n in sizes:
                since = len(cap.messages)
                shape = list(xs[0].shape)
                shape[dim] = n
                args = [jnp.ones(shape, dtype=str(x.dtype).replace("torch.", "")) for x in xs]
                jitted(*args).block_until_ready() if hasattr(jitted(*args), "block_until_ready") else None
                reason = dynamo.read_jax_misses(cap.messages[since:])
                calls.append({"size": n, "miss": bool(reason), "reason": reason})
    except Exception as exc:
        return {"calls": calls, "error": one_line(exc)}
    return {"calls": calls, "misses": sum(c["miss"] for c in calls)}


# =======================================================================================
# The entry point
# =======================================================================================
def inspect_fn(fn: Callable, *example_inputs: Any, jax_fn: Callable | None = None, sweep_dim: int | None = 0,
               sweep_count: int = 10, budget_s: float = BUDGET_S, progress=None) -> Report:
    """Everything above for ``fn(*example_inputs)`` (torch tensors), and for ``jax_fn`` (a
    jax.numpy twin, optional) on the same values. ``sweep_dim=None`` skips the recompilation sweep."""
    torch = require_torch()
    if not isinstance(fn, types.FunctionType):
        raise DemoError(f"inspect_fn needs a Python function, not {type(fn).__name__}")
    if not example_inputs or not all(isinstance(x, torch.Tensor) for x in example_inputs):
        raise DemoError("inspect_fn(fn, *inputs): give example inputs as torch tensors")
    t0 = time.perf_counter()
    xs = list(example_inputs)
    shape = "x".join(map(str, xs[0].shape))
    rep = Report(name=fn.__name__, inputs=", ".join(f"{'x'.join(map(str, x.shape))} {str(x.dtype)[6:]}" for x in xs),
                 device=torch_device(), source=linecache.getlines(fn.__code__.co_filename))
    printed = io.StringIO()  # what the function prints (once per call: it would flood the notebook)
    with contextlib.redirect_stdout(printed):
        rep.torch = inspect_torch(fn, xs, budget_s=budget_s, progress=progress)
        if jax_fn is not None:
            if progress:
                progress(0.75, "jax.jit of the jax.numpy twin")
            rep.jax = inspect_jax(jax_fn, jax_inputs(xs), budget_s=budget_s)
        if sweep_dim is not None:
            if progress:
                progress(0.85, f"sweeping dimension {sweep_dim} from {shape}")
            rep.sweep = sweep(fn, xs, sweep_dim, sweep_sizes(xs[0].shape[sweep_dim], sweep_count),
                              jax_fn=jax_fn if rep.jax and not rep.jax.get("error") else None)
    lines = printed.getvalue().splitlines()
    rep.torch["printed"] = {"lines": len(lines), "first": lines[:3]}
    rep.seconds = time.perf_counter() - t0
    return rep


def inspect_source(source: str, func: str | None = None, shape: str | Sequence[int] = "1024x1024",
                   dtype: str = "float32", jax: bool = True, sweep_dim: int | None = 0,
                   limit_bytes: int = 2 * 2**30, budget_s: float = BUDGET_S, progress=None) -> dict[str, Any]:
    """The report of function ``func`` (else the first) defined by ``source`` (what the panel's
    code box and ``python -m demos inspect FILE.py:FUNC`` give), with its ``<name>_jax`` twin when
    the source defines one. Sizes are checked before anything is allocated."""
    dims = parse_shape(shape)
    if dtype not in DTYPES:
        raise DemoError(f"dtype {dtype!r}: one of {', '.join(DTYPES)}")
    ns = load_source(source)
    fn = pick_function(ns, func)
    count = positional_count(fn)
    check_fits(dims, dtype, count, limit_bytes)
    twin = ns.get(f"{fn.__name__}_jax") if jax else None
    if twin is not None and not isinstance(twin, types.FunctionType):
        twin = None
    if twin is not None:
        from demos.engine.devices import jax_or_none

        twin = twin if jax_or_none() is not None else None
    xs = torch_inputs(dims, dtype, count)
    if sweep_dim is not None and sweep_dim >= len(dims):
        sweep_dim = None
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Dynamo's and JAX's warnings: the report says what matters
        rep = inspect_fn(fn, *xs, jax_fn=twin, sweep_dim=sweep_dim, budget_s=budget_s, progress=progress)
    d = rep.to_dict()
    d["has_jax_twin"] = twin is not None
    return d


def warm_compiler(progress=None) -> dict[str, Any]:
    """Compile a tiny function once with each compiler, so a worker's first inspection does not pay
    Inductor's and XLA's one-time start-up (seconds) inside its compile time."""
    torch = require_torch()
    t0 = time.perf_counter()

    def tiny(x):
        return torch.relu(torch.sin(x) * 2)

    torch.compile(fresh_function(tiny, "warm"))(torch.ones(64))
    from demos.engine.devices import jax_or_none

    jax = jax_or_none()
    if jax is not None:
        import jax.numpy as jnp

        jax.jit(lambda x: jnp.sin(x) * 2)(jnp.ones(64)).block_until_ready()
    return {"seconds": time.perf_counter() - t0}


def ensure_worker(worker, progress=None) -> float | None:
    """Start ``worker`` and warm its compilers if it is not running; the seconds that took (None
    when it was already warm)."""
    if worker.alive:
        return None
    if progress:
        progress(0.0, "starting the worker process (torch, JAX, the compilers)…")
    t0 = time.perf_counter()
    worker.start()
    worker.call("demos.introspection.inspector", "warm_compiler", {}, timeout_s=600)
    return time.perf_counter() - t0


# The worker process the panel and the command line run inspections in (demos.engine.worker):
# torch and JAX imported once; a time limit and a memory cap per Run.
WORKER_PRELOAD = ("torch", "jax", "demos.introspection.inspector")


def run_isolated(worker, source: str, func: str | None = None, shape: str = "1024x1024", dtype: str = "float32",
                 jax: bool = True, sweep_dim: int | None = 0, timeout_s: float = 120.0,
                 memory_bytes: int | None = None, progress=None) -> dict[str, Any]:
    """:func:`inspect_source` in ``worker`` (a :class:`demos.engine.worker.Worker`). What can be
    refused without running anything (a syntax error, a bad shape or dtype) is refused here first."""
    try:
        compile(source, SOURCE_NAME, "exec")
    except SyntaxError as exc:
        where = f"line {exc.lineno}, column {exc.offset}" if exc.lineno else "somewhere"
        raise DemoError(f"syntax error at {where}: {exc.msg}") from None
    dims = parse_shape(shape)
    if dtype not in DTYPES:
        raise DemoError(f"dtype {dtype!r}: one of {', '.join(DTYPES)}")
    from demos.engine.worker import default_memory_bytes

    cap = memory_bytes or default_memory_bytes()
    check_fits(dims, dtype, 1, cap)
    started = ensure_worker(worker, progress)
    t0 = time.perf_counter()
    out = worker.call("demos.introspection.inspector", "inspect_source",
                       {"source": source, "func": func, "shape": "x".join(map(str, dims)), "dtype": dtype, "jax": jax,
                        "sweep_dim": sweep_dim, "limit_bytes": cap}, timeout_s=timeout_s, memory_bytes=cap,
                     progress=progress)
    out["worker"] = {"start_s": started, "run_s": time.perf_counter() - t0, "starts": worker.starts}
    return out

