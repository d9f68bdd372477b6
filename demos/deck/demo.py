"""One declaration per live demo; everything that enumerates demos is derived from it.

A topic module declares each live demo once::

    timeline = Demo(
        "timeline", "Eager timeline",
        controls=lambda kind: [Pow2("N", 10, 24, 2**15), Choice("dtype", DTYPES)],
        measure=measure_timeline,          # measure_timeline(N=..., dtype=..., [progress=...]) -> dict
        figure=figure_timeline,            # figure_timeline(data, reference) -> Figure (pure)
        match=("dtype",),                  # a recorded run is drawn beside only when these agree
    )

and the live cell is ``eager.timeline()``. From that one declaration this module builds the
panel (controls, progress, redraw in place, one-line errors), the record section for
``make record``, the warm-up for ``make warm``, the recorded-only export (``make pdf
RESULTS=…``), the lookup of the reference record with its stamp, the rows of ``ui-bench`` and
the shared widget test.

``measure`` is called with the control values as keyword arguments (plus ``progress`` when it
takes one) and returns a JSON-able dict; the panel adds ``values`` and a ``stamp`` saying
where it was measured. ``figure(data, reference)`` draws a measurement, live or recorded;
``reference`` is the recorded run's data for the same demo (stamped, ``recorded=True``) or
None. Controls marked ``view=True`` change only the drawing: moving one redraws without
measuring again.
"""
from __future__ import annotations

import inspect
import json
import math
import numbers
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from demos.engine import plots
from demos.engine.env import KEPT_DIR, package_digest
from demos.engine.errors import DemoError
from demos.engine.protocol import declared_state, forget_all

Progress = Callable[[float, str], None]


def _noop(_fraction: float, _message: str = "") -> None:
    pass


# =======================================================================================
# Controls: declared as data, turned into ipywidgets only inside a kernel
# =======================================================================================
@dataclass
class Control:
    name: str                 # the keyword ``measure`` receives
    default: Any = None
    label: str = ""           # shown beside the widget (default: name)
    view: bool = False        # True: changes only the drawing, not the measurement

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
        self.default = min(self.values(), key=lambda v: abs(v - int(self.default or 2**self.lo)))

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
_REGISTRY: dict[str, "Demo"] = {}


def device_kind() -> str:
    from demos.engine.devices import device_kind as kind

    return kind()


@dataclass(eq=False)
class Demo:
    """A live demo, declared once (see the module docstring)."""
    name: str
    title: str
    controls: Sequence[Control] | Callable[[str], Sequence[Control]]
    measure: Callable[..., dict]
    figure: Callable[[dict, dict | None], Any]
    run_button: bool = False
    match: tuple[str, ...] = ()
    # what `make warm` runs: value overrides, one measurement each (default: the defaults),
    # or a callable doing something more specific
    warm: Sequence[dict] | Callable[[], None] = ({},)
    # overrides for `make record` (and `--quick`): control values, or other keyword arguments of
    # `measure` such as a longer timing budget
    record: dict = field(default_factory=dict)
    record_quick: dict = field(default_factory=dict)
    to_record: Callable[[dict], dict] | None = None   # slims a measurement before it is stored
    # What the panel opens on, the one setting for it: "live" measures when the cell runs; "kept"
    # shows at once the result `make warm` kept (stamped as such) and measures on Run or on the first
    # control move. For Run-button sweeps of seconds, cold compiles, and panels whose first live
    # figure would trace and load compiled code for over 3 s in a fresh kernel.
    opens: str = "live"
    # the lesson is a cold compile (tens of seconds by design): `ui-bench` lists it as exempt
    cold: bool = False
    # "worker": ``measure`` only waits for another process that measures from its own declared state
    # (part 7's inspector), so this process chooses no thread policy and reports no load of its own
    measured_in: str = "here"
    panel_class: type | None = None                   # a ui.Panel subclass for stateful demos
    # defaults that follow other controls' values (a preset fills a code box): values -> {name: value},
    # applied to each control the caller did not set
    derived: Callable[[dict], dict] | None = None
    # what the slide claims of a measurement at the defaults: data -> {claim: holds?}; checked by
    # `make check` on the lecture's machine and by the shared tests on CI's CPU
    claims: Any = None                                # a demos.deck.claims.Claims (thresholds declared once)
    # what the seed material reported on its GPU, in the measurement's own format, for the
    # values given (None where it reported nothing): drawn as the reference until a recorded
    # run (`make record`) exists; ``seed_source`` says where it was reported
    seed: Callable[[dict], dict | None] | None = None
    seed_source: str = ""
    topic: str = ""

    def __post_init__(self):
        if self.opens not in ("live", "kept"):
            raise ValueError(f"{self.name}: opens={self.opens!r}; it is 'live' or 'kept'")
        self.module = self.measure.__module__  # where it was declared
        if not self.topic:
            self.topic = self.module.rsplit(".", 1)[-1]
        self._memo: tuple[tuple, dict] | None = None
        self.last_conditions = None   # how the latest measurement ran (threads, others' load)
        self.last_split: dict | None = None  # the latest redraw's seconds measuring and building its figure
        _REGISTRY[self.key] = self

    # -- identity ----------------------------------------------------------------------
    @property
    def key(self) -> str:
        return f"{self.topic}.{self.name}"

    def __repr__(self) -> str:
        return f"<Demo {self.key}>"

    # -- values ------------------------------------------------------------------------
    def control_list(self, kind: str | None = None) -> list[Control]:
        ctl = self.controls(kind or device_kind()) if callable(self.controls) else self.controls
        return list(ctl)

    def defaults(self, kind: str | None = None) -> dict[str, Any]:
        return {c.name: c.default for c in self.control_list(kind)}

    def _measure_args(self, values: dict[str, Any]) -> dict[str, Any]:
        view = {c.name for c in self.control_list() if c.view}
        return {k: v for k, v in values.items() if k not in view}

    def validate(self, values: dict[str, Any] | None) -> dict[str, Any]:
        """Every value checked against its declaration, once, before anything is measured or
        allocated; missing ones take their defaults. A control's value must be one it can take
        (:meth:`Control.check`); a numeric keyword of ``measure`` that is no control (a timing
        budget ``make record`` passes) must be a positive, finite number of its default's kind. Anything else is DemoError,
        one line naming the demo, the name and what is allowed."""
        controls = {c.name: c for c in self.control_list()}
        vals = {k: c.default for k, c in controls.items()}
        if values is None:
            return vals
        if not isinstance(values, dict):
            raise DemoError(f"{self.key}: values must be a dict of control values, not {type(values).__name__}")
        params = inspect.signature(self.measure).parameters
        for k, v in values.items():
            if k in controls:
                try:
                    vals[k] = controls[k].check(v)
                except DemoError as exc:
                    raise DemoError(f"{self.key}: {exc}") from None
            elif isinstance(k, str) and k in params and k != "progress" and isinstance(
                    params[k].default, numbers.Real) and not isinstance(params[k].default, bool):
                whole = _whole(params[k].default)
                if not (_whole(v) if whole else isinstance(v, numbers.Real) and not isinstance(v, bool)) \
                        or not math.isfinite(v) or v <= 0:
                    raise DemoError(f"{self.key}: {k}={_show(v)}: must be a positive "
                                    f"{'whole number' if whole else 'number'}")
                vals[k] = v
            else:
                raise DemoError(f"{self.key} has no control {k!r}; its controls: "
                                f"{', '.join(controls) or 'none'}")
        if self.derived is not None:
            for k, v in self.derived(dict(vals)).items():
                if k in controls and k not in values:
                    vals[k] = controls[k].check(v)
        return vals

    # -- measuring ---------------------------------------------------------------------
    def run(self, values: dict[str, Any] | None = None, progress: Progress | None = None) -> dict:
        """Measure at ``values`` (missing ones take their defaults). A change of view-only
        controls reuses the last measurement. The result carries ``values`` and ``stamp``."""
        vals = self.validate(values)
        args = self._measure_args(vals)
        key = tuple(sorted((k, repr(v)) for k, v in args.items()))
        if self._memo is not None and self._memo[0] == key:
            data = dict(self._memo[1])
        else:
            kw = dict(args)
            if "progress" in inspect.signature(self.measure).parameters:
                kw["progress"] = progress or _noop
            if self.measured_in == "worker":
                data, cond = self.measure(**kw), None
            else:
                with declared_state() as cond:
                    data = self.measure(**kw)
            if not isinstance(data, dict):
                raise TypeError(f"{self.key}: measure returned {type(data).__name__}, not a dict")
            if cond is not None:
                data["conditions"] = cond.to_dict()
            self.last_conditions = cond
            data.setdefault("stamp", plots.live_stamp(data.get("extra", ""), cond.stamp() if cond else ""))
            self._memo = (key, dict(data))
        data["values"] = vals
        return data

    def shown(self) -> dict | None:
        """What this demo's panel shows now: its latest measurement in this process, else (a demo
        that opens on a kept result) what `make warm` kept; None when neither exists."""
        if self._memo is not None:
            return dict(self._memo[1])
        return load_last(self) if self.instant else None

    def forget(self) -> None:
        """Back to the declared state (:func:`demos.engine.protocol.forget_all`): this demo's memo
        and every cache any topic registered are dropped, and Dynamo's and JAX's in-memory caches
        reset, so the next run measures again. Only the persistent compile caches carry over.
        Other demos keep their latest measurement (what their panels show, which the judgment
        slide reads): it is a result, not state a measurement starts from."""
        self._memo = None
        forget_all()

    # -- recorded runs -------------------------------------------------------------------
    def reference(self, values: dict[str, Any] | None = None, record=None, seed: bool = True) -> dict | None:
        """This demo's data in the reference record (``results.reference()``), stamped with the
        record's machine and date; without one, what the seed reported (``seed``); else None."""
        if record is None:
            from demos.engine.results import reference

            record = reference()
        data = record.sections.get(self.topic, {}).get(self.name) if record is not None else None
        if not isinstance(data, dict):
            return self.seed_reference(values) if seed else None
        if values is not None:
            recorded_values = data.get("values", {})
            if any(k in recorded_values and recorded_values[k] != values.get(k) for k in self.match):
                return None
        out = dict(data)
        out["recorded"] = True
        out["stamp"] = plots.machine_stamp(record.machine, data.get("extra", ""), record.created)
        out["machine_short"] = short_machine(record.machine)
        return out

    def seed_reference(self, values: dict[str, Any] | None = None) -> dict | None:
        """The seed's reported figures for ``values``, stamped as reported (never as measured)."""
        if self.seed is None:
            return None
        vals = self.defaults()
        vals.update(values or {})
        data = self.seed(vals)
        if data is None:
            return None
        out = dict(data)
        out.update(recorded=True, seed=True, machine_short="seed's GPU (reported)",
                   stamp=f"reported by {self.seed_source or 'the seed material'} — not measured here")
        return out

    def record_into(self, rec, quick: bool = False) -> dict:
        """Measure the recorded configuration, from the declared state as a live cell does, and
        store it in ``rec.sections[topic][name]``."""
        values = dict(self.record)
        if quick:
            values.update(self.record_quick)
        self.forget()
        data = self.run(values)
        data.pop("stamp", None)  # the record's machine and date stamp it when drawn
        if self.to_record is not None:
            data = self.to_record(data)
        data = json.loads(json.dumps(data, default=_jsonable))
        rec.sections.setdefault(self.topic, {})[self.name] = data
        return data

    def check_claims(self, data: dict) -> dict[str, bool]:
        """The slide's claims evaluated on ``data`` (empty when the demo makes none)."""
        from demos.deck.claims import evaluate

        return evaluate(self.claims, data)

    @property
    def instant(self) -> bool:
        """The panel opens on the result `make warm` kept (``opens="kept"``)."""
        return self.opens == "kept"

    # -- warming -------------------------------------------------------------------------
    def warm_up(self) -> None:
        """Compile what the live cell compiles at its default sizes (the persistent caches
        keep it); a cold demo also keeps its result for the panel to show at once."""
        if callable(self.warm):
            self.warm()
            overrides: Sequence[dict] = ()
        else:
            overrides = self.warm
        for over in overrides:
            data = self.run(over)
            if self.instant and not over:
                save_last(self, data)
        if self.instant and {} not in list(overrides):
            save_last(self, self.run({}))

    # -- the panel ---------------------------------------------------------------------
    def render(self, values: dict[str, Any], progress: Progress):
        """What the panel draws: the live measurement beside the recorded one, or, in a
        recorded-only export, the recorded one alone."""
        from demos.deck.ui import recorded_only

        if recorded_only():
            ref = self.reference(values, seed=False)
            if ref is None:
                raise DemoError(f"the recorded run has no {self.key} measurement"
                                + (f" for {', '.join(f'{k}={values.get(k)}' for k in self.match)}"
                                   if self.match else ""))
            return self.figure(ref, None)
        t0 = time.perf_counter()
        data = self.run(values, progress)
        reference = self.reference(values)
        t1 = time.perf_counter()
        fig = self.figure(data, reference)
        # what a redraw spent measuring and building the figure (`ui-bench` reports them apart)
        self.last_split = {"measure_s": t1 - t0, "figure_s": time.perf_counter() - t1}
        return fig

    def panel(self, **overrides: Any):
        """The live panel (a ``ui.Panel``); ``overrides`` set controls' starting values."""
        from demos.deck import ui

        controls = self.control_list()
        unknown = set(overrides) - {c.name for c in controls}
        if unknown:
            raise DemoError(f"{self.key} has no control {', '.join(sorted(unknown))}; "
                            f"its controls: {', '.join(c.name for c in controls) or 'none'}")
        checked = self.validate(overrides)  # the same one check a measurement makes
        specs = [_replace_default(c, checked[c.name]) if c.name in overrides or checked[c.name] != c.default else c
                 for c in controls]
        cls = self.panel_class or ui.Panel
        panel = cls(self, specs)
        if self.instant and not overrides:
            panel.initial = load_last(self)
        return panel

    def __call__(self, show: bool = True, **overrides: Any):
        """The live cell: ``eager.timeline()`` shows the panel; ``show=False`` returns it. A cell
        run again measures again (from the declared state: :meth:`forget`)."""
        self.forget()
        try:
            panel = self.panel(**overrides)
            return panel.show() if show else panel
        except DemoError as exc:  # a value typed into the cell, a bad setting: one line, the kernel goes on
            if not show:
                raise
            from demos.deck.ui import show_error_line

            show_error_line(exc)
            return None


def _replace_default(c: Control, value: Any) -> Control:
    import copy

    c = copy.copy(c)
    c.default = value
    return c


def short_machine(machine: dict) -> str:
    name = machine.get("gpu_name") or machine.get("device_name") or "recorded"
    name = name.replace("NVIDIA ", "").replace("CPU: ", "")
    return name.split("(")[0].strip()[:28]


def _jsonable(o: Any) -> Any:
    if hasattr(o, "tolist"):
        return o.tolist()
    if isinstance(o, (set, tuple)):
        return list(o)
    return str(o)


# =======================================================================================
# The last result of an instant demo (cold, or a Run-button sweep), kept by `make warm`
# =======================================================================================
LAST_DIR = KEPT_DIR


def _last_path(demo: Demo) -> Path:
    from demos.engine.devices import torch_device

    return LAST_DIR / f"{demo.key}-{torch_device()}.json"


def _source_hash(demo: Demo) -> str:
    """What a kept result depends on: the whole ``demos`` package, the torch and JAX versions and
    the device (a fix anywhere in the engine, or an upgrade, measures again)."""
    from demos.engine.devices import torch_device

    return package_digest(with_versions=True, extra=torch_device())


def save_last(demo: Demo, data: dict) -> Path | None:
    path = _last_path(demo)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"saved": time.strftime("%Y-%m-%d %H:%M"), "source": _source_hash(demo),
                                   "data": data}, default=_jsonable))
        os.replace(tmp, path)
        return path
    except OSError as exc:
        print(f"{demo.key}: could not keep the warm result in {path.parent} ({exc.strerror})", file=sys.stderr)
        return None


def load_last(demo: Demo) -> dict | None:
    """The result `make warm` kept for an instant demo (None when there is none, it is unreadable,
    or the demo's code changed since)."""
    path = _last_path(demo)
    try:
        saved = json.loads(path.read_text())
        data = saved["data"]
        if not isinstance(data, dict) or saved.get("source") != _source_hash(demo):
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    data["stamp"] = f"{data.get('stamp', '')} · measured by `make warm` on {saved.get('saved', '?')}"
    return data


# =======================================================================================
# The registry
# =======================================================================================
def registered(package: str = "") -> list[Demo]:
    """Every demo declared in ``package`` (all when empty), in part order (its module's
    ``PART``), then declaration order."""
    order = {key: i for i, key in enumerate(_REGISTRY)}

    def part(d: Demo) -> int:
        return getattr(sys.modules.get(d.module), "PART", 99)

    found = [d for d in _REGISTRY.values() if d.module.startswith(package)]
    return sorted(found, key=lambda d: (part(d), order[d.key]))


def select(demos: Sequence[Demo], names: Sequence[str] | None) -> list[Demo]:
    """Demos whose key (``topic.name``) or topic is in ``names`` (all when None)."""
    if not names:
        return list(demos)
    from demos.engine.errors import unknown_name

    valid = [d.key for d in demos] + sorted({d.topic for d in demos})
    for n in names:
        if n not in valid:
            raise unknown_name("demo", n, valid)
    return [d for d in demos if d.key in names or d.topic in names]
