"""The conditions a regime claim holds under, measured by its demo and stated on its slide.

A timing or an accuracy is a **regime** (:mod:`demos.deck.claims`): it holds where physics puts
the measurement, not everywhere. Each builder here returns a ``when(data) -> (holds, sentence)``
for ``Claim(..., **regime(when=...))``: the sentence says what was measured, whichever way it
went ("64 MiB per operand, over this CPU's 32 MiB L3"), so the slide's footer can state it beside
the verdict. A condition reads only the measurement (a recorded GPU run carries its own machine's
caches and sizes), never this machine. A condition that a measurement decides (``measures``:
:func:`over_cache`, :func:`measured`) is stated in the figure's footer; a derivation that holds by
construction (a tolerance's 2·n·u, paired clocks) is stated on the slide, and in the footer only
when its claim fails.

Tolerances come from the arithmetic, not from a constant tuned on one CPU: :func:`rounding_bound`.
"""
from __future__ import annotations

import math
import operator
from typing import Any, Callable

from demos.engine.workload_defs import POINTWISE_ROUNDINGS, unit_roundoff

Data = dict[str, Any]
When = Callable[[Data], "tuple[bool | None, str]"]

_OPS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}
_WORDS = {">": "over", ">=": "at least", "<": "under", "<=": "at most"}
_NOT = {">": "not over", ">=": "under", "<": "not under", "<=": "over"}


def fmt_bytes(n: float) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            v = n / size
            return f"{v:.0f} {unit}" if v >= 10 or v == int(v) else f"{v:.1f} {unit}"
    return f"{n:.0f} B"


def fmt_s(s: float) -> str:
    from demos.engine.timing import fmt_seconds

    return fmt_seconds(s)


def last_level(data: Data) -> tuple[str, int, str]:
    """(name, bytes, whose) of the largest cache level the measurement's device has: its
    ``cache_levels`` (set when it was measured; :func:`demos.engine.hardware.caches`)."""
    c = data["cache_levels"]
    levels = c.get("levels") or {}
    if not levels:
        raise KeyError("cache_levels")  # not read on this machine: the condition was not measured
    name = max(levels, key=lambda k: levels[k])
    return name, int(levels[name]), str(c.get("device", "CPU"))


def over_cache(bytes_of: Callable[[Data], float], what: str = "per operand") -> When:
    """Memory-bound from DRAM/HBM: ``bytes_of(data)`` (the working set the claim's timing
    streams) is over the device's largest cache, so every pass of an eager op goes to memory."""
    def when(d: Data) -> tuple[bool, str]:
        nbytes = float(bytes_of(d))
        name, size, device = last_level(d)
        over = nbytes > size
        return over, (f"memory-bound: {fmt_bytes(nbytes)} {what}, {'over' if over else 'inside'} this "
                      f"{device}'s {fmt_bytes(size)} {name}")
    when.measures = True  # a condition this machine's measurement decides: the footer states it
    return when


def measured(value_of: Callable[[Data], float | None], op: str, threshold: float, text: str) -> When:
    """A measured quantity against a bound: ``text`` is formatted with ``x`` (the quantity, or
    its formatted form ``xs`` for a time), ``t`` (the bound, ``ts`` for a time) and ``cmp`` ("over",
    "not over", …): "sin's steady call {xs}, {cmp} {ts}"."""
    def when(d: Data) -> tuple[bool | None, str]:
        x = value_of(d)
        if x is None or (isinstance(x, float) and math.isnan(x)):
            raise ValueError("not measured")
        ok = _OPS[op](x, threshold)
        return ok, text.format(x=x, t=threshold, xs=fmt_s(x), ts=fmt_s(threshold),
                               cmp=_WORDS[op] if ok else _NOT[op])
    when.bound = threshold  # a note may quote it, as it quotes a claim's threshold
    when.measures = True
    return when


def threads_of(d: Data) -> int:
    """The threads a measurement timed on: its own ``threads`` where it sets them (eager's sweep:
    1 on a CPU), else the thread policy's (its ``conditions``)."""
    return int(d.get("threads") or (d.get("conditions") or {})["threads"])


def shared_cores(d: Data) -> bool:
    """Other processes took cores this measurement's threads needed: what they used while it
    measured (its ``conditions``), with its own threads (:func:`threads_of`), over the cores.
    Stricter than the panel's warning (``Conditions.cores_busy`` lets half a core pass): a second
    spinning process beside a 1-thread timing on 2 cores is over. A GPU's timing, or a record that
    did not note its load: False (what was seen and tested is a CPU's)."""
    c = d.get("conditions") or {}
    if d.get("device", "cpu") != "cpu":
        return False
    try:
        return float(c["others_during"]) + threads_of(d) > int(c["cores"])
    except (KeyError, TypeError, ValueError):
        return False


def cores_to_itself(when: When) -> When:
    """``when``, measured with the cores free: a call of a few microseconds on a machine with more
    runnable threads than cores runs at one of two speeds, about 2× apart, so a ratio of two such
    times reads the scheduler, not the op. A measurement on :func:`shared_cores` is outside the
    regime; one whose record did not note its load is read by ``when`` alone."""
    def both(d: Data) -> tuple[bool | None, str]:
        ok, text = when(d)
        if not shared_cores(d):
            return ok, text
        c, n = d["conditions"], threads_of(d)
        return False, (f"{text}; but other processes used {c['others_during']:.1f} of {c['cores']} cores while "
                       f"it measured on {n} thread{'s' * (n != 1)}: a call of microseconds "
                       "on shared cores runs at one of two speeds")
    both.measures = getattr(when, "measures", False)  # stated where ``when`` is (a "does not apply" always is)
    return both


# ---------------------------------------------------------------------------------------
# Tolerances from the arithmetic
# ---------------------------------------------------------------------------------------
def rounding_bound(dtype: str, n: int, sums: int = 1) -> float:
    """How far two evaluation orders of the same computation may drift apart, relative to the
    size of its terms: an n-term sum in either order errs by at most γ_n ≈ n·u of Σ|terms|
    (Higham, Accuracy and Stability of Numerical Algorithms, §3.1), so two orders differ by at
    most 2·n·u of Σ|terms|, and ``sums`` such sums in a row add theirs. For a chain of n
    roundings the same 2·n·u is a first-order estimate, not a bound (:func:`rounding_text`)."""
    return 2 * n * unit_roundoff(dtype) * sums


def rounding_text(dtype: str, n: int, sums: int = 1, what: str = "terms") -> str:
    """The one line a slide states for :func:`rounding_bound` (``what``: "terms" of a sum, or
    "roundings" along a chain of ops)."""
    lead = f"{sums} sums of {n} {what}" if sums != 1 else f"{n} {what} on the longest path"
    within = "within about" if "roundings" in what else "differ by at most"
    return (f"{dtype}, {lead}: two orders {within} 2·n·u{'·' + str(sums) if sums != 1 else ''}"
            f" = {rounding_bound(dtype, n, sums):.2g}")


def pointwise(d: Data) -> tuple[bool, str]:
    """The condition of an agreement checked with ``tolerance(dtype)``: a pointwise chain of a few ops."""
    return True, rounding_text(d["dtype"], POINTWISE_ROUNDINGS, what="roundings")


# ``Claim(..., **AGREES)``: an agreement claim checked with ``tolerance(dtype)`` (a regime, as every accuracy)
AGREES = {"law_or_regime": "regime", "when": pointwise}


def overhead_bound(time_of: Callable[[Data], float], bound_s: float, what: str) -> When:
    """A call short enough that fixed per-call costs (launches, guards, Python) show in it."""
    return measured(time_of, "<", bound_s, "overhead-bound: " + what + " takes {xs}, {cmp} {ts}")
