"""The controls a demo declares, as data: turned into ipywidgets only inside a kernel.

Each control names the keyword a demo's ``measure`` receives, its default, and what values it can
take; :meth:`Control.check` is the one check every value passes before anything is measured.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, Sequence

from demos.engine.errors import DemoError


# =======================================================================================
# Controls: declared as data, turned into ipywidgets only inside a kernel
# =======================================================================================
@dataclass
class Control:
    name: str                 # the keyword ``measure`` receives
    default: Any = None
    label: str = ""           # shown beside the widget (default: name)
    view: bool = False        # True: changes only the drawing, not the measurement
    match: bool = False       # True: a recorded run is drawn beside only when measured at this value

    def values(self) -> list[Any]:
        """Every value the control can take, in order (for tests and the UI benchmark)."""
        raise NotImplementedError

    def allowed(self) -> str:
        """What the control accepts, in words (the second half of a refusal)."""
        return "one of " + ", ".join(_show(v) for v in self.values())

    def check(self, value: Any) -> Any:
        """``value`` when the control can take it; otherwise DemoError, one line naming the control,
        the value and what is allowed, e.g. ``N=0: must be a power of two from 2^10 to 2^24``.
        The one check every value passes before anything is measured or allocated."""
        if any(_same_value(value, v) for v in self.values()):
            return value
        raise self.refuse(value)

    def refuse(self, value: Any) -> DemoError:
        return DemoError(f"{self.name}={_show(value)}: must be {self.allowed()}")

    def bad_values(self) -> list[Any]:
        """Values the control must refuse: its bounds ±1 (where it has bounds), 0, a float, a
        bool, a string and None (the generated bad-value tests)."""
        vals = self.values()
        cands: list[Any] = [0, 1.5, True, False, "abc", "", None, float("nan")]
        nums = [v for v in vals if isinstance(v, numbers.Real) and not isinstance(v, bool)]
        if nums:
            cands += [min(nums) - 1, max(nums) + 1]
            if all(_whole(v) for v in nums):
                cands.append(float(nums[0]))  # 2.0 is not the option 2
        return [c for c in cands if not any(_same_value(c, v) for v in vals)]

    def neighbour(self, value: Any) -> Any:
        """A nearby valid value different from ``value`` (a small, realistic move)."""
        vals = self.values()
        i = vals.index(value) if value in vals else 0
        return vals[i - 1] if i > 0 else vals[min(1, len(vals) - 1)]

    def widget(self):
        raise NotImplementedError

    def _style(self) -> dict:
        return {"description": self.label or self.name, "style": {"description_width": "initial"}}


def _widgets():
    import ipywidgets  # Jupyter-only: imported lazily

    return ipywidgets


def _show(v: Any) -> str:
    """A value as a refusal shows it: powers of two as 2^k, strings quoted."""
    if isinstance(v, bool) or v is None:
        return repr(v)
    if isinstance(v, numbers.Integral) and v >= 1024 and v & (v - 1) == 0:
        return f"2^{int(v).bit_length() - 1}"
    if isinstance(v, (tuple, list)):
        return "(" + ", ".join(_show(x) for x in v) + ")"
    return repr(v) if isinstance(v, str) else str(v)


def _whole(v: Any) -> bool:
    """An integer that is not a bool (numpy integers count)."""
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _same_value(a: Any, b: Any) -> bool:
    """``a == b`` of the same kind: True is not 1, 2.0 is not the integer option 2, "1" is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(b, str) or isinstance(a, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if _whole(b):
        return _whole(a) and a == b
    if isinstance(b, numbers.Real):
        return isinstance(a, numbers.Real) and math.isfinite(float(a)) and a == b
    return a == b


def _pow2_exponent(v: Any) -> int | None:
    """k when ``v`` is the integer 2^k (k >= 0), else None."""
    if _whole(v) and v >= 1 and int(v) & (int(v) - 1) == 0:
        return int(v).bit_length() - 1
    return None


@dataclass
class Choice(Control):
    """A dropdown (or toggle buttons) over values, each a value or a (label, value) pair."""
    options: Sequence[Any] = ()
    toggle: bool = False
    width: str = "300px"      # a dropdown's width

    def __post_init__(self):
        if not self.options:
            raise ValueError(f"control {self.name!r} has no options")
        if self.default is None:
            self.default = self.values()[0]
        elif self.default not in self.values():
            raise ValueError(f"control {self.name!r}: default {self.default!r} is not one of its options")

    def values(self) -> list[Any]:
        return [o[1] if isinstance(o, tuple) else o for o in self.options]

    def widget(self):
        w = _widgets()
        if self.toggle:
            st = self._style()
            st["style"]["button_width"] = "auto"
            return w.ToggleButtons(options=list(self.options), value=self.default, **st)
        return w.Dropdown(options=list(self.options), value=self.default, layout=w.Layout(width=self.width),
                          **self._style())


@dataclass
class Pow2(Control):
    """A slider over powers of two 2^lo … 2^hi, labelled 2^k; the value is the integer."""
    lo: int = 0
    hi: int = 0

    def __post_init__(self):
        if self.default is None:
            self.default = 2**self.lo
        elif self.default not in self.values():  # a default the slider cannot show is a wrong declaration
            raise ValueError(f"control {self.name!r}: default {self.default!r} is not {self.allowed()}")

    def values(self) -> list[int]:
        return [2**k for k in range(self.lo, self.hi + 1)]

    def allowed(self) -> str:
        return f"a power of two from 2^{self.lo} to 2^{self.hi}"

    def check(self, value: Any) -> Any:
        k = _pow2_exponent(value)
        if k is None or not self.lo <= k <= self.hi:
            raise self.refuse(value)
        return int(value)

    def bad_values(self) -> list[Any]:
        lo, hi = 2**self.lo, 2**self.hi
        return [lo - 1, lo // 2 if self.lo > 0 else 3, hi + 1, hi * 2, 0, -lo, float(lo), True, "abc", None]

    def widget(self):
        w = _widgets()
        return w.SelectionSlider(options=[(f"2^{k}", 2**k) for k in range(self.lo, self.hi + 1)],
                                 value=self.default, continuous_update=False,
                                 layout=w.Layout(width="420px"), **self._style())


@dataclass
class Pow2Range(Control):
    """A range slider over powers of two; the value is a (low, high) pair of integers."""
    lo: int = 0
    hi: int = 0

    def values(self) -> list[tuple[int, int]]:
        a, b = self.default
        return [(a, b)] + [(a, v) for v in (2**k for k in range(self.lo, self.hi + 1)) if v > a and v != b]

    def allowed(self) -> str:
        return f"a pair (low, high) of powers of two from 2^{self.lo} to 2^{self.hi}, low ≤ high"

    def check(self, value: Any) -> Any:
        if not isinstance(value, (tuple, list)) or len(value) != 2:
            raise self.refuse(value)
        ks = [_pow2_exponent(v) for v in value]
        if any(k is None or not self.lo <= k <= self.hi for k in ks) or ks[0] > ks[1]:
            raise self.refuse(value)
        return (int(value[0]), int(value[1]))

    def bad_values(self) -> list[Any]:
        lo, hi = 2**self.lo, 2**self.hi
        return [(lo - 1, hi), (lo, hi + 1), (lo // 2 if self.lo > 0 else 3, hi), (lo, hi * 2), (hi, lo),
                (0, hi), (float(lo), hi), (lo,), lo, True, "abc", None]

    def widget(self):
        w = _widgets()
        options = [(f"2^{k}", 2**k) for k in range(self.lo, self.hi + 1)]
        a, b = self.default
        return w.SelectionRangeSlider(options=options, index=(int(math.log2(a)) - self.lo,
                                                              int(math.log2(b)) - self.lo),
                                      continuous_update=False, layout=w.Layout(width="420px"),
                                      **self._style())


@dataclass
class Int(Control):
    """An integer slider lo … hi."""
    lo: int = 0
    hi: int = 1
    step: int = 1

    def values(self) -> list[int]:
        return list(range(self.lo, self.hi + 1, self.step))

    def allowed(self) -> str:
        step = f" in steps of {self.step}" if self.step != 1 else ""
        return f"a whole number from {self.lo} to {self.hi}{step}"

    def check(self, value: Any) -> Any:
        if not _whole(value) or not self.lo <= value <= self.hi or (value - self.lo) % self.step:
            raise self.refuse(value)
        return int(value)

    def bad_values(self) -> list[Any]:
        return [self.lo - 1, self.hi + 1, 0 if self.lo > 0 else -1, self.lo + 0.5, True, "abc", None]

    def widget(self):
        w = _widgets()
        return w.IntSlider(value=self.default, min=self.lo, max=self.hi, step=self.step,
                           continuous_update=False, layout=w.Layout(width="380px"), **self._style())


@dataclass
class Float(Control):
    """A slider over a fixed list of floats (e.g. size scales), labelled like ×0.5."""
    options: Sequence[float] = ()
    fmt: str = "×{:g}"

    def values(self) -> list[float]:
        return list(self.options)

    def widget(self):
        w = _widgets()
        return w.SelectionSlider(options=[(self.fmt.format(v), v) for v in self.options], value=self.default,
                                 continuous_update=False, layout=w.Layout(width="380px"), **self._style())


@dataclass
class Code(Control):
    """A code box: Python source text the student edits (a Textarea in the panel)."""
    max_chars: int = 20_000
    rows: int = 2             # the slide's height is the limit: the box scrolls and can be dragged taller
    width: str = "86%"

    def values(self) -> list[Any]:
        return [self.default]

    def allowed(self) -> str:
        return f"Python source text defining a function (1 to {self.max_chars:,} characters)"

    def check(self, value: Any) -> Any:
        if not isinstance(value, str) or not value.strip() or len(value) > self.max_chars or "\x00" in value:
            raise self.refuse(value if not isinstance(value, str) or len(value) < 60 else value[:40] + "…")
        return value

    def bad_values(self) -> list[Any]:
        return ["", "   \n", None, 0, 1.5, True, b"def f(x): return x", "x" * (self.max_chars + 1)]

    def widget(self):
        w = _widgets()
        box = w.Textarea(value=self.default, rows=self.rows, continuous_update=False,
                         layout=w.Layout(width=self.width), **self._style())
        box.add_class("jitdeck-code")
        return box


# =======================================================================================
# The declaration
# =======================================================================================
