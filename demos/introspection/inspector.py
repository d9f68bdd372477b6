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
the recompile limit falls back to eager, and JAX's cache-miss reason beside each. A function
written with ``jax.numpy`` alone (torch tensors or JAX arrays as its inputs) gets the JAX half
and JAX's side of the sweep only, with a line saying there is no torch version.

Eager and compiled each run on their own copies of the inputs, so a function that mutates its
inputs is reported (``mutates``) and measured fairly. Nothing here isolates a function that never
returns: the panel and ``python -m demos inspect`` run this module in a worker process with a
time limit and a memory cap (:mod:`demos.engine.worker`).

This module holds the entry points and the worker-facing runner: :func:`inspect_fn` (a function
and example tensors), :func:`inspect_source` (source text, what the panel's code box and the
command line give), and :func:`run_isolated` / :func:`ensure_worker` / :func:`warm_compiler` /
``WORKER_PRELOAD`` (the same in a worker process). The work itself is done by:

- :mod:`demos.introspection.inspector_inputs`: loading your source, picking the function, its
  inputs and the size check, and your error as one line;
- :mod:`demos.introspection.inspector_torch`: the torch half and the recompilation sweep (the
  private torch APIs it needs are wrapped there);
- :mod:`demos.introspection.inspector_jax`: the JAX half and JAX's side of the sweep;
- :mod:`demos.introspection.inspector_report`: the :class:`Report` and its text.

Import their names from them: this module does not re-export them.
"""
from __future__ import annotations

import contextlib
import io
import linecache
import time
import types
from typing import Any, Callable, Sequence

from demos.engine.devices import require_torch, torch_device
from demos.engine.errors import DemoError
from demos.engine.protocol import fresh_function
from demos.engine.timing import Stopwatch
from demos.introspection.inspector_inputs import (
    BUDGET_S,
    DTYPES,
    EAGER_LIMIT_S,
    EAGER_STAGE,
    SOURCE_NAME,
    check_fits,
    jax_inputs,
    load_source,
    parse_shape,
    pick_function,
    positional_count,
    torch_inputs,
    uses_jax_only,
)
from demos.introspection.inspector_jax import inspect_jax, jax_sweep
from demos.introspection.inspector_report import Report
from demos.introspection.inspector_torch import inspect_torch, sweep, sweep_sizes


# =======================================================================================
# The entry point
# =======================================================================================
def inspect_fn(fn: Callable, *example_inputs: Any, jax_fn: Callable | None = None, sweep_dim: int | None = 0,
               sweep_count: int = 10, budget_s: float = BUDGET_S, progress=None) -> Report:
    """The whole report (see the module docstring) for ``fn(*example_inputs)`` (torch tensors),
    and for ``jax_fn`` (a jax.numpy twin, optional) on the same values. ``sweep_dim=None`` skips
    the recompilation sweep."""
    torch = require_torch()
    if not isinstance(fn, types.FunctionType):
        raise DemoError(f"inspect_fn needs a Python function, not {type(fn).__name__}")
    if uses_jax_only(fn):
        return _inspect_jax_only(fn, list(example_inputs), sweep_dim, sweep_count, budget_s, progress)
    if not example_inputs or not all(isinstance(x, torch.Tensor) for x in example_inputs):
        raise DemoError("inspect_fn(fn, *inputs): give example inputs as torch tensors")
    with Stopwatch() as watch:
        xs = list(example_inputs)
        shape = "x".join(map(str, xs[0].shape))
        rep = Report(name=fn.__name__,
                     inputs=", ".join(f"{'x'.join(map(str, x.shape))} {str(x.dtype)[6:]}" for x in xs),
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
    rep.seconds = watch.seconds
    return rep


def _inspect_jax_only(fn: Callable, xs: list, sweep_dim: int | None, sweep_count: int, budget_s: float,
                      progress=None) -> Report:
    """The report of a function written with jax.numpy alone: the JAX half (jaxpr, fusions, HLO,
    compile, op-by-op vs jit) and JAX's side of the sweep; the torch half says why it is absent.
    Inputs may be torch tensors (the same values are handed to JAX) or JAX arrays."""
    torch = require_torch()
    from demos.engine.devices import jax_backend, require_jax

    jax = require_jax()
    if not xs or not all(isinstance(x, (torch.Tensor, jax.Array)) for x in xs):
        raise DemoError("inspect_fn(fn, *inputs): give example inputs as torch tensors or JAX arrays")
    with Stopwatch() as watch:
        xs = [a for x in xs for a in (jax_inputs([x]) if isinstance(x, torch.Tensor) else [x])]
        dtype = lambda x: str(x.dtype).replace("torch.", "")  # noqa: E731
        rep = Report(name=fn.__name__, inputs=", ".join(f"{'x'.join(map(str, x.shape))} {dtype(x)}" for x in xs),
                     device=f"jax {jax_backend()}", source=linecache.getlines(fn.__code__.co_filename))
        rep.torch = {"skipped": f"no torch version: {fn.__name__} is written with JAX alone, "
                                "so only jax.jit is inspected"}
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            if progress:
                progress(0.2, "jax.jit: tracing, compiling, timing op-by-op against jit")
            rep.jax = inspect_jax(fn, xs, budget_s=budget_s)
            if sweep_dim is not None and sweep_dim < len(xs[0].shape) and not rep.jax.get("error"):
                if progress:
                    progress(0.85, f"sweeping dimension {sweep_dim}")
                rep.sweep = {"dim": sweep_dim,
                             "jax": jax_sweep(fn, xs, sweep_dim, sweep_sizes(xs[0].shape[sweep_dim], sweep_count))}
        lines = printed.getvalue().splitlines()
        rep.jax["printed"] = {"lines": len(lines), "first": lines[:3]}
    rep.seconds = watch.seconds
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
    if uses_jax_only(fn) and not jax:
        raise DemoError(f"{fn.__name__} is written with JAX alone, and JAX was left out: nothing to inspect")
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

    def tiny(x):
        return torch.relu(torch.sin(x) * 2)

    with Stopwatch() as watch:
        torch.compile(fresh_function(tiny, "warm"))(torch.ones(64))
        from demos.engine.devices import jax_or_none

        jax = jax_or_none()
        if jax is not None:
            import jax.numpy as jnp

            jax.jit(lambda x: jnp.sin(x) * 2)(jnp.ones(64)).block_until_ready()
    return {"seconds": watch.seconds}


def ensure_worker(worker, progress=None) -> float | None:
    """Start ``worker`` and warm its compilers if it is not running; the seconds that took (None
    when it was already warm)."""
    if worker.alive:
        return None
    if progress:
        progress(0.0, "starting the worker process (torch, JAX, the compilers)…")
    with Stopwatch() as watch:
        worker.start()
        _warm(worker)
    return watch.seconds


def _warm(worker) -> None:
    worker.call("demos.introspection.inspector", "warm_compiler", {}, timeout_s=600)


def start_worker_soon(worker) -> None:
    """:func:`ensure_worker` in the background (a panel that opened on `make warm`'s result): the
    first Run waits only for what is left of it."""
    worker.start_in_background(then=_warm)


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
    from demos.engine.devices import runs_here
    from demos.engine.worker import StageStopped, default_memory_bytes

    runs_here("the inspector", {"dtype": dtype})

    cap = memory_bytes or default_memory_bytes()
    check_fits(dims, dtype, 1, cap)
    begun = time.monotonic()  # the Run: the eager call's limit counts a cold worker's start
    started = ensure_worker(worker, progress)
    t0 = time.perf_counter()
    shape_text = "x".join(map(str, dims))
    try:
        out = worker.call("demos.introspection.inspector", "inspect_source",
                          {"source": source, "func": func, "shape": shape_text, "dtype": dtype, "jax": jax,
                           "sweep_dim": sweep_dim, "limit_bytes": cap}, timeout_s=timeout_s, memory_bytes=cap,
                          progress=progress, begun=begun, locate=SOURCE_NAME[:-1],
                          stage_limits={EAGER_STAGE: (EAGER_LIMIT_S, f"your function, run eagerly at {shape_text},")})
    except StageStopped as exc:
        raise exc.with_code(source.splitlines()) from None
    out["worker"] = {"start_s": started, "run_s": time.perf_counter() - t0, "starts": worker.starts}
    return out

