"""The JAX half of the inspector: what jax.jit does with a jax.numpy twin of your function.

:func:`inspect_jax` reports the jaxpr's equations against XLA's fusions and kernels,
``cost_analysis`` FLOPs and bytes, an excerpt of the optimized HLO, the compile time (the
persistent compilation cache off) and op-by-op against jit latency; or, when tracing fails (a
data-dependent branch), the tracer error and the line of your source it came from.
:func:`jax_sweep` calls one jitted copy over a range of one dimension's sizes and reads JAX's
cache-miss reason for each call (what :func:`demos.introspection.inspector_torch.sweep` puts
beside torch's recompiles). The JAX APIs used are public.
"""
from __future__ import annotations

import traceback
from typing import Any, Callable

from demos.engine.devices import require_jax
from demos.engine.errors import one_line
from demos.engine.protocol import fresh_function
from demos.engine.timing import first_call, sync_jax
from demos.introspection import dynamo, hlo
from demos.introspection.inspector_inputs import BUDGET_S, time_against, user_error


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
            out["compile_s"], _ = first_call(lambda: jax.jit(f).lower(*xs).compile())
        finally:
            jax.config.update("jax_enable_compilation_cache", old)
    except Exception as exc:
        out["error_type"] = type(exc).__name__
        out["error"] = user_error(exc, filename)
        out["line"] = next((fr.lineno for fr in traceback.extract_tb(exc.__traceback__) if fr.filename == filename), None)
        return out
    code = hlo.xla_code(f, *xs)
    out.update(jaxpr_eqns=code.jaxpr_eqns, fusions=code.fusion_count, kernels=code.kernel_count,
               library_calls=code.library_calls, flops=(code.cost or {}).get("flops"),
               bytes=(code.cost or {}).get("bytes accessed"), hlo_excerpt=hlo.hlo_excerpt(code.hlo)[:40],
               jaxpr=code.jaxpr.splitlines()[:30])
    jitted = jax.jit(f)
    sync = sync_jax()
    time_against(out, ("op_by_op", lambda: fn(*xs)), ("jit", lambda: jitted(*xs)), sync, budget_s)
    return out


def jax_sweep(fn: Callable, xs: list, dim: int, sizes: list[int]) -> dict[str, Any]:
    """One jitted copy of ``fn`` called once per size of dimension ``dim`` (inputs of ones): per
    call, whether JAX traced and compiled again, and its cache-miss reason."""
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
