"""One measurement's context: what a demo's ``measure(run, **values)`` is handed.

A :class:`Run` is made by the demo for each measurement (``Demo.run``) and gives the measuring
code everything it needs from the engine, so a topic writes none of it again:

``run.cache``      the demo's own memory between measurements (a dict). ``forget()`` (the Run
                   button, a re-executed cell) drops it, so the next measurement starts from the
                   declared state. A topic keeps no cache of its own at module level.
``run.time(...)``  the one way to time: warm-up, the first call (the one that compiles) timed
                   apart, synchronised before the clock stops, forms sampled in turn, medians with
                   p10–p90 (:class:`demos.engine.timing.Timing`). Without a ``sync`` argument the
                   timers synchronise every device the call may have queued work on
                   (:func:`demos.engine.timing.sync_output`); ``no_sync`` is asked for by name.
``run.compile(fn, **options)``  ``torch.compile`` of a fresh copy of ``fn`` under a name of its
                   own (:func:`demos.engine.protocol.fresh_function`): its own guards, recompile
                   budget and automatic-dynamic state. ``fn`` may be a builtin (``F.gelu``) or
                   a module: it is called from a fresh Python function of its name.
``run.compiled(fn, *key, **options)``  ``run.compile``'s copy, made once per ``key`` (a size,
                   a dtype) and kept in ``run.cache``: a control move that comes back to a key
                   reuses it, a new key compiles anew (its own guards, no automatic-dynamic
                   recompile of the old one).
``run.randn(*shape, dtype="float32")``  a random tensor on the device the demo measures on
                   (:func:`demos.engine.devices.torch_device`), the same numbers every time.
``run.first_call_once(key, fn)``  the first call at a form and its sizes, timed apart once and
                   remembered until the demo forgets (``run.timed`` times one on every call).
``run.progress(fraction, message)``  what the panel's progress bar and status line show.
``run.declared()`` the declared state (threads from the load, Dynamo's counters zeroed, the load
                   read while it measures), entered and left around the measurement; the demo
                   enters it, and ``run.conditions`` says afterwards how it ran.

Made by hand (``Run()``), it is a context of its own with an empty cache, for a test or a
script that calls a ``measure_*`` function directly.
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

from demos.engine import timing as _timing
from demos.engine.protocol import Conditions, declared_state, fresh_function
from demos.engine.timing import Timing, sync_output

Progress = Callable[[float, str], None]


def quiet(_fraction: float, _message: str = "") -> None:
    """The progress function of a run nobody watches."""


class Run:
    """The context of one measurement (see the module docstring)."""

    def __init__(self, cache: dict | None = None, progress: Progress | None = None):
        self.cache: dict = {} if cache is None else cache
        self.progress: Progress = progress or quiet
        self.conditions: Conditions | None = None

    # -- the declared state --------------------------------------------------------------
    @contextlib.contextmanager
    def declared(self) -> Iterator[Conditions]:
        """Around the measurement: threads chosen from the load and held, Dynamo's counters zeroed;
        afterwards ``self.conditions`` says whether other processes took the cores meanwhile."""
        with declared_state() as cond:
            self.conditions = cond
            yield cond

    # -- compiling -------------------------------------------------------------------------
    @staticmethod
    def fresh(fn: Callable, tag: str = "") -> Callable:
        """``fn`` under a new code object of its own name (the one fresh-function helper)."""
        return fresh_function(fn, tag)

    def compile(self, fn: Callable, tag: str = "", **options: Any) -> Callable:
        """``torch.compile(fresh copy of fn, **options)``."""
        from demos.engine.devices import require_torch

        return require_torch().compile(fresh_function(fn, tag), **options)

    def compiled(self, fn: Callable, *key: Any, **options: Any) -> Callable:
        """``self.compile(fn, **options)``, made once per ``key`` and kept (``run.cache``)."""
        return self.cached(("compiled", fn, key, tuple(sorted(options.items()))),
                           lambda: self.compile(fn, **options))

    @staticmethod
    def randn(*shape: int, dtype: Any = "float32", seed: int = 0) -> Any:
        """A tensor of standard normal numbers (seeded: the same ones every call) on the device
        the demo measures on; ``dtype`` a name ("bfloat16") or a torch dtype."""
        from demos.engine.devices import require_torch, torch_device

        torch = require_torch()
        dt = getattr(torch, dtype) if isinstance(dtype, str) else dtype
        gen = torch.Generator().manual_seed(seed)  # drawn in float32 on the CPU: the same numbers on any device
        return torch.randn(*shape, generator=gen).to(device=torch_device(), dtype=dt)

    def cached(self, key: Any, make: Callable[[], Any]) -> Any:
        """``self.cache[key]``, made by ``make()`` the first time this demo asks for it."""
        if key not in self.cache:
            self.cache[key] = make()
        return self.cache[key]

    # -- timing ----------------------------------------------------------------------------
    @staticmethod
    def first_call(fn: Callable[[], Any], sync: Callable[[Any], None] = sync_output) -> tuple[float, Any]:
        """One call (the one that compiles) timed alone, synchronised: (seconds, output)."""
        return _timing.first_call(fn, sync)

    def first_call_once(self, key: Any, fn: Callable[[], Any], sync: Callable[[Any], None] = sync_output) -> float:
        """The first call at ``key`` (a form and its sizes), timed apart the first time this demo
        asks for it since it forgot, and remembered (``run.cache``): later measurements at the same
        key report that same first call, and do not pay it again."""
        return self.cached(("first call", key), lambda: self.first_call(fn, sync)[0])

    @staticmethod
    def time(fn: Callable[[], Any], sync: Callable[[Any], None] = sync_output, **options: Any) -> Timing:
        """Steady-state seconds per call of ``fn()`` (:func:`demos.engine.timing.measure`)."""
        return _timing.measure(fn, sync, **options)

    @staticmethod
    def time_forms(forms: dict[str, tuple[Callable[[], Any], Callable[[Any], None]]], **options: Any
                   ) -> dict[str, Timing]:
        """Several forms of one computation, sampled in turn so a slow spell of the machine lands
        on all alike (:func:`demos.engine.timing.measure_interleaved`)."""
        return _timing.measure_interleaved(forms, **options)

    @staticmethod
    def time_paired(fn: Callable[[], Any], sync: Callable[[Any], None], **options: Any) -> tuple[Timing, Timing]:
        """The same calls timed with the clock stopped when ``fn()`` returns and after ``sync``:
        (returned, synchronised) (:func:`demos.engine.timing.measure_paired`)."""
        return _timing.measure_paired(fn, sync, **options)

    def timed(self, fn: Callable[[], Any], sync: Callable[[Any], None] = sync_output, *, first: bool = True,
              **options: Any) -> dict[str, Any]:
        """The one timing schema a topic stores (``Timing.to_dict``: median_s, p10_s, p90_s, n,
        inner), with ``first_s`` (the first call, timed apart) when ``first``."""
        first_s = self.first_call(fn, sync)[0] if first else None
        return self.time(fn, sync, **options).to_dict(first_s=first_s)
