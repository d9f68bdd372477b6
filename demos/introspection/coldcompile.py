"""A first call measured from cold: compile latency in a fresh interpreter, cold vs warm cache.

In-process numbers lie about compile latency: the process already holds compiled code, imported
modules and in-memory caches. So each measurement runs in a fresh ``python -m
demos.introspection.coldcompile SPEC`` whose compile caches (Inductor/AOTAutograd, Triton, JAX) point
into a directory given by the parent:

- ``cold_then_warm(spec)``: *cold* — a fresh process with its own, empty temporary cache
  directory (what a new machine pays); then *warm* — another fresh process sharing the cache
  directory the cold run just filled (what the next run on the same machine pays).
- ``in_fresh_process(spec, cache_dir)``: one fresh process on ``cache_dir``.
- ``measure(spec)``: what runs inside it: per backend, the first call (split where the framework
  exposes the parts), the steady-state call and the eager call, as JSON.

``spec`` is ``{"workload", "backends" (torch_compile / jax_jit), "dtype", "params", "budget_s"}``,
or ``{"kind": "first_call", "N", "dtype", "budget_s", "threads"}``: the first, second and steady-state
calls of an op and of a compiled function in a new process (:func:`first_calls`).
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from typing import Any, Callable

from demos.engine.devices import require_jax, require_torch
from demos.engine.errors import one_line
from demos.engine.measurement import quiet
from demos.engine.timing import first_call
from demos.engine.timing import measure as timed
from demos.introspection.hooks import InductorBackend


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    """Runs inside the fresh interpreter: first call and steady state per backend (an error
    becomes one line for that backend)."""
    from demos.engine.workload_defs import get

    if spec.get("kind") == "first_call":
        return first_calls(spec)
    w = get(spec["workload"])
    out: dict[str, Any] = {}
    for backend in spec["backends"]:
        try:
            out[backend] = _torch(w, spec) if backend == "torch_compile" else _jax(w, spec)
        except Exception as exc:  # one line back to the parent
            out[backend] = {"error": one_line(exc)}
    return out


def _torch(w, spec: dict[str, Any]) -> dict[str, Any]:
    """torch.compile: Inductor's share of the first call timed by the deck's Inductor backend
    (:class:`demos.introspection.hooks.InductorBackend`, which wraps ``compile_fx``)."""
    torch = require_torch()
    from demos.engine.workloads import prepare

    eager = prepare(w, "torch_eager", spec.get("params"), spec["dtype"])
    te = timed(eager.fn, eager.sync, budget_s=spec["budget_s"])
    inductor = InductorBackend()
    cf = torch.compile(w.torch_fn, backend=inductor)
    args = eager.args
    first, _ = first_call(lambda: cf(*args), eager.sync)
    tc = timed(lambda: cf(*args), eager.sync, budget_s=spec["budget_s"])
    backend_s = inductor.seconds
    capture = max(first - backend_s - tc.median, 0.0)
    return {"first_s": first, "steady_s": tc.median, "steady_p10": tc.p10, "steady_p90": tc.p90,
            "eager_s": te.median, "parts": {"Dynamo capture + guards": capture,
                                            "AOT + Inductor codegen + build": backend_s,
                                            "first run": min(tc.median, first)},
            "params": eager.params}


def _jax(w, spec: dict[str, Any]) -> dict[str, Any]:
    """jax.jit: trace + lower, XLA compile (or persistent-cache load) and the first run, apart."""
    jax = require_jax()
    from demos.engine.workloads import prepare

    eager = prepare(w, "jax_eager", spec.get("params"), spec["dtype"])
    te = timed(eager.fn, eager.sync, budget_s=spec["budget_s"])
    args = eager.args
    jf = jax.jit(w.jax_fn)
    lower_s, lowered = first_call(lambda: jf.lower(*args))
    compile_s, compiled = first_call(lowered.compile)
    run_s, _ = first_call(lambda: compiled(*args), jax.block_until_ready)
    tj = timed(lambda: compiled(*args), eager.sync, budget_s=spec["budget_s"])
    return {"first_s": lower_s + compile_s + run_s, "steady_s": tj.median, "steady_p10": tj.p10,
            "steady_p90": tj.p90, "eager_s": te.median, "parts": {"trace + lower to StableHLO": lower_s,
                                                                  "XLA compile (or cache load)": compile_s,
                                                                  "first run": run_s},
            "params": eager.params}


def _sin_cos(x):
    """The compiled function of :func:`first_calls`: the two ops it timed, and two more."""
    import torch

    return torch.relu(torch.sin(x) * torch.cos(x) + x)


def first_calls(spec: dict[str, Any]) -> dict[str, Any]:
    """Runs inside the fresh interpreter (``spec["kind"] == "first_call"``): what each first call
    costs, each part on its own clock. ``import torch``; the device ready with its input (on a GPU
    ``torch.cuda.init()`` and the input's allocation, which create the CUDA context); ``torch.sin(x)`` first, second and
    steady state; then ``torch.cos(x)``, a second op whose first call comes after the process's
    first; then ``torch.compile`` of relu(sin·cos + x): first call (Inductor's share timed by
    :class:`InductorBackend`), second call and steady state. Sizes ``N``, ``dtype``, ``budget_s``."""
    preloaded = "torch" in sys.modules  # False: the clock below times torch's whole import
    import_s, torch = first_call(require_torch)
    from demos.engine.devices import torch_device
    from demos.engine.timing import sync_torch

    device = torch_device()
    if spec.get("threads"):
        torch.set_num_threads(int(spec["threads"]))  # the parent's policy: a busy core is left alone
    context_s, _ = first_call(lambda: torch.cuda.init() if device == "cuda" else None)
    sync = sync_torch(device)
    input_s, x = first_call(lambda: torch.randn(int(spec["N"]), dtype=getattr(torch, spec["dtype"]), device=device),
                            sync)

    def calls(fn) -> dict[str, Any]:
        first, _ = first_call(fn, sync)
        second, _ = first_call(fn, sync)
        t = timed(fn, sync, budget_s=spec["budget_s"])
        return {"first_s": first, "second_s": second, "steady_s": t.median, "steady_p10": t.p10,
                "steady_p90": t.p90}

    out: dict[str, Any] = {"device": device, "threads": torch.get_num_threads(), "import_s": import_s,
                           "torch_preloaded": preloaded,
                           "context_s": context_s, "input_s": input_s,
                           "sin": calls(lambda: torch.sin(x)), "cos": calls(lambda: torch.cos(x))}
    inductor = InductorBackend()
    cf = torch.compile(_sin_cos, backend=inductor)
    out["compiled"] = calls(lambda: cf(x))
    out["compiled"]["inductor_s"] = inductor.seconds
    return out


def in_fresh_process(spec: dict[str, Any], cache_dir: str, timeout: float = 420) -> dict[str, Any]:
    """``measure(spec)`` in a fresh interpreter whose compile caches live in ``cache_dir``."""
    from demos.engine.worker import fresh_json

    env = {"TORCHINDUCTOR_CACHE_DIR": os.path.join(cache_dir, "inductor"),
           "TRITON_CACHE_DIR": os.path.join(cache_dir, "triton"),
           "DEMOS_JAX_CACHE_DIR": os.path.join(cache_dir, "jax"), "PYTHONWARNINGS": "ignore"}
    return fresh_json("demos.introspection.coldcompile", json.dumps(spec), env, timeout,
                      slow=f"the compile measurement took over {timeout:.0f} s — try a smaller workload",
                      failed="compile worker failed")


def cold_then_warm(spec: dict[str, Any], say: Callable[[float, str], None] | None = None
                   ) -> tuple[dict[str, Any], dict[str, Any]]:
    """(cold, warm): a fresh process on an empty temporary cache directory, then another fresh
    process on the cache the first one filled (the directory is removed afterwards)."""
    say = say or quiet
    with tempfile.TemporaryDirectory(prefix="jitdeck-cold-") as cache:
        say(0.05, "cold: fresh process, empty caches — compiling from scratch…")
        cold = in_fresh_process(spec, cache)
        say(0.55, "warm: fresh process, caches from the cold run…")
        warm = in_fresh_process(spec, cache)
    say(1.0, "done")
    return cold, warm


if __name__ == "__main__":
    from demos.engine.worker import json_child

    sys.exit(json_child("demos.introspection.coldcompile", sys.argv[1:], measure))
