"""The seed workloads made runnable: each in four forms, on inputs with the same values in both
frameworks.

Forms (backends): ``torch_eager``, ``torch_compile``, ``jax_eager`` (JAX op by op: every
jnp call dispatched on its own) and ``jax_jit``. :func:`prepare` binds a workload to a backend,
sizes, dtype and device, and returns a :class:`Prepared` whose ``fn()`` runs it: the sizes are
checked against free memory first (:func:`check_memory`), the inputs come from
:func:`make_inputs` (seeded, the same values for torch and JAX, the last few kept in an engine
cache), and the compiled forms are one wrapper per function (:func:`compiled_torch`,
:func:`jitted`), reused across calls and registered as engine caches.

The workloads themselves (the torch/JAX twins, their sizes and cost model, ``WORKLOADS``,
:func:`get`, :func:`tolerance`, …) are defined in :mod:`demos.engine.workload_defs`: import
them from there.
"""
from __future__ import annotations

import functools
import math
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable

from demos.engine.devices import (
    check_dtype,
    free_memory_bytes,
    jax_or_none,
    require_jax,
    require_torch,
    set_threads,
    torch_device,
)
from demos.engine.errors import DemoError, unknown_name
from demos.engine.protocol import engine_cache
from demos.engine.timing import sync_for
from demos.engine.workload_defs import ITEMSIZE, Workload, check_backend, get


# ---------------------------------------------------------------------------------------
# Inputs (same values in both frameworks) and the four forms
# ---------------------------------------------------------------------------------------
_INPUT_CACHE: "OrderedDict[tuple, tuple]" = engine_cache("engine.workloads._INPUT_CACHE", OrderedDict())
_INPUT_CACHE_SIZE = 4


def clear_input_cache() -> None:
    _INPUT_CACHE.clear()


def check_memory(w: Workload, params: dict, dtype: str, device: str) -> None:
    need = w.bytes(params, dtype, fused=False) + 2 * w.input_bytes(params, dtype)
    free = free_memory_bytes(device)
    if free is not None and need > 0.7 * free:
        sizes = w.describe(params)
        raise DemoError(
            f"out of memory at {sizes} ({dtype}): needs ~{need / 2**30:.1f} GiB, "
            f"{free / 2**30:.1f} GiB free on {device} — pick a smaller size"
        )


def make_inputs(w: Workload, framework: str, params: dict, dtype: str, device: str, rng: int = 0) -> tuple:
    key = (w.name, framework, tuple(sorted(params.items())), dtype, device, rng)
    if key in _INPUT_CACHE:
        _INPUT_CACHE.move_to_end(key)
        return _INPUT_CACHE[key]
    torch = require_torch()
    gen = torch.Generator().manual_seed(rng)
    host = []
    for shape, scale in zip(w.shapes(params), w.scales):
        if scale == "zeros":
            t = torch.zeros(shape)
        elif scale == "ones":
            t = torch.ones(shape)
        else:
            std = 1.0 / math.sqrt(shape[0]) if scale == "fan_in" else float(scale)
            t = torch.randn(shape, generator=gen) * std
        host.append(t)
    if framework == "torch":
        tdt = getattr(torch, dtype)
        out = tuple(t.to(device=device, dtype=tdt) for t in host)
    else:
        jax = require_jax()
        import jax.numpy as jnp

        jdt = getattr(jnp, dtype)
        out = tuple(jax.device_put(jnp.asarray(t.numpy()).astype(jdt)) for t in host)
    while len(_INPUT_CACHE) >= _INPUT_CACHE_SIZE:
        _INPUT_CACHE.popitem(last=False)
    _INPUT_CACHE[key] = out
    return out


@functools.lru_cache(maxsize=None)
def compiled_torch(fn: Callable, mode: str | None = None, dynamic: bool | None = None) -> Callable:
    """One torch.compile wrapper per (function, mode, dynamic), reused across calls."""
    torch = require_torch()
    kwargs: dict[str, Any] = {}
    if mode:
        kwargs["mode"] = mode
    if dynamic is not None:
        kwargs["dynamic"] = dynamic
    return torch.compile(fn, **kwargs)


@functools.lru_cache(maxsize=None)
def jitted(fn: Callable) -> Callable:
    return require_jax().jit(fn)


engine_cache("engine.workloads.compiled_torch", compiled_torch)
engine_cache("engine.workloads.jitted", jitted)


@dataclass
class Prepared:
    """A workload bound to a backend, sizes, dtype and device: call ``fn()`` to run it."""

    workload: Workload
    backend: str
    params: dict
    dtype: str
    device: str
    fn: Callable[[], Any]
    sync: Callable[[Any], None]
    args: tuple
    callable: Callable

    def output_numpy(self):
        """Run once and return the output as a float32 numpy array."""
        out = self.fn()
        self.sync(out)
        if self.backend.startswith("torch"):
            return out.detach().float().cpu().numpy()
        import numpy as np

        return np.asarray(out.astype("float32"))


def prepare(
    workload: str | Workload,
    backend: str,
    params: dict | None = None,
    dtype: str = "float32",
    device: str | None = None,
    rng: int = 0,
    compile_mode: str | None = None,
    dynamic: bool | None = None,
) -> Prepared:
    """Bind a workload to a backend. Raises DemoError with one clear line on bad input."""
    w = get(workload)
    check_backend(backend)
    if dtype not in ITEMSIZE:
        raise unknown_name("dtype", dtype, ITEMSIZE)
    device = device or torch_device()
    p = w.resolve(params, "cpu" if device == "cpu" else "gpu")
    if backend.startswith("torch"):
        require_torch()
        check_dtype(dtype, device)
        set_threads()
    else:
        require_jax()
    check_memory(w, p, dtype, device)
    framework = "torch" if backend.startswith("torch") else "jax"
    args = make_inputs(w, framework, p, dtype, device, rng)
    if backend == "torch_eager":
        f = w.torch_fn
    elif backend == "torch_compile":
        f = compiled_torch(w.torch_fn, compile_mode, dynamic)
    elif backend == "jax_eager":
        f = w.jax_fn
    else:
        f = jitted(w.jax_fn)
    return Prepared(w, backend, p, dtype, device, lambda: f(*args), sync_for(backend, device), args, f)


def available(backend: str) -> bool:
    if backend.startswith("jax"):
        return jax_or_none() is not None
    return True
