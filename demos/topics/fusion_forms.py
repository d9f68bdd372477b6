"""How part 2's demos size and run a form of a computation: the N the panels open at and their N and
dtype controls; timed (median and spread, its first call
timed apart once per demo), a compiled copy whose C++ kernels emit profiler events, and the
relayout einsum's operands on the device, and on a GPU the kernels' own time from a trace. :mod:`demos.topics.fusion` measures with them; what
they keep between measurements is the demo's ``run.cache``.
"""
from __future__ import annotations

import math
from typing import Any, Callable

from demos.deck.demo import Choice, Pow2
from demos.engine.devices import device_kind, require_jax
from demos.engine.measurement import Run
from demos.engine.workload_defs import get
from demos.engine.workloads import prepare
from demos.introspection import profiling

WORKLOAD = "complex_activation"  # the seed's six ops
DTYPES = ("float32", "bfloat16")
N_HI = {"cpu": 23, "gpu": 26}  # top of the N sliders (log2): the seed's 20M is ~2^24


def default_n(kind: str | None = None) -> int:
    """The workload's default N for the device (2^21 on a CPU, 20M on a GPU)."""
    return get(WORKLOAD).defaults(kind or device_kind())["N"]


def panel_n(kind: str | None = None) -> int:
    """N the live panels open at: 2^19 on a CPU (timing the four forms stays under 0.5 s on
    two cores — XLA's CPU sin/cos alone take ~10 ms at 2^20); on a GPU 2^24 (16.8M), the slider's
    power of two nearest the seed's 20M. The claims are checked at the workload default too."""
    kind = kind or device_kind()
    return 2**19 if kind == "cpu" else 2**24


def n_dtype_controls(lo: int) -> Callable[[str], list]:
    """Controls N (2^lo … the device's top, opening at the panel N) and dtype."""
    return lambda kind: [Pow2("N", panel_n(kind), lo=lo, hi=N_HI[kind]),
                         Choice("dtype", "float32", options=DTYPES)]


def time_form(run: Run, prep, budget_s: float) -> dict[str, Any]:
    """Median and p10–p90 of a prepared call over ``budget_s`` seconds; the first call (a compile)
    is timed apart, once per demo until it forgets (``run.first_call_once``)."""
    key = (prep.workload.name, prep.backend, tuple(sorted(prep.params.items())), prep.dtype, prep.device)
    first_s = run.first_call_once(key, prep.fn, prep.sync)
    t = run.time(prep.fn, prep.sync, warmup=0, budget_s=budget_s, min_samples=3)
    return t.to_dict(first_s=first_s)


def profiled_compiled(run: Run, fn: Callable) -> Callable:
    """torch.compile of a fresh copy of ``fn`` whose C++ kernels emit profiler events.

    A separate code object keeps the deck's shared compiled wrapper untouched (no reset)."""
    compiled = run.cached(("profiled", fn.__qualname__), lambda: run.compile(fn, "profiled"))

    def call(*args):
        import torch._inductor.config as ic

        with ic.patch({"cpp.enable_kernel_profile": True}):
            return compiled(*args)

    return call


def relayout_inputs(run: Run, B: int, H: int, D: int, K: int, dtype: str):
    """The operands x, x pre-transposed and w on the device; only the latest size is kept."""
    key = (B, H, D, K, dtype)
    held = run.cache.get("relayout inputs")
    if held is None or held[0] != key:
        jax = require_jax()
        import jax.numpy as jnp
        import numpy as np

        rng = np.random.default_rng(0)
        x = rng.standard_normal((B, H, D), dtype=np.float32)
        w = rng.standard_normal((H, D, K), dtype=np.float32) / math.sqrt(D)
        jd = getattr(jnp, dtype)
        run.cache.pop("relayout inputs", None)  # the previous size's arrays go before these are made
        run.cache["relayout inputs"] = key, tuple(jax.device_put(jnp.asarray(a).astype(jd))
                                                  for a in (x, np.ascontiguousarray(x.transpose(1, 0, 2)), w))
    return run.cache["relayout inputs"][1]


def add_kernel_times(forms: dict[str, Any], w, N: int, dtype: str) -> None:
    """On a GPU: each torch form's kernel time in one call, from a profiler trace (its GPU kernels'
    durations summed), and the bandwidth over it, beside the call's (``kernel_s``, ``kernel_gbps``)."""
    for b in ("torch_eager", "torch_compile"):
        if "median_s" in forms.get(b, {}):
            secs = profiling.kernel_seconds(profiling.profile_run(prepare(w, b, {"N": N}, dtype), label=b, warmup=0))
            if secs:
                forms[b].update(kernel_s=secs, kernel_gbps=forms[b]["bytes"] / secs / 1e9)
