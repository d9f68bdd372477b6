"""The torch half of the inspector: what torch.compile does with one function, and over sizes.

:func:`inspect_torch` runs the function eagerly on copies of its inputs (does it run, does it
mutate its inputs, how many aten ops it dispatches), captures its graphs, graph breaks (reason
in plain words, your line, a hint: torch's, or ours where torch gives none) and guards, compiles
it with Inductor with the caches bypassed (compile seconds, kernels and library calls, an excerpt
of the generated code), compares compiled with eager numerically, and times both interleaved
from the declared state (:mod:`demos.engine.protocol`). :func:`sweep` calls a fresh compiled copy
once per size of one dimension: hit or miss, the guard that failed, when automatic dynamic shapes
take over, when the recompile limit falls back to eager (with JAX's cache-miss reasons beside,
from :func:`demos.introspection.inspector_jax.jax_sweep`).

The private torch API this module uses itself is ``torch._inductor.config.force_disable_caches``
(a compile with the caches bypassed). Graphs, breaks, Dynamo's logs, config and reset go through
:mod:`demos.introspection.dynamo`, Inductor's generated code through
:func:`demos.introspection.hooks.output_code`, and eager's aten ops through
:func:`demos.engine.model_zoo.dispatched_ops`.
"""
from __future__ import annotations

import contextlib
import linecache
import re
from typing import Any, Callable, Sequence

from demos.engine.devices import require_torch, torch_device
from demos.engine.errors import DemoError
from demos.engine.model_zoo import dispatched_ops
from demos.engine.measurement import quiet
from demos.engine.protocol import fresh_function
from demos.engine.timing import compile_seconds, first_call, pays_after, sync_torch
from demos.introspection import dynamo, inductor
from demos.introspection.hooks import CaptureBackend, output_code
from demos.introspection.inspector_inputs import BUDGET_S, EAGER_STAGE, time_against, user_error
from demos.introspection.inspector_jax import jax_sweep
from demos.introspection.trace import BOOKKEEPING_OPS

# Hints where torch's own reason carries none (its newer reasons end in "Hint: …" lines).
_HINTS = (
    ("generic_jump", "a Python `if` on a tensor's value: use torch.where(cond, a, b), or torch.cond for two branches"),
    ("data-dependent", "a Python `if` on a tensor's value: use torch.where(cond, a, b), or torch.cond for two branches"),
    ("item()", "keep the value a tensor (no .item()), or set torch._dynamo.config.capture_scalar_outputs = True"),
    ("print", "move print() out of the compiled function, or log outside it"),
)


# =======================================================================================
# torch.compile
# =======================================================================================
@contextlib.contextmanager
def quiet_torch():
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
    with dynamo.dynamo_logs() as cap:
        ex = dynamo.explain(fn, *_clone(xs), in_file=filename)
    found = [{"reason": r["reason"], "plain": r["plain"], "hint": hint_for(r["text"]), "line": r["line"],
              "source": r["source"]} for r in ex["reasons"]]
    trees = dynamo.guard_trees(cap.texts(dynamo.GUARDS))
    tree = next((t for t in trees if "+- " in t), trees[-1] if trees else "")
    return {"graphs": ex["graphs"], "breaks": ex["breaks"], "break_list": found, "ops_per_graph": ex["ops_per_graph"],
            "guards": dynamo.plain_guards(tree) if tree else [], "guard_count": len(dynamo.guard_leaves(tree))}


def _cold_compile(fn: Callable, xs: list, sync) -> tuple[float, Any, list[str]]:
    """torch.compile (Inductor) of a fresh copy, first call timed with every cache bypassed
    (``force_disable_caches``): the first call's seconds (compile and one run), the compiled
    callable, the generated code."""
    torch = require_torch()
    from torch._inductor import config as inductor_config

    compiled = torch.compile(fresh_function(fn, "inspect"))
    with output_code() as codes, inductor_config.patch(force_disable_caches=True):
        secs, _ = first_call(lambda: compiled(*_clone(xs)), sync)
    return secs, compiled, codes


# Why compiled and eager differ, read off the eager ops (their overload names), else the source:
# - a low-precision dtype: Inductor keeps bfloat16/float16 intermediates in float32 and rounds once,
#   where eager rounds every op's result (config.emulate_precision_casts, off by default, keeps them)
# - transcendental functions: another math library (Inductor's C++: ATen's at::vec, SLEEF; eager's
#   x86 build: MKL's VML, ATen/cpu/vml.h; on a GPU, Triton's own lowering), last-bit differences
# - on a GPU, FMA: Triton contracts a·b+c into one rounding (enable_fp_fusion; Inductor's C++ is
#   built with -ffp-contract=off, torch/_inductor/config.py cpp.enable_floating_point_contract_flag)
# - a reduction: a sum in another order (reassociation: Inductor splits and vectorises it its way)
# Measured on a CPU (torch 2.13): mul/add/relu alone are bit-identical in float32; sin and cos differ
# in the last bit; in bfloat16 every difference goes with emulate_precision_casts=True.
_MATH_OPS = ("sin", "cos", "tan", "tanh", "sinh", "cosh", "asin", "acos", "atan", "atan2", "exp", "exp2", "expm1",
             "log", "log2", "log10", "log1p", "sigmoid", "erf", "erfc", "erfinv", "pow", "sqrt", "rsqrt", "gelu",
             "silu", "softplus", "mish", "elu", "_softmax", "_log_softmax", "logsumexp", "lgamma", "digamma")
_SUM_OPS = ("sum", "mean", "var", "std", "var_mean", "std_mean", "nansum", "norm", "linalg_vector_norm", "cumsum",
            "prod", "_softmax", "_log_softmax", "logsumexp", "native_layer_norm", "native_group_norm",
            "native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_no_training")


def _causes(ops: Sequence[str] | None, source: str, lowp: list[str], device: str) -> str:
    """The likely causes of a difference, in a few words each (at most about three figure lines)."""
    if ops is None:  # not counted (torch.cond): the names the source calls
        ops = re.findall(r"\.(\w+)\(", source)
    seen = set(op.rstrip("_") for op in ops)
    maths = [op for op in _MATH_OPS if op in seen and not op.startswith("_")]
    out = []
    if lowp:
        out.append(f"{'/'.join(lowp)} roundings skipped (kept in float32)")
    if maths or any(op.startswith("_") and op in seen for op in _MATH_OPS):
        out.append(f"another math library ({', '.join(maths[:3]) or 'softmax'})")
    if device != "cpu":
        out.append("FMA (a·b+c rounded once)")
    if any(op in seen for op in _SUM_OPS):
        out.append("a reordered sum (reassociation)")
    return "likely: " + "; ".join(out) if out else "the fused kernel evaluates the ops another way (last bits)"


def _numerics(eager: list, compiled: list, source: str, ops: Sequence[str] | None = None,
              device: str = "cpu") -> dict[str, Any]:
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
        lowp = sorted({str(t.dtype).removeprefix("torch.") for t in eager
                       if t.dtype in (torch.bfloat16, torch.float16)})
        why = _causes(ops, source, lowp, device)
    return {"max_abs": worst, "rel": rel, "why": why}


def inspect_torch(fn: Callable, xs: list, budget_s: float = BUDGET_S, progress=None) -> dict[str, Any]:
    """The torch half of the report (see the module docstring)."""
    torch = require_torch()
    progress = progress or quiet
    filename = fn.__code__.co_filename
    source = "".join(linecache.getlines(filename))
    device = xs[0].device.type if xs else torch_device()
    sync = sync_torch(device)
    out: dict[str, Any] = {"device": device}
    # eager, on copies: does it run, what does it return, does it mutate its inputs, how many ops
    progress(0.05, EAGER_STAGE)
    ins = _clone(xs)
    try:
        eager_ts = [t.detach().clone() for t in _tensors(fn(*ins))]
    except DemoError:
        raise
    except Exception as exc:
        raise DemoError(f"your function raised in eager mode: {user_error(exc, filename)}") from None
    ops: list[str] | None = None
    if "torch.cond" not in source and "higher_order" not in source:  # the counting mode cannot enter
        try:                                                         # a higher-order op (and would break it)
            copies = _clone(xs)  # cloned outside the count
            ops = [op for op in dispatched_ops(lambda: fn(*copies))[1] if "aten::" + op not in BOOKKEEPING_OPS]
        except Exception:  # counting is a nicety: the report says "?" rather than fail
            ops = None
    out["mutates"] = any(not torch.equal(a, b) for a, b in zip(ins, xs) if a.dtype == b.dtype and a.shape == b.shape)
    out["eager_ops"] = None if ops is None else len(ops)
    out["eager_op_names"] = (ops or [])[:40]
    with quiet_torch():
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
        out["first_s"] = secs
        if codes:
            parsed = inductor.parse_inductor(codes, device=device)
            out["kernels"] = parsed.kernel_count
            out["library_calls"] = parsed.library_calls
            out["code_excerpt"] = inductor.generated_excerpt(parsed)[:60]
        else:
            out["kernels"], out["library_calls"], out["code_excerpt"] = 0, [], ["# nothing was compiled: it all ran eagerly"]
        compiled_ts = [t.detach().clone() for t in _tensors(compiled(*_clone(xs)))]
        out["numerics"] = _numerics(eager_ts, compiled_ts, source, ops, device)
        progress(0.55, "timing eager and compiled, interleaved")
        a, b = _clone(xs), _clone(xs)
        e, c = time_against(out, ("eager", lambda: fn(*a)), ("compiled", lambda: compiled(*b)), sync, budget_s)
    out["compile_s"] = compile_seconds(secs, c)
    out["pays_after"] = pays_after(out["compile_s"], e, c)
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
    backend = CaptureBackend()

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
    with quiet_torch(), dynamo.torch_recompile_log() as cap:
        for n in sizes:
            before, since = backend.compiles, len(cap.messages)
            f(*resized(n))
            new = cap.messages[since:]
            reason, limit = dynamo.read_recompiles(new)
            fell_back = fell_back or bool(limit)
            compiled = backend.compiles > before
            calls.append({"size": n, "compiled": compiled, "dynamic": bool(compiled and backend.graphs[-1].symbolic),
                          "fallback": bool(limit) or (fell_back and not compiled), "reason": reason})
    out: dict[str, Any] = {"dim": dim, "torch": {"calls": calls, "compiles": backend.compiles,
                                                  "limit": dynamo.recompile_limit()}}
    if jax_fn is not None:
        out["jax"] = jax_sweep(jax_fn, xs, dim, sizes)
    return out
