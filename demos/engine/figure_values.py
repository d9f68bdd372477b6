"""Where a measured number goes on a figure, whatever the measurement produced: a time under a
nanosecond or exactly 0 (a clock that read nothing), NaN (a quantile of no samples), values
decades apart. Every figure module imports these and places its times and ratios through them, so
no axis limit is NaN, no label lands at a log axis' minus infinity, and no number reads "nan×"."""
from __future__ import annotations

import math
from typing import Any

# The shortest time a figure places on a log axis: a time under it (a clock that read 0, a call
# below its resolution) is drawn at it and labelled "< 1 ns" (timing.fmt_seconds), never at 0 (a
# log axis puts 0 at minus infinity, and its label with it).
TIME_FLOOR_S = 1e-9


def measured(v: Any) -> bool:
    """A number a measurement produced: not None, finite (NaN is a quantile of no samples)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def on_log(v: Any, floor: float = TIME_FLOOR_S) -> float:
    """Where ``v`` sits on a log axis: itself, or ``floor`` where it is under it (or 0); a missing
    value (None, NaN) stays NaN (matplotlib draws nothing there)."""
    return max(float(v), floor) if measured(v) else math.nan


def log_limits(values, below: float = 2.0, above: float = 2.0, floor: float = TIME_FLOOR_S) -> tuple[float, float]:
    """A log axis' limits from the values it shows (each :func:`on_log`), ``below``× under the
    smallest and ``above``× over the largest; with no measured value, a decade above ``floor``."""
    shown = [on_log(v, floor) for v in values if measured(v)]
    if not shown:
        return floor, floor * 10
    lo, hi = min(shown) / below, max(shown) * above
    return lo, max(hi, lo * 10)


def largest(values, default: float) -> float:
    """The largest measured value (a linear axis' top), or ``default`` where none was measured or
    none is above 0 (an axis from 0 to 0 is no axis)."""
    top = max((v for v in values if measured(v)), default=default)
    return top if top > 0 else default


def ratio_of(a: Any, b: Any) -> float:
    """a / b where both were measured and b is not 0; else NaN (said "—", :func:`fmt_ratio`)."""
    return a / b if measured(a) and measured(b) and b != 0 else math.nan


def fmt_ratio(r: Any, spec: str = ".1f") -> str:
    """A ratio as a figure says it, "×" after; "—" where it could not be measured."""
    return f"{format(r, spec)}×" if measured(r) else "—"
