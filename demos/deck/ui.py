"""The live-cell panel every demo gets (ipywidgets 8.1; jupyterlab_rise 0.42 renders it in the slideshow).

A live cell is one call, e.g. ``eager.timeline()``: the demo's declaration
(:class:`demos.deck.demo.Demo`) builds a :class:`Panel` from its controls and its
``render(values, progress)``, which returns a matplotlib Figure (optionally with an HTML
table). The cell shows the panel and returns at once; the measurement takes its turn in the
background (:mod:`demos.deck.turns`: one panel measures at a time). The panel redraws the figure
in place inside an ``Output`` widget whenever a control changes (or on its Run button), shows
progress while slow work runs, and turns any failure into one line in its status bar, leaving
the kernel and the controls usable.

A demo that declares a question (``Demo.ask``, :mod:`demos.deck.asks`) asks it first: the panel
shows the question and its choices while it measures, and reveals the controls and the figure on
a choice (or "Show the answer"), with a mark in the status row: the room's letter, this machine's
answer and the reference record's.

Executed headless (nbclient, exports: DEMOS_STATIC=1, or outside a kernel) the same call
renders the default figure once as a plain PNG output, so HTML and PDF exports carry real
plots; a question is printed first (the export gives it a page of its own) and the answer after.
"""
from __future__ import annotations

import base64
import html
import re
import threading
import time
import traceback
from typing import Any, Callable

from demos.deck.turns import TURNS, WAITING
from demos.engine.env import static_mode
from demos.engine.errors import one_line, release_memory
from demos.engine.figure_slots import FigureSlot, drawing_into
from demos.engine.plots import message_figure, to_png

Progress = Callable[[float, str], None]
# what a panel says after the kernel was interrupted mid-measurement (it is ready again at once)
INTERRUPTED = "interrupted; ready for the next move (press Run or move a control to measure again)"

# In the slideshow an arrow key changes slides even while a slider or dropdown has focus: the
# page's JupyterLab shortcut handler (capture phase, on document) and reveal.js (bubble phase)
# both take it. ipywidgets has no hook for that, so the panel carries this one-line guard: an
# image that fails to load runs its handler once, which (1) on window, in the capture phase,
# marks the focused control of a panel as one JupyterLab's shortcuts leave alone
# (data-lm-suppress-shortcuts) before that handler runs, and (2) stops the key at the panel so
# reveal.js never sees it. The control still gets arrows and Home/End; PageUp/PageDown/Space
# (what presenter clickers send) still change slides.
KEY_GUARD = (
    '<img src="data:," alt="" style="display:none" onerror="'
    "var K=/^(Arrow(Left|Right|Up|Down)|Home|End)$/;"
    "if(!window.__jitdeckKeys){window.__jitdeckKeys=1;window.addEventListener('keydown',function(e){"
    "var t=e.target;if(K.test(e.key)&&t&&t.closest&&t.closest('.jitdeck-panel'))"
    "t.setAttribute('data-lm-suppress-shortcuts','true')},true)}"
    "var i=this,f=function(n){var p=i.closest('.jitdeck-panel');"
    "if(!p){if(n<100)setTimeout(function(){f(n+1)},100);return}"
    "if(p.dataset.keyguard)return;p.dataset.keyguard='1';"
    "p.addEventListener('keydown',function(e){if(K.test(e.key))e.stopPropagation()})};f(0)\">"
)


def _widgets():
    import ipywidgets as widgets  # Jupyter-only: imported lazily

    return widgets


# -- the panel --------------------------------------------------------------------------
class Panel:
    """Controls + status line + progress bar + figure, redrawn in place."""

    # Every measurement takes its turn in the background (:mod:`demos.deck.turns`), so the cell
    # returns at once and the kernel still answers widgets meanwhile. A ``stoppable`` panel has a
    # Stop button beside Run (``stop_measuring``): for panels that measure in a worker process,
    # which a stop can kill. The kernel's own stop button is hidden in the slideshow, and reaches
    # only the main thread, where no measurement runs.
    stoppable = False

    def __init__(self, demo, specs, initial: dict | None = None):
        self.demo = demo
        self.title = demo.title
        self.specs = list(specs)
        self.run_button = demo.button
        self.initial = initial  # the result `make warm` measured, shown at once (a demo that opens warmed)
        self.last_conditions = None  # how the latest measurement ran (None: nothing was measured)
        self.last_split: dict | None = None  # the latest redraw's seconds measuring and building its figure
        self.renders = 0
        self.last_png: bytes | None = None
        self.last_html: str = ""
        self.last_error: str | None = None
        self.last_values: dict[str, Any] = {}
        self.last_data: dict | None = None  # what the latest redraw drew (what the mark reads)
        self.last_seconds: float | None = None
        self.last_encode_s: float | None = None  # PNG encoding of the last redraw
        self.slot = FigureSlot()  # the figure a redraw draws into: its axes, ticks and layout stay between redraws
        self._built = False
        self._controls: dict[str, Any] = {}

    def render_fn(self, values: dict[str, Any], progress: Progress):
        """One redraw: a ``demos.deck.demo.Drawn`` (the figure, how it was measured, its split)."""
        return self.demo.render(values, progress)

    @property
    def controls(self) -> dict[str, Any]:
        """The control widgets by name (built on first use)."""
        self._build()
        return self._controls

    # values --------------------------------------------------------------------------
    def values(self) -> dict[str, Any]:
        if not self._built:
            return {s.name: s.default for s in self.specs}
        return {k: c.value for k, c in self._controls.items()}

    # widgets -------------------------------------------------------------------------
    def _build(self) -> None:
        if self._built:
            return
        w = _widgets()
        self.status = w.HTML(value="")
        self.status.add_class("jitdeck-status")
        self.progress_bar = w.FloatProgress(value=0.0, min=0.0, max=1.0, layout=w.Layout(width="300px",
                                                                                         visibility="hidden"))
        self.out = w.Output(layout=w.Layout(min_height="200px"))
        self.table = w.HTML(value="")
        self._controls = {spec.name: spec.widget() for spec in self.specs}
        row = list(self._controls.values())
        if self.run_button:
            self.button = w.Button(description="Run", button_style="primary", icon="play",
                                   layout=w.Layout(width="110px"))
            self.button.on_click(lambda _b: self.press_run())
            row.append(self.button)
            if self.stoppable:  # beside Run, on its row: the panel is no taller for it
                self.stop_button = w.Button(description="Stop", icon="stop", disabled=True,
                                            tooltip="stop this Run (the kernel stays)", layout=w.Layout(width="95px"))
                self.stop_button.on_click(lambda _b: self.stop())
                row.append(self.stop_button)
            for spec in self.specs:  # a view-only control redraws what was measured, without measuring
                if spec.view:
                    self._controls[spec.name].observe(lambda _change: self._redraw_view(), names="value")
        else:
            for c in self._controls.values():
                c.observe(lambda _change: self.request(), names="value")
        self.controls_row = w.HBox(row, layout=w.Layout(flex_flow="row wrap", align_items="center"))
        keys = w.HTML(value=KEY_GUARD, layout=w.Layout(width="0px", height="0px", overflow="hidden"))
        # the mark of a question shares the status row: a revealed panel is no taller than one that never asked
        self.mark = w.HTML(value="", layout=w.Layout(margin="0 14px 0 0"))
        self.mark.add_class("jitdeck-markbox")
        status_row = w.HBox([self.progress_bar, self.mark, self.status], layout=w.Layout(align_items="center"))
        status_row.add_class("jitdeck-status-row")  # one line (the theme): the mark whole, the status cut if long
        self.controls_row.add_class("jitdeck-controls")
        # the answers for the lecturer's notes window (demos/deck/notes.py reads it through the deck's
        # lab extension): never shown on the slide, so the room votes before it sees an answer
        self.lectern = w.HTML(value="", layout=w.Layout(display="none"))
        self.lectern.add_class("jitdeck-lectern")
        parts = [self.controls_row, status_row, self.out, self.table, keys, self.lectern]
        if self.ask is not None:
            parts.insert(0, self._build_ask(w))
        self.widget = w.VBox(parts, layout=w.Layout(width="100%"))
        self.widget.add_class("jitdeck-panel")
        self._built = True

    # the question first ---------------------------------------------------------------
    @property
    def ask(self):
        """The question this panel asks first (None: it shows its figure at once)."""
        ask = getattr(self.demo, "ask", None)
        if ask is None or not ask.asks({s.name: s.default for s in self.specs}):
            return None
        return ask

    def _build_ask(self, w):
        """The question and its choices; the controls, the figure and its table stay hidden until
        a choice (or the reveal button) is pressed."""
        ask = self.ask
        self.revealed = False
        self.chosen: int | None = None
        self.choice_buttons = []
        for i, text in enumerate(ask.lettered()):
            b = w.Button(description=text, tooltip=text, layout=w.Layout(width="auto", max_width="100%"))
            b.add_class("jitdeck-choice")
            b.on_click(lambda _b, i=i: self.reveal(i))
            self.choice_buttons.append(b)
        self.reveal_button = w.Button(description="Show the answer", icon="eye", layout=w.Layout(width="auto"))
        self.reveal_button.add_class("jitdeck-reveal")
        self.reveal_button.on_click(lambda _b: self.reveal(None))
        question = w.HTML(value=f"<b class='jitdeck-question'>{html.escape(ask.question)}</b>")
        self.ask_box = w.VBox([question, w.HBox(self.choice_buttons + [self.reveal_button],
                                                layout=w.Layout(flex_flow="row wrap"))])
        self.ask_box.add_class("jitdeck-ask")
        for part in (self.controls_row, self.out, self.table):
            part.layout.display = "none"
        return self.ask_box

    def reveal(self, chosen: int | None = None) -> None:
        """Show the figure (the room chose ``chosen``, or asked to see it) and mark the choice."""
        self._build()
        self.chosen, self.revealed = chosen, True
        self.ask_box.layout.display = "none"
        for part in (self.controls_row, self.out, self.table):
            part.layout.display = None
        self.idle_bar()
        self._mark()

    def _mark(self) -> None:
        """The mark under a revealed figure; the answers for the notes window (hidden) once measured."""
        if self.ask is None:
            return
        from demos.deck.asks import answer_line, mark_html

        here, record, record_label = self.answers()
        if here is not None:
            line = answer_line(self.ask, here, self._here_label(), record, record_label)
            self.lectern.value = f"<span data-key='{html.escape(self.demo.key)}'>{html.escape(line)}</span>"
        if getattr(self, "revealed", False):
            self.mark.value = mark_html(self.ask, self.chosen, here, self._here_label(), record, record_label)

    def _here_label(self) -> str:
        from demos.engine.plots import this_machine

        return this_machine()

    def answers(self) -> tuple[dict | None, dict | None, str]:
        """(what this panel shows now, the reference's data, its label) for the mark."""
        here = self.last_data
        try:
            if recorded_only():  # the figure drawn is the record's: its answer is the one to give
                return here, here, "the " + self.demo.answering_reference(None)[1]
            ref, label = self.demo.answering_reference(self.last_values or self.values())
        except Exception:  # a bad record says nothing here: the figure says it
            return here, None, ""
        return here, ref, label

    def idle_bar(self) -> None:
        """Hide the progress bar between measurements: keeping its place (no jump when the next
        one starts), except in a revealed panel, whose status row also holds the mark."""
        self.progress_bar.layout.visibility = "hidden"
        if getattr(self, "revealed", False):
            self.progress_bar.layout.display = "none"

    def _redraw_view(self) -> None:
        if self.renders or self.running:  # nothing drawn nor measuring yet: the view applies to the first Run
            self.request()

    # turns, Run and Stop ---------------------------------------------------------------
    def request(self, remeasure: bool = False, forget: bool = False, work: Callable[[], None] | None = None) -> None:
        """Queue a redraw (``remeasure``: the Run button; ``forget``: the cell, back to the declared
        state first), or other ``work`` of this panel, for its turn; returns at once."""
        kind = "work" if work is not None else "run" if remeasure or forget else "update"
        TURNS.take(self, lambda: self._turn(work or (lambda: self.update(remeasure=remeasure, forget=forget))), kind)

    def _turn(self, work: Callable[[], None]) -> None:
        """The panel's turn: its Run button off (and Stop live) while it measures."""
        if self.stoppable:
            self.forget_stop()  # a Stop pressed outside a Run must not end this one
        busy = self._built and self.run_button
        if busy:
            self.button.disabled = True
            if self.stoppable:
                self.stop_button.disabled = False
        try:
            work()
        finally:
            if self.stoppable:
                self.forget_stop()  # a Stop that came as it ended ends nothing later
            if busy:
                self.button.disabled = False
                if self.stoppable:
                    self.stop_button.disabled = True

    def waiting(self) -> None:
        """Queued behind another panel's measurement."""
        if self._built:
            self.status.value = f"<span class='jitdeck-busy'>◷ {WAITING}</span>"

    def press_run(self) -> None:
        """The Run button: measure again, in the panel's turn (returns at once); a second Run
        while one is waiting or under way is ignored."""
        if TURNS.busy(self, "run"):
            return
        if self._built:  # at once: the click is answered before the turn comes
            self.button.disabled = True
            if self.stoppable:
                self.stop_button.disabled = False
        self.request(remeasure=True)

    @property
    def running(self) -> bool:
        """A turn of this panel is under way or waiting."""
        return TURNS.busy(self)

    def join(self, timeout_s: float | None = None) -> bool:
        """Wait for the panel's turns (a script or a test driving the panel); False on the timeout."""
        return TURNS.wait(self, timeout_s)

    def stop(self) -> None:
        """The Stop button: end the Run under way (or drop one still waiting); the panel says so in
        one line, and the next Run measures."""
        dropped = TURNS.drop(self)
        if TURNS.measuring(self):
            self.status.value = "<span class='jitdeck-busy'>◷ stopping…</span>"
            self.stop_measuring()
        elif dropped:
            self.status.value = "<span class='jitdeck-ok' style='color:#555'>stopped before its turn</span>"

    def forget_stop(self) -> None:
        """A ``stoppable`` panel's Run starts or ends (or the cell shows it): a Stop pressed outside
        a Run must not end the next measurement."""

    def stop_measuring(self) -> None:
        """End the measurement under way, from the kernel's main thread (a ``stoppable`` panel)."""

    def progress(self, fraction: float, message: str = "") -> None:
        """Report progress of slow work (compiles, sweeps) while it runs."""
        if not self._built:
            return
        self.progress_bar.layout.visibility = "visible"
        self.progress_bar.layout.display = None
        self.progress_bar.value = max(0.0, min(1.0, float(fraction)))
        if message:
            self.status.value = f"<span class='jitdeck-busy'>◷ {html.escape(message)}</span>"

    # rendering -----------------------------------------------------------------------
    def compute(self) -> Any:
        """Run the render function with the current values. Returns (figure, html)."""
        values = self.values()
        self.last_values = values
        self.last_conditions = None
        self.last_split = None
        t0 = time.perf_counter()
        try:
            result = None
            if self.initial is not None and self.renders == 0 and not recorded_only():
                try:  # drawn in the cell's view (``view="kernels"``), not the one it was measured in
                    initial = self.demo.in_view(self.initial, values)
                    with drawing_into(self.slot):
                        result = self.demo.draw(initial, self.demo.reference(values))
                    self.last_data = initial
                    self.demo.adopt(self.initial, values)  # a view control redraws it, Run measures again
                except Exception:  # a warm result this code cannot draw: measure instead
                    self.initial = None
            if result is None:
                with drawing_into(self.slot):
                    drawn = self.render_fn(values, self.progress)
                result, self.last_conditions, self.last_split = drawn.result, drawn.conditions, drawn.split
                self.last_data = drawn.data
            self.last_error = None
        except Exception as exc:  # one line, kernel survives
            release_memory()
            self.last_error = one_line(exc)
            self._log_traceback()
            result = None
        except KeyboardInterrupt:  # the kernel's interrupt button mid-measurement
            release_memory()
            try:
                self.demo.forget()  # half a compile or a sweep is no state to measure from
            except Exception:  # pragma: no cover - forgetting is best effort here
                pass
            self.last_error = INTERRUPTED
            result = None
        self.last_seconds = time.perf_counter() - t0
        if result is None:
            return None, ""
        if isinstance(result, tuple):
            fig, table = result[0], result[1] if len(result) > 1 else ""
        else:
            fig, table = result, ""
        return fig, table or ""

    def _log_traceback(self) -> None:
        from demos.engine.settings import SettingError, get

        try:
            debug = get("DEMOS_DEBUG")
        except SettingError:
            debug = False
        if debug:
            traceback.print_exc()

    def update(self, remeasure: bool = False, forget: bool = False) -> None:
        """Recompute and redraw in place, now (a turn's work); ``remeasure`` (the Run button)
        measures again even where nothing changed, from the declared state, as ``forget`` does."""
        if remeasure or forget:
            self.demo.forget()
        if remeasure:  # Run measures: never the warm result, even before the panel's first redraw
            self.initial = None
        self._build()
        self.progress(0.0, "measuring…")
        self.idle_bar()
        fig, table = self.compute()
        if fig is not None:
            t0 = time.perf_counter()
            png = to_png(fig)
            self.last_encode_s = time.perf_counter() - t0
            self.last_png = png
            self.last_html = table
            self.renders += 1
            self._show_png(png)
            self.table.value = table
        self.idle_bar()
        self._mark()  # before the status: a status that says "done" comes with its mark
        self.status.value = self.status_line()
        self.status.tooltip = html.unescape(re.sub(r"<[^>]+>", "", self.status.value))  # a line cut short, whole

    def _show_png(self, png: bytes) -> None:
        """The figure in the panel's output area. A background Run sets the Output widget's
        ``outputs`` itself, as ipywidgets advises for threads: ``with out:`` captures by the request
        the kernel's main thread is answering, which is not this Run's."""
        if threading.current_thread() is not threading.main_thread():
            self.out.outputs = ({"output_type": "display_data", "metadata": {},
                                 "data": {"image/png": base64.b64encode(png).decode("ascii"), "text/plain": "<figure>"}},)
            return
        from IPython.display import clear_output, display

        with self.out:
            clear_output(wait=True)
            display(_png_display(png))

    def status_line(self) -> str:
        """The status after a redraw: the error, or how long it took — and, when other processes
        took the cores while it measured, one line saying the timings may be inflated."""
        if self.last_error:
            return f"<span class='jitdeck-error' style='color:#b00020'>⚠ {html.escape(self.last_error)}</span>"
        cond = self.last_conditions  # None when nothing was measured (a view-only move)
        if cond is not None and not cond.reliable:
            return f"<span class='jitdeck-busy-cores' style='color:#a15c00'>⚠ {html.escape(cond.warning())}</span>"
        where = f" · {cond.threads} of {cond.cores} threads ({cond.policy})" if cond is not None and cond.policy != "all cores free" else ""
        return f"<span class='jitdeck-ok' style='color:#555'>done in {self.last_seconds:.2f} s{html.escape(where)}</span>"

    def render_static(self) -> None:
        """Headless: the default figure as a plain PNG output (exports carry real plots)."""
        from IPython.display import HTML, Markdown, display

        from demos.deck.asks import QUESTION_META, answer_line

        if self.ask is not None:  # the export lifts it onto its own page, before the answer
            display(Markdown(self.ask.markdown()), metadata={QUESTION_META: True})
        fig, table = self.compute()
        if fig is None:
            fig = message_figure(self.last_error or "nothing to show", self.title)
        png = to_png(fig)
        self.last_png = png
        self.renders += 1
        display(_png_display(png))
        if table:
            display(HTML(table))
        if self.last_error:
            print(f"⚠ {self.last_error}")
        elif self.ask is not None:
            here, record, label = self.answers()
            line = (f"Answer — {label}: {self.ask.said(record)}" if recorded_only() and record is not None
                    else answer_line(self.ask, here, self._here_label(), record, label))
            display(HTML(f"<p class='jitdeck-answer'>{html.escape(line)}</p>"))

    def opened_warm(self) -> None:
        """The live panel opened on `make warm`'s result: a subclass gets the next Run ready here."""

    def show(self):
        """The cell: the panel at once, its measurement queued for its turn (headless: the figure)."""
        if static_mode():
            self.demo.forget()
            self.render_static()
            return None
        from IPython.display import display

        self._build()
        self.progress(0.0, "measuring…")
        display(self.widget)
        self.request(work=self._first)
        return None

    def _first(self) -> None:
        """The cell's turn: from the declared state, the warm result or a measurement."""
        self.update(forget=True)
        if self.initial is not None and not self.last_error:
            then = "press Run to measure it again" if self.run_button else "move a control to measure live"
            self.status.value = ("<span class='jitdeck-ok' style='color:#555'>the result `make warm` measured; "
                                 f"{then}</span>")
            self.opened_warm()

    def _ipython_display_(self):  # pragma: no cover - exercised in notebooks
        self.show()


def _png_display(png: bytes):
    from IPython.display import Image

    return Image(data=png, format="png")


def show_error_line(exc: BaseException, context: str = "") -> None:
    """For non-panel cells: print one line instead of a traceback."""
    print(f"⚠ {one_line(exc, context)}")


def recorded_only() -> bool:
    """Headless export asked to draw a recorded run (``make pdf RESULTS=…``) instead of measuring."""
    from demos.engine.settings import raw

    return static_mode() and raw("DEMOS_RESULTS") is not None
