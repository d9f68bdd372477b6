"""One declaration per live demo; everything that enumerates demos is derived from it.

A topic module declares each live demo once, from a ``measure`` and a ``figure``::

    >>> from demos.deck.demo import Choice, Demo, Pow2
    >>> def measure_sum(run, N, dtype):               # run: the measurement's context
    ...     run.progress(0.5, "summing…")
    ...     total = run.cached(("ones", N), lambda: [1.0] * N)   # the demo's own memory
    ...     return {"N": N, "dtype": dtype, "sum": sum(total), "extra": f"N={N}"}
    >>> def figure_sum(data, reference):            # draws a measurement, live or recorded
    ...     return f"sum of {data['N']} ones = {data['sum']:g}"
    >>> ones = Demo(
    ...     "ones", "Summing ones",
    ...     controls=[Pow2("N", 2**12, lo=10, hi=16),
    ...               # match: a recorded run is drawn beside only when measured at this dtype
    ...               Choice("dtype", "float32", options=("float32", "bfloat16"), match=True)],
    ...     measure=measure_sum, figure=figure_sum,
    ... )
    >>> ones.matching
    ('dtype',)
    >>> ones.run({"N": 2**10})["sum"]
    1024.0
    >>> ones.run({"N": 3})
    Traceback (most recent call last):
    ...
    demos.engine.errors.DemoError: demo.ones: N=3: must be a power of two from 2^10 to 2^16

and the live cell is ``topic.ones()``. From that one declaration this module builds the panel
(controls, progress, redraw in place, one-line errors), the record section for ``make record``,
the warm-up for ``make warm``, the recorded-only export (``make pdf RESULTS=…``), the lookup of
the reference record with its stamp, the rows of ``ui-bench`` and the shared widget test.

``measure(run, **values)`` gets a :class:`demos.deck.context.DemoRun`, made for this
measurement (its cache, timing, fresh compiles, kernel counts and progress), and the control
values as keyword arguments; it returns a JSON-able dict, to which the demo adds ``values``, an
``extra`` naming them (unless it gave one) and a ``stamp`` saying where it was measured.
``figure(data, reference)`` draws a measurement, live or recorded; ``reference`` is the recorded
run's data for the same demo (stamped, ``recorded=True``) or None; without one, each timed form
is a bar (:func:`demos.engine.plots.timing_bars`).
Controls marked ``view=True`` change only the drawing: moving one redraws without measuring
again. A ``Demo`` is immutable once declared; what changes as it runs (its latest measurement, its
cache) is its state, which :meth:`Demo.forget` drops.
"""
from __future__ import annotations

import copy
import hashlib
import inspect
import json
import math
import numbers
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, NamedTuple, Sequence

from demos.deck import asks  # noqa: F401 (the declaration's vocabulary, with Claim and the controls)
from demos.deck.claims import Claim, Claims  # noqa: F401
from demos.deck.context import DemoRun
from demos.deck.declaring import Configs, PanelSpec, Reported
from demos.deck.controls import (Choice, Code, Control, Float, Int, Pow2, Pow2Range,  # noqa: F401
                                 _show, _whole)
from demos.engine import plots
from demos.engine.env import WARMED_DIR, package_digest
from demos.engine.devices import runs_here, torch_device, device_kind as _device_kind
from demos.engine.hardware import caches
from demos.engine.errors import DemoError
from demos.engine.measurement import Progress
from demos.engine.protocol import Conditions, forget_all
from demos.engine.results import jsonable

# =======================================================================================
# The declaration
# =======================================================================================
_REGISTRY: dict[str, "Demo"] = {}

class Drawn(NamedTuple):
    """One redraw: the figure (or (figure, html)), how it measured (None: it did not), seconds spent."""
    result: Any
    conditions: Conditions | None = None
    split: dict | None = None
    data: dict | None = None  # what was drawn (the measurement, or the recorded run)


class _State:
    """What changes as a demo runs: its latest measurement and its cache (``run.cache``)."""
    def __init__(self) -> None:
        self.memo: tuple[tuple, dict] | None = None
        self.cache: dict = {}


@dataclass(frozen=True, eq=False)
class Demo:
    """A live demo, declared once (see the module docstring)."""
    name: str
    title: str
    controls: Sequence[Control] | Callable[[str], Sequence[Control]] = ()  # or per device kind ("cpu"/"gpu")
    measure: Callable[..., dict] = None               # measure(run, **values) -> JSON-able dict
    # figure(data, reference) -> Figure; None: each timed form's median as a bar (plots.timing_bars)
    figure: Callable[[dict, dict | None], Any] | None = None
    # how the panel paces its measurements and what else it does (a PanelSpec, or its pacing alone)
    panel: PanelSpec | str = "live"
    configs: Configs = Configs()
    # what the slide claims of a measurement at the defaults: Claims or a list of Claim (thresholds
    # declared once), checked by `make check` on the lecture's machine and by the tests on CI's CPU
    claims: Any = None
    # what the slide asks the room before it shows the figure: the question a claim declares
    # (Claim(..., ask=...)); here only a question no claim reads (asks.among): every demo that makes claims asks first
    ask: Any = None
    reported: Reported | None = None  # what the seed material reported, drawn until a record exists

    def __post_init__(self):
        if not callable(self.measure):
            raise ValueError(f"{self.name}: measure=, the function that measures, is required")
        if isinstance(self.claims, (list, tuple)):
            object.__setattr__(self, "claims", Claims(*self.claims))
        if self.ask is None and isinstance(self.claims, Claims):  # the question a claim declares
            object.__setattr__(self, "ask", next((c.ask for c in self.claims if c.ask is not None), None))
        if self.figure is None:
            object.__setattr__(self, "figure", plots.timing_bars)
        try:
            object.__setattr__(self, "panel", self.panel if isinstance(self.panel, PanelSpec) else PanelSpec(self.panel))
        except ValueError as exc:
            raise ValueError(f"{self.name}: {exc}") from None
        first = next(iter(inspect.signature(self.measure).parameters), None)
        if first != "run":
            raise ValueError(f"{self.name}: measure must take the measurement's context first, "
                             f"measure(run, **values); {self.measure.__name__} takes {first!r} first")
        module = self.measure.__module__
        object.__setattr__(self, "module", module)    # where it was declared
        object.__setattr__(self, "topic", module.rsplit(".", 1)[-1])
        object.__setattr__(self, "_state", _State())
        _REGISTRY[self.key] = self

    # -- identity and pacing --------------------------------------------------------------
    @property
    def key(self) -> str:
        return f"{self.topic}.{self.name}"

    def __repr__(self) -> str:
        return f"<Demo {self.key}>"

    @property
    def pacing(self) -> str:
        return self.panel.pacing

    @property
    def derived(self) -> Callable[[dict], dict] | None:
        return self.panel.derived

    @property
    def matching(self) -> tuple[str, ...]:
        """The controls on which a recorded run must agree to be drawn beside (``match=True``)."""
        return tuple(c.name for c in self.control_list() if c.match)

    @property
    def button(self) -> bool:
        """The panel measures on a Run button, not on every control move."""
        return self.pacing != "live"

    @property
    def opens_warmed(self) -> bool:
        """The panel opens on the result `make warm` measured."""
        return self.pacing in ("warmed", "cold")

    # -- values ------------------------------------------------------------------------
    def control_list(self, kind: str | None = None) -> list[Control]:
        return list(self.controls(kind or _device_kind()) if callable(self.controls) else self.controls)

    def defaults(self, kind: str | None = None) -> dict[str, Any]:
        return {c.name: c.default for c in self.control_list(kind)}

    def recorded_values(self, quick: bool = False) -> dict[str, Any]:
        """The values `make record` measures at (``quick``: with the quick overrides laid over)."""
        return {**self.configs.record, **(self.configs.quick if quick else {})}

    def _measure_args(self, values: dict[str, Any]) -> dict[str, Any]:
        view = {c.name for c in self.control_list() if c.view}
        return {k: v for k, v in values.items() if k not in view}

    def validate(self, values: dict[str, Any] | None) -> dict[str, Any]:
        """Every value checked against its declaration, once, before anything is measured or
        allocated; missing ones take their defaults. A control's value must be one it can take
        (:meth:`Control.check`); a numeric keyword of ``measure`` that is no control (a timing
        budget ``make record`` passes) must be a positive, finite number of its default's kind.
        Anything else is DemoError, one line naming the demo, the name and what is allowed."""
        controls = {c.name: c for c in self.control_list()}
        vals = {k: c.default for k, c in controls.items()}
        if values is None:
            return runs_here(self.key, vals)
        if not isinstance(values, dict):
            raise DemoError(f"{self.key}: values must be a dict of control values, not {type(values).__name__}")
        params = inspect.signature(self.measure).parameters
        for k, v in values.items():
            if k in controls:
                try:
                    vals[k] = controls[k].check(v)
                except DemoError as exc:
                    raise DemoError(f"{self.key}: {exc}") from None
            elif isinstance(k, str) and k in params and k != "run" and isinstance(
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
        return runs_here(self.key, vals)

    # -- measuring ---------------------------------------------------------------------
    def _measured(self, values: dict[str, Any] | None, progress: Progress | None) -> tuple[dict, Conditions | None]:
        """(data, how it was measured); the conditions are None when the last measurement was
        reused (only view-only controls changed)."""
        vals = self.validate(values)
        key = self._memo_key(vals)
        args = self._measure_args(vals)
        state = self._state
        cond = None
        if state.memo is not None and state.memo[0] == key:
            data = dict(state.memo[1])
        else:
            run = DemoRun(state.cache, progress)
            if self.panel.worker:
                data = self.measure(run, **args)
            else:
                with run.declared() as cond:
                    data = self.measure(run, **args)
            if not isinstance(data, dict):
                raise TypeError(f"{self.key}: measure returned {type(data).__name__}, not a dict")
            if cond is not None:
                data["conditions"] = cond.to_dict()
            data.setdefault("extra", ", ".join(f"{k}={v if isinstance(v, str) else _show(v)}" for k, v in args.items()))  # the sizes, dtype…
            data.setdefault("stamp", plots.live_stamp(data["extra"], cond.stamp() if cond else ""))
            data.setdefault("cache_levels", caches(str(data.get("device") or torch_device())))  # regimes read them
            state.memo = (key, dict(data))
        data["values"] = vals
        return data, cond

    def in_view(self, data: dict, values: dict[str, Any]) -> dict:
        """``data`` (recorded, or `make warm`'s) drawn in the view controls of ``values``."""
        view = {c.name: values[c.name] for c in self.control_list() if c.view and c.name in values}
        return {**data, "values": {**data.get("values", {}), **view}}

    def _memo_key(self, vals: dict[str, Any]) -> tuple:
        return tuple(sorted((k, repr(v)) for k, v in self._measure_args(vals).items()))

    def adopt(self, data: dict, values: dict[str, Any] | None = None) -> None:
        """``data``, measured at ``values`` in another process here, is the latest measurement."""
        self._state.memo = (self._memo_key(self.validate(values)), dict(data))

    def run(self, values: dict[str, Any] | None = None, progress: Progress | None = None) -> dict:
        """Measure at ``values`` (missing ones take their defaults). A change of view-only
        controls reuses the last measurement. The result carries ``values`` and ``stamp``."""
        return self._measured(values, progress)[0]

    def shown(self) -> dict | None:
        """What this demo's panel shows now: its latest measurement in this process, else (a demo
        that opens warmed) what `make warm` measured; None when neither exists."""
        if self._state.memo is not None:
            return dict(self._state.memo[1])
        return load_warmed(self) if self.opens_warmed else None

    def forget(self) -> None:
        """Back to the declared state: this demo's latest measurement and its cache (``run.cache``)
        dropped, so the next run measures again. Other demos keep theirs (what their panels show,
        which the judgment slide reads, and what they compiled). The compilers' in-memory caches
        are the process's, not a demo's: Dynamo keys compiled code on the code object (a second
        instance of a model class hits the first one's graph), JAX on the function (a new
        ``jax.jit`` of the same function does not trace again), and demos share model classes and
        workloads; so they are reset whole (:func:`demos.engine.protocol.forget_all`), and another
        demo's compiled copy compiles again at its next call. The persistent caches carry over."""
        self._state.memo = None
        self._state.cache.clear()
        forget_all()

    # -- recorded runs -------------------------------------------------------------------
    def reference(self, values: dict[str, Any] | None = None, record=None, seed: bool = True) -> dict | None:
        """This demo's data in the reference record (``results.reference_for``), stamped with the
        record's machine and date; without one, what the seed reported (``seed``); else None."""
        if record is None:
            from demos.engine.results import reference_for

            record = reference_for(self.topic, self.name)
        data = record.sections.get(self.topic, {}).get(self.name) if record is not None else None
        if not isinstance(data, dict):
            return self.seed_reference(values) if seed else None
        if values is not None:
            recorded_values = data.get("values", {})
            if any(k in recorded_values and recorded_values[k] != values.get(k) for k in self.matching):
                return None
        out = dict(data)
        out["recorded"] = True
        from demos.engine.peaks import machine_with_precision

        out["stamp"] = plots.machine_stamp(machine_with_precision(record), data.get("extra", ""), record.created)
        out["machine_short"] = plots.short_machine(record.machine)
        from demos.deck.verified import as_recorded

        return as_recorded(out, record)

    def answering_reference(self, values: dict[str, Any] | None = None) -> tuple[dict | None, str]:
        """The reference a question's mark quotes, and its label: the reference drawn beside
        ``values``, else the record's own measurement of this demo at the sizes it was recorded
        at (said so in the label), else (None, "")."""
        ref, own = self.reference(values), ""
        if ref is None and values is not None:
            ref, own = self.reference(None, seed=False), " (at its own sizes)"
        if ref is None:
            return None, ""
        name = ref.get("machine_short", "recorded")
        return ref, (name if ref.get("seed") else f"{name} record") + own

    def seed_reference(self, values: dict[str, Any] | None = None) -> dict | None:
        """The seed's reported figures for ``values``, stamped as reported (never as measured)."""
        if self.reported is None:
            return None
        vals = self.defaults()
        vals.update(values or {})
        data = self.reported.figures(vals)
        if data is None:
            return None
        out = dict(data)
        out.update(recorded=True, seed=True, machine_short="seed's GPU (reported)",
                   stamp=f"reported by {self.reported.source} — not measured here")
        return out

    def record_into(self, rec, quick: bool = False) -> dict:
        """Measure the recorded configuration, from the declared state as a live cell does, and
        store it in ``rec`` (:meth:`store`). Returns the measurement as measured."""
        self.forget()
        measured = self.run(self.recorded_values(quick))
        self.store(rec, measured)
        return measured

    def store(self, rec, data: dict) -> dict:
        """Store a measurement in ``rec.sections[topic][name]`` as a record holds it: without the
        live stamp (the record's machine and date stamp it when drawn), slimmed, JSON. Returns it."""
        data = dict(data)
        data.pop("stamp", None)
        data.pop("verdicts", None)
        if self.configs.slim is not None:
            data = self.configs.slim(data)
        data = json.loads(json.dumps(data, default=jsonable))
        rec.sections.setdefault(self.topic, {})[self.name] = data
        return data

    def check_claims(self, data: dict) -> dict[str, bool]:
        """The slide's claims on ``data``: {sentence: holds?}, those that do not apply left out."""
        return {v.text: v.status == "holds" for v in self.verdicts(data) if v.status != "does not apply"}

    def verdicts(self, data: dict) -> list:
        """Each claim that speaks of ``data``, with its verdict (:func:`demos.deck.verified.verdicts`)."""
        from demos.deck.verified import verdicts

        return verdicts(self, data)

    def draw(self, data: dict, reference: dict | None = None) -> Any:
        """``figure(data, reference)``, with its footer's verdicts (:func:`demos.deck.verified.footer`),
        stamped where the function did not stamp it (:func:`demos.engine.plots.stamped`)."""
        from demos.deck.verified import footer

        data = {**data, "verdicts": footer(self, data)}
        return plots.stamped(self.figure(data, reference), data, reference)

    # -- warming -------------------------------------------------------------------------
    def warm_up(self) -> None:
        """Compile what the live cell compiles at its default sizes (the persistent caches
        keep it); a demo that opens warmed also keeps each result for a panel opening there."""
        warm = self.configs.warm
        overrides: Sequence[dict] = (warm(self) or ()) if callable(warm) else warm  # a callable warms by itself
        for over in overrides:
            data = self.run(over)
            if self.opens_warmed:
                save_warmed(self, data)
        if self.opens_warmed and {} not in list(overrides):
            save_warmed(self, self.run({}))

    # -- the panel ---------------------------------------------------------------------
    def render(self, values: dict[str, Any], progress: Progress) -> Drawn:
        """What the panel draws: the live measurement beside the recorded one, or, in a
        recorded-only export, the recorded one alone."""
        from demos.deck.ui import recorded_only

        if recorded_only():
            ref = self.reference(values, seed=False)
            if ref is None:
                raise DemoError(f"the recorded run has no {self.key} measurement"
                                + (f" for {', '.join(f'{k}={values.get(k)}' for k in self.matching)}"
                                   if self.matching else ""))
            ref = self.in_view(ref, values)  # the cell's view of the record
            return Drawn(self.draw(ref, None), data=ref)
        t0 = time.perf_counter()
        data, cond = self._measured(values, progress)
        reference = self.reference(values)
        t1 = time.perf_counter()
        fig = self.draw(data, reference)
        # what a redraw spent measuring and building the figure (`ui-bench` reports them apart)
        return Drawn(fig, cond, {"measure_s": t1 - t0, "figure_s": time.perf_counter() - t1}, data)

    def open_panel(self, **overrides: Any):
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
        cls = self.panel.cls or ui.Panel
        return cls(self, specs, initial=load_warmed(self, checked) if self.opens_warmed else None)

    def __call__(self, show: bool = True, **overrides: Any):
        """The live cell: ``eager.timeline()`` shows the panel; ``show=False`` returns it. A cell
        run again measures again, from the declared state (:meth:`forget`, in the panel's turn)."""
        try:
            panel = self.open_panel(**overrides)
            return panel.show() if show else self.forget() or panel
        except DemoError as exc:  # a value typed into the cell, a bad setting: one line, the kernel goes on
            if not show:
                raise
            from demos.deck.ui import show_error_line

            show_error_line(exc)
            return None


def _replace_default(c: Control, value: Any) -> Control:
    c = copy.copy(c)
    c.default = value
    return c


# =======================================================================================
# The result `make warm` measured for a demo that opens warmed
# =======================================================================================
def _warmed_path(demo: Demo, values: dict[str, Any] | None = None) -> Path:
    """``WARMED_DIR/topic.name-device.json`` at the defaults; elsewhere, with a hash of the values."""
    from demos.engine.devices import torch_device
    key = demo._memo_key(demo.validate(values or {}))
    at = "" if key == demo._memo_key(demo.validate({})) else "-" + hashlib.sha1(repr(key).encode()).hexdigest()[:12]
    return WARMED_DIR / f"{demo.key}-{torch_device()}{at}.json"


def _source_hash(demo: Demo) -> str:
    """What a warmed result depends on: the ``demos`` package, torch and JAX, the device and the
    machine's fingerprint (another machine's result is never read, even from a shared folder)."""
    from demos.engine import env

    return package_digest(with_versions=True, extra=f"{torch_device()} {env.FINGERPRINT}")


def save_warmed(demo: Demo, data: dict) -> Path | None:
    path = _warmed_path(demo, data.get("values"))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")  # two processes may store the same result at once
        tmp.write_text(json.dumps({"saved": time.strftime("%Y-%m-%d %H:%M"), "source": _source_hash(demo),
                                   "data": data}, default=jsonable))
        os.replace(tmp, path)
        return path
    except OSError as exc:
        print(f"{demo.key}: could not store the warm result in {path.parent} ({exc.strerror})", file=sys.stderr)
        return None


def load_warmed(demo: Demo, values: dict[str, Any] | None = None) -> dict | None:
    """`make warm`'s result at ``values`` (None: the defaults); None if absent, unreadable or stale."""
    path = _warmed_path(demo, values)
    try:
        saved = json.loads(path.read_text())
        data = saved["data"]
        if not isinstance(data, dict) or saved.get("source") != _source_hash(demo):
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    when, stamp = str(saved.get("saved", "?")), str(data.get("stamp", ""))  # a stamp dated that day: the time
    data["stamp"] = f"{stamp} · by `make warm` {'at ' + when[11:] if stamp.endswith(when[:10]) else 'on ' + when}"
    return data


# =======================================================================================
# The registry
# =======================================================================================
def registered(package: str = "") -> list[Demo]:
    """Every demo declared in ``package`` (all when empty), in declaration order
    (``demos.topics.load()`` orders them by part)."""
    return [d for d in _REGISTRY.values() if d.module.startswith(package)]
