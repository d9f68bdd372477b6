"""Part 5's live recompilation panel (deck-level UI): a shape slider that calls the step once per
move on the mode's :class:`demos.topics.recompilation_session.Session`, kept until Reset, plus
Auto-sweep and Reset buttons. :mod:`demos.topics.recompilation` declares it as the panel of
``recompile_live``."""
from __future__ import annotations

import html
import time
from typing import Any

from demos.deck.demo import Drawn
from demos.deck.ui import Panel, recorded_only
from demos.engine import plots
from demos.engine.errors import one_line
from demos.engine.measurement import Progress, Run
from demos.topics.recompilation_figures import figure_live
from demos.topics.recompilation_session import Session, check_mode, sweep_lengths


class LivePanel(Panel):
    """The recompilation panel: a shape slider that calls the step once per move (on the
    mode's session, kept until Reset), plus Auto-sweep (a fresh session walks the sweep
    lengths, redrawing as calls happen) and Reset. Headless, it draws a full sweep."""

    def __init__(self, demo, specs, initial: dict | None = None):
        super().__init__(demo, specs, initial)
        self.sessions: dict[str, Session] = {}
        self.lengths = sweep_lengths()
        self._last_S: int | None = None
        self._full_sweep = False

    def session(self, mode: str) -> Session:
        """The mode's session (fresh on first use and after Reset)."""
        if mode not in self.sessions:
            self.sessions[mode] = Session(mode)
        return self.sessions[mode]

    def _call(self, s: Session, S: int) -> dict[str, Any]:
        run = Run()  # the call needs no memory but the session's
        with run.declared() as cond:  # one call of a kept session: threads chosen, conditions read
            data = self.demo.measure(run, mode=s.mode, S=S, session=s)
        self.last_conditions = cond
        data["stamp"] = plots.live_stamp(data["extra"], cond.stamp())
        return data

    def _figure(self, data: dict[str, Any]):
        data.setdefault("stamp", plots.live_stamp(data["extra"]))
        return figure_live(data, self.demo.reference(self.values()))

    def render_fn(self, values: dict[str, Any], progress: Progress) -> Drawn:
        if self._full_sweep or recorded_only():
            return self.demo.render(values, progress)
        s = self.session(check_mode(values["mode"]))
        S = values["S"]
        # one call per slider move (a mode switch shows that mode's session as it stands)
        called = S != self._last_S or not s.events
        data = self._call(s, S) if called else s.to_dict()
        self._last_S = S
        return Drawn(self._figure(data), self.last_conditions if called else None, None, data)

    def render_static(self) -> None:
        """Headless: the default mode's full sweep (or the recorded one), not a single call."""
        self._full_sweep = True
        try:
            super().render_static()
        finally:
            self._full_sweep = False

    def reset(self) -> None:
        self.sessions.clear()
        self._last_S = None
        if self._built:
            self.update()

    def sweep(self, lengths: list[int] | None = None, redraw_s: float = 0.5) -> Session:
        """Auto-sweep: call the current mode once per length on a fresh session, redrawing the
        timeline as calls happen (at most every ``redraw_s`` seconds, and at the end)."""
        mode = self.values()["mode"]
        self.sessions.pop(mode, None)
        lengths = lengths or self.lengths
        self.last_error = None
        last_draw = time.perf_counter()
        s = None
        try:
            s = self.session(mode)
            for k, S in enumerate(lengths):
                data = self._call(s, S)
                self.progress((k + 1) / len(lengths), f"call {k + 1}/{len(lengths)}: S={S} · {s.compiles} compiles")
                if time.perf_counter() - last_draw >= redraw_s or k == len(lengths) - 1:
                    self._draw(self._figure(data))
                    self.last_data = data
                    last_draw = time.perf_counter()
        except Exception as exc:  # one line, the panel survives
            self.last_error = one_line(exc)
        if self._built:
            self.idle_bar()
            self.status.value = (f"<span style='color:#b00020'>⚠ {html.escape(self.last_error)}</span>"
                                 if self.last_error else f"sweep done: {s.compiles} compiles")
        self._last_S = lengths[-1] if lengths else None
        self._mark()
        return s

    def _draw(self, fig) -> None:
        """Redraw in place mid-sweep (the base panel redraws only when a measurement ends)."""
        self.last_png = plots.to_png(fig)
        self.renders += 1
        if self._built:
            self._show_png(self.last_png)

    def _build(self) -> None:
        if self._built:
            return
        super()._build()
        import ipywidgets as w

        self.sweep_button = w.Button(description="Auto-sweep", button_style="warning", icon="forward",
                                     layout=w.Layout(width="150px"))
        self.sweep_button.on_click(lambda _b: self.request(work=self.sweep))
        self.reset_button = w.Button(description="Reset", icon="refresh", layout=w.Layout(width="100px"))
        self.reset_button.on_click(lambda _b: self.request(work=self.reset))
        row = self.controls_row
        row.children = tuple(row.children) + (self.sweep_button, self.reset_button)
