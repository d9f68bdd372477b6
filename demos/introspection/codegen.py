"""What the compilers generate: Inductor's output code and XLA's HLO, as text plus counts.

Two entry points, one per compiler, both returning a small dataclass that holds the text and
the counts a slide needs (and ``to_dict()`` for JSON records):

    inductor_code(fn, *args, mode=None, dynamic=None) -> InductorCode
        the Python wrapper + kernels torch.compile (Inductor) generated for ``fn(*args)``
        (:mod:`demos.introspection.inductor`: capture, parsing, folding for a slide);
    xla_code(fn, *args, static_argnums=()) -> XlaCode
        the jaxpr, StableHLO and optimized HLO of ``jax.jit(fn)``
        (:mod:`demos.introspection.hlo`: lowering, parsing, excerpts for a slide).

This module holds what uses both for the seed workloads:
``workload_inductor_code(name, params, dtype)`` and ``workload_xla_code(name, params, dtype)``,
cached per sizes/dtype/device in an engine cache (``clear_cache()`` empties it). Everything
else (the parsers, excerpts and foldings) is imported from the module that defines it.

The parsers ``inductor.parse_inductor(source)`` and ``hlo.parse_hlo(text)`` are pure functions
of text and can be used on code captured any other way.

Capturing Inductor's code never resets ``torch._dynamo``: the function is compiled through a
fresh copy of its code object, so wrappers other demos hold stay compiled (and Inductor's
FX-graph cache makes a repeat capture cost tens of milliseconds).
"""
from __future__ import annotations

from typing import Any

from demos.engine.protocol import engine_cache
from demos.introspection.hlo import XlaCode, xla_code
from demos.introspection.inductor import InductorCode, inductor_code

__all__ = ["workload_inductor_code", "workload_xla_code", "clear_cache"]

# ---------------------------------------------------------------------------------------
# Seed workloads, cached
# ---------------------------------------------------------------------------------------
_CACHE: dict[tuple, Any] = engine_cache("introspection.codegen._CACHE", {})


def clear_cache() -> None:
    _CACHE.clear()


def _key(kind: str, workload: str, params: dict | None, dtype: str, device: str | None, extra: Any = None):
    from demos.engine.devices import torch_device
    from demos.engine.workload_defs import get

    device = device or torch_device()
    w = get(workload)
    p = w.resolve(params, "cpu" if device == "cpu" else "gpu")
    return (kind, w.name, tuple(sorted(p.items())), dtype, device, extra), w, p, device


def workload_inductor_code(workload: str, params: dict | None = None, dtype: str = "float32",
                           device: str | None = None, mode: str | None = None,
                           dynamic: bool | None = False) -> InductorCode:
    """Inductor's code for a seed workload at these sizes (cached).

    ``dynamic=False`` (default) asks for code specialised to these sizes, so the text shows
    real shapes; pass None to let torch.compile decide as the live wrappers do."""
    from demos.engine.workloads import prepare

    key, w, p, device = _key("inductor", workload, params, dtype, device, (mode, dynamic))
    if key not in _CACHE:
        prep = prepare(w, "torch_eager", p, dtype, device)
        _CACHE[key] = inductor_code(w.torch_fn, *prep.args, mode=mode, dynamic=dynamic)
    return _CACHE[key]


def workload_xla_code(workload: str, params: dict | None = None, dtype: str = "float32",
                      device: str | None = None) -> XlaCode:
    """XLA's code for a seed workload at these sizes (cached; lowering only, nothing runs)."""
    from demos.engine.workloads import prepare

    key, w, p, device = _key("xla", workload, params, dtype, device)
    if key not in _CACHE:
        prep = prepare(w, "jax_eager", p, dtype, device)
        _CACHE[key] = xla_code(w.jax_fn, *prep.args)
    return _CACHE[key]
