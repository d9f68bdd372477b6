"""What a demo's ``measure(run, **values)`` is handed: the engine's measurement context
(:class:`demos.engine.measurement.Run`: the cache, the timers, fresh compiles, progress) and what
a demo reads of the compilers' own output, which lives a layer above the engine.

``run.kernels(fn, *args)``  how many kernels Inductor generates for ``fn`` on ``args``
                   (:func:`demos.introspection.inductor.inductor_code`, a fresh compile whose code
                   is parsed), counted once per function and argument signature (shapes, dtypes,
                   devices) and kept in ``run.cache``.
"""
from __future__ import annotations

from typing import Any, Callable

from demos.engine.measurement import Run
from demos.introspection.inductor import inductor_code


def _signature(x: Any) -> Any:
    """What a kernel count depends on of an argument: a tensor's shape, dtype and device."""
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return (tuple(x.shape), str(x.dtype), str(getattr(x, "device", "")))
    return repr(x)


class DemoRun(Run):
    """A demo's measurement context: :class:`Run` and the compilers' own output."""

    def kernels(self, fn: Callable, *args: Any) -> int:
        """The number of kernels Inductor generates for ``fn(*args)``, counted once per signature."""
        key = ("kernels", fn, tuple(_signature(a) for a in args))
        return self.cached(key, lambda: inductor_code(fn, *args).kernel_count)
