"""One correct way to time torch and JAX callables.

Rules this module enforces:
- synchronise before stopping the clock (CUDA/MPS synchronize, JAX block_until_ready —
  JAX dispatch is asynchronous on the CPU too);
- warm up first, and keep the first call (which compiles) apart from the steady state;
- repeat adaptively within a time budget and report the median with p10/p90 spread.
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from demos.engine.devices import torch_device
from demos.engine.hardware import torch_or_none

_clock = time.perf_counter


# What a stored timing holds (``Timing.to_dict``); a record written before this schema is upgraded on
# reading (demos.engine.results).
TIMING_KEYS = ("median_s", "p10_s", "p90_s", "n", "inner", "first_s")


@dataclass
class Timing:
    """Seconds per call: median with p10/p90 spread over ``n`` samples."""

    median: float
    p10: float
    p90: float
    n: int
    inner: int = 1
    samples: list[float] = field(default_factory=list, repr=False)

    @property
    def spread(self) -> float:
        return self.p90 - self.p10

    def to_dict(self, first_s: float | None = None) -> dict[str, Any]:
        """The one stored timing schema: ``median_s``, ``p10_s``, ``p90_s`` (seconds per call),
        ``n`` samples of ``inner`` calls each, and ``first_s`` (the first call, timed apart) when
        given. Every record, warmed result and figure reads these keys (:data:`TIMING_KEYS`)."""
        d = {"median_s": self.median, "p10_s": self.p10, "p90_s": self.p90, "n": self.n, "inner": self.inner}
        if first_s is not None:
            d["first_s"] = first_s
        return d

    def __str__(self) -> str:
        return f"{fmt_seconds(self.median)} (p10 {fmt_seconds(self.p10)}, p90 {fmt_seconds(self.p90)}, n={self.n})"


def fmt_seconds(s: float | None) -> str:
    """A time as a figure or a sentence says it, its magnitude honest: "—" for a missing one (None,
    NaN), "< 1 ns" below what a nanosecond rounds to (a clock that read 0 included), never "0 ns"."""
    if s is None or (isinstance(s, float) and math.isnan(s)):
        return "—"
    if s < 0.5e-9:
        return "< 1 ns"
    if s < 1e-6:
        return f"{s * 1e9:.0f} ns"
    if s < 1e-3:
        return f"{s * 1e6:.1f} µs"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s" if s < 100 else f"{s:.0f} s"


def break_even(compile_s: float, eager_s: float, compiled_s: float) -> float:
    """Calls (or steps) until a compile's seconds are repaid by the measured gain per call over
    eager (inf: never, where compiled is no faster)."""
    gain = eager_s - compiled_s
    return math.inf if gain <= 0 else compile_s / gain


def pays_after(compile_s: float, eager_s: float, compiled_s: float) -> int | None:
    """Whole calls until the compile is repaid (:func:`break_even` rounded up); None: never."""
    calls = break_even(compile_s, eager_s, compiled_s)
    return math.ceil(calls) if math.isfinite(calls) else None


def quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    if not xs:
        return float("nan")
    pos = q * (len(xs) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _block_tree(out: Any) -> None:
    """Block on every JAX array in an output (tuples, lists, dicts)."""
    if hasattr(out, "block_until_ready"):
        out.block_until_ready()
    elif isinstance(out, (tuple, list)):
        for o in out:
            _block_tree(o)
    elif isinstance(out, dict):
        for o in out.values():
            _block_tree(o)


def sync_torch(device: str | None = None) -> Callable[[Any], None]:
    device = device or torch_device()
    torch = torch_or_none()
    if device.startswith("cuda"):
        return lambda _out: torch.cuda.synchronize()
    if device == "mps":
        return lambda _out: torch.mps.synchronize()
    return lambda _out: None  # CPU torch ops are synchronous


def sync_jax() -> Callable[[Any], None]:
    return _block_tree


def no_sync(_out: Any) -> None:
    return None


def sync_output(out: Any) -> None:
    """The default synchronisation of :class:`~demos.engine.measurement.Run`'s timers: wait until
    the call's work is done on every device that may still be running it. Every JAX array in the
    output (tuples, lists, dicts) is blocked on; where torch is imported and has started CUDA (or
    runs on MPS), its device is synchronised, whatever the call returned (a training step that
    returns nothing still queued its kernels). On a CPU-only torch it costs nothing: CPU ops
    return when done. A timer that means to leave the clock unsynchronised passes ``no_sync``."""
    import sys

    _block_tree(out)
    torch = sys.modules.get("torch")  # never imported for this: nothing of torch's can be queued
    if torch is None:
        return
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()
    elif getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        torch.mps.synchronize()


def sync_for(backend: str, device: str | None = None) -> Callable[[Any], None]:
    return sync_jax() if backend.startswith("jax") else sync_torch(device)


def first_call(fn: Callable[[], Any], sync: Callable[[Any], None] = no_sync) -> tuple[float, Any]:
    """Time one call (the one that compiles), synchronised. Returns (seconds, output).

    The deck's two names for what it times, defined here once: ``first_s`` is a whole first call
    (compile and one run); ``compile_s`` is the seconds compiling added: a compile timed alone (no
    run, e.g. ``jax.jit(f).lower(*xs).compile()``), or, where the compile happens inside the first
    call, that call less a steady-state call (:func:`compile_seconds`), summed over compiles."""
    t0 = _clock()
    out = fn()
    sync(out)
    return _clock() - t0, out


def compile_seconds(first_s: float, steady_s: float) -> float:
    """``compile_s`` of a compile made inside a first call: ``first_s`` less one steady call (never
    below 0)."""
    return max(first_s - steady_s, 0.0)


class Stopwatch:
    """Wall seconds of a block that is no single call (:func:`first_call` times one call): a loop
    that may stop early, the work inside a hook, a whole inspection.

    ``with Stopwatch() as watch: ...``; ``watch.seconds`` reads the seconds so far inside the block
    and the block's seconds once it is left, an exception included. Entered again, it adds the new
    block's seconds to the old (a backend timing every compile it is handed). Nothing is
    synchronised for the block: one whose work may still be queued on a device ends with its sync
    (``sync_output(out)``) inside the block."""

    def __init__(self) -> None:
        self._done = 0.0
        self._t0: float | None = None

    def __enter__(self) -> "Stopwatch":
        self._t0 = _clock()
        return self

    def __exit__(self, *_exc: Any) -> None:
        if self._t0 is not None:
            self._done += _clock() - self._t0
            self._t0 = None

    @property
    def seconds(self) -> float:
        return self._done + (_clock() - self._t0 if self._t0 is not None else 0.0)


def _calibrate(fn: Callable[[], Any], sync: Callable[[Any], None], warmup: int, min_sample_s: float) -> tuple[float, int]:
    """Warm up, then time one call to choose how many calls a sample batches (so the clock's
    resolution and the loop do not dominate). Returns (seconds of one call, calls per sample)."""
    out = None
    for _ in range(max(warmup, 0)):
        out = fn()
        sync(out)
    del out
    t0 = _clock()
    sync(fn())
    one = max(_clock() - t0, 1e-9)
    return one, max(1, min(10_000, int(min_sample_s / one)))


def measure(
    fn: Callable[[], Any],
    sync: Callable[[Any], None] = no_sync,
    *,
    warmup: int = 1,
    budget_s: float = 0.25,
    min_samples: int = 5,
    max_samples: int = 200,
    min_sample_s: float = 2e-4,
) -> Timing:
    """Steady-state time of ``fn()`` per call.

    ``fn`` takes no arguments and returns the output; ``sync(out)`` must wait until that
    output really exists. Calls shorter than ``min_sample_s`` are batched ``inner`` at a time
    (synchronising once per batch) so the clock's resolution and the loop do not dominate.
    """
    one, inner = _calibrate(fn, sync, warmup, min_sample_s)
    per_sample = one * inner
    n = int(budget_s / per_sample) if per_sample > 0 else max_samples
    n = max(min_samples, min(max_samples, n))
    samples: list[float] = []
    if inner == 1:
        for _ in range(n):
            t0 = _clock()
            out = fn()
            sync(out)
            samples.append(_clock() - t0)
    else:
        for _ in range(n):
            t0 = _clock()
            for _ in range(inner):
                out = fn()
            sync(out)
            samples.append((_clock() - t0) / inner)
    return Timing(
        median=statistics.median(samples),
        p10=quantile(samples, 0.1),
        p90=quantile(samples, 0.9),
        n=len(samples),
        inner=inner,
        samples=samples,
    )


SETTLE_BELOW_S = 0.05  # measure_interleaved: a form slower than this per call is timed without an untimed call first
MIN_ROUNDS = 3  # the fewest samples of a form: a median and a spread


def interleaved_rounds(per_round: float, budget_s: float, min_samples: int, max_samples: int) -> int:
    """How many rounds :func:`measure_interleaved` samples: the budget's worth, between
    ``min_samples`` and ``max_samples``; fewer than ``min_samples`` (at least :data:`MIN_ROUNDS`)
    only where ``min_samples`` rounds would take over 3× the budget."""
    rounds = max(min_samples, min(max_samples, int(budget_s / per_round)))
    if rounds * per_round > 3 * budget_s:
        rounds = max(MIN_ROUNDS, min(rounds, int(3 * budget_s / per_round)))
    return rounds


def measure_interleaved(
    fns: dict[str, tuple[Callable[[], Any], Callable[[Any], None]]],
    *,
    warmup: int = 1,
    budget_s: float = 0.25,
    min_samples: int = 5,
    max_samples: int = 200,
    min_sample_s: float = 2e-4,
    settle: bool = True,
) -> dict[str, Timing]:
    """Steady-state time per call of several forms of one computation, sampled in turn.

    ``fns`` maps a name to ``(fn, sync)`` as in :func:`measure`. Each round takes one sample of
    every form, in an order rotated each round, so a slow spell of the machine (another process
    taking a core) lands on every form alike instead of on whichever ran during it; medians and
    p10/p90 then compare like with like. ``budget_s`` is for all forms together.

    With ``settle`` each form's sample follows one untimed call of the same form: a form is timed
    in its own steady state, not in the wake of another framework (torch's OpenMP workers spin for a
    while after a parallel region, JAX's pool sleeps between calls: measured here, jax.jit's chain
    took 1.5–2.5 ms sampled right after torch calls and about 1 ms alone). A form whose call takes
    :data:`SETTLE_BELOW_S` or more settles in its own call: that wake of about a millisecond is under
    3% of it, and an untimed call would double its cost.

    Slow forms (precision.lever's bfloat16 block took about a second a call on an AVX2 CPU
    without bfloat16 arithmetic) take ``min_samples`` rounds unless those would overrun 3× the
    budget; then fewer, but never under 3 (as
    :func:`measure_paired`): a live cell answers in seconds, and 3 samples still give a median and
    a spread."""
    inner: dict[str, int] = {}
    one: dict[str, float] = {}
    for name, (fn, sync) in fns.items():
        one[name], inner[name] = _calibrate(fn, sync, warmup, min_sample_s)
    settles = {k: settle and len(fns) > 1 and one[k] < SETTLE_BELOW_S for k in fns}
    per_round = sum(one[k] * (inner[k] + settles[k]) for k in fns) or 1e-9
    rounds = interleaved_rounds(per_round, budget_s, min_samples, max_samples)
    names = list(fns)
    samples: dict[str, list[float]] = {k: [] for k in names}
    for r in range(rounds):
        k0 = r % len(names)
        for name in names[k0:] + names[:k0]:
            fn, sync = fns[name]
            n = inner[name]
            if settles[name]:
                sync(fn())
            t0 = _clock()
            out = None
            for _ in range(n):
                out = fn()
            sync(out)
            samples[name].append((_clock() - t0) / n)
    return {k: Timing(median=statistics.median(v), p10=quantile(v, 0.1), p90=quantile(v, 0.9), n=len(v),
                      inner=inner[k], samples=v) for k, v in samples.items()}


def measure_paired(fn: Callable[[], Any], sync: Callable[[Any], None], *, budget_s: float = 0.05,
                  min_samples: int = 7, max_samples: int = 300, warmup: int = 1) -> tuple[Timing, Timing]:
    """Time the same calls twice: clock stopped when ``fn()`` returns, and after ``sync(out)``.

    Each sample is one call; it is synchronised before the next one starts, so no queue
    builds up and both numbers describe the same calls. At least 3 samples, ``min_samples``
    unless calls are so slow that would take over 3× the budget. Returns (returned, synchronised).
    """
    for _ in range(max(warmup, 0)):
        sync(fn())
    clock = time.perf_counter
    ret: list[float] = []
    done: list[float] = []
    start = clock()
    deadline = start + budget_s

    def more() -> bool:
        n, now = len(ret), clock()
        if n >= max_samples:
            return False
        if n < 3:
            return True
        if n < min_samples:  # slow calls: stop at 3 samples rather than overrun the budget 3×
            return now < start + 3 * budget_s
        return now < deadline

    while more():
        t0 = clock()
        out = fn()
        t1 = clock()
        sync(out)
        t2 = clock()
        ret.append(t1 - t0)
        done.append(t2 - t0)
        del out

    def timing(xs: list[float]) -> Timing:
        return Timing(statistics.median(xs), quantile(xs, 0.1), quantile(xs, 0.9), len(xs), 1, xs)

    return timing(ret), timing(done)


SPIN_CYCLES = 2_000_000  # ~1 ms of GPU clock cycles queued before each timed call (measure_cuda_events)


def measure_cuda_events(fn: Callable[[], Any], *, warmup: int = 3, reps: int = 50) -> Timing:
    """Device time per call from CUDA events (GPU only): excludes host dispatch gaps."""
    torch = torch_or_none()
    if torch is None or not torch.cuda.is_available():
        raise RuntimeError("CUDA events need an NVIDIA GPU")
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    # A GPU that runs ahead of the host reaches the start event before ``fn`` has been queued and
    # counts the host's launch time as device time (seen on an H100: a 2^24-float sin read 70 µs
    # by events, 55 µs by synchronised wall time). A spin kernel queued first keeps the GPU busy
    # until ``fn``'s launches are in the queue, so the events bracket only the device's work.
    spin = getattr(torch.cuda, "_sleep", None)
    for s, e in zip(starts, ends):
        if spin is not None:
            spin(SPIN_CYCLES)
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    samples = [s.elapsed_time(e) / 1e3 for s, e in zip(starts, ends)]
    return Timing(statistics.median(samples), quantile(samples, 0.1), quantile(samples, 0.9), reps, 1, samples)


def timing_overhead(n: int = 2000) -> float:
    """Seconds of overhead ``measure`` adds per call of a no-op callable."""
    t = measure(lambda: None, warmup=1, budget_s=0.05, max_samples=n, min_sample_s=0.0)
    return t.median
