"""The engine behind the JIT-compilation lecture deck.

Importing this package is cheap: it imports neither torch nor JAX. It only sets the
environment those frameworks read when they initialise (JAX must not preallocate the GPU
next to PyTorch; compile caches live inside the project folder), so import ``demos``
before torch or JAX.

Layers, in the order data flows:
    devices   which torch device / JAX backend exist, what the machine is
    timing    one correct way to time torch and JAX callables
    workloads the seed programs as torch/JAX twins with analytic FLOPs and bytes
    results   a stamped JSON record that can be saved, loaded, merged and drawn later
    plots     one palette and one look for every figure
    ui        the ipywidgets panel every live cell uses
    topics    eager, fusion, roofline, internals, recompilation (one per deck part)
"""
from __future__ import annotations

from demos.engine.env import configure_environment

configure_environment()

__version__ = "0.1.0"


def __getattr__(name: str):
    """``from demos import inspect_fn``: the compiler inspector (demos.introspection.inspector),
    imported on first use so that ``import demos`` stays cheap."""
    if name in ("inspect_fn", "inspect_source"):
        from demos.introspection import inspector

        return getattr(inspector, name)
    raise AttributeError(f"module 'demos' has no attribute {name!r}")
