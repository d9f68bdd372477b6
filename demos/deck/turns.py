"""One measurement at a time, in the background: the order the live panels measure in.

A live cell returns at once. It shows its panel and queues the panel's measurement here; one
thread per kernel measures the queued panels in turn. So:

- a kernel client with no widget front end (``jupyter execute``, nbclient, VS Code, a grader)
  gets each cell's reply in a moment, and never waits on a measurement;
- Run All in JupyterLab measures the panels one after another, not all at once (on 2 cores a
  second measurement would time the first one's threads), and a panel whose turn has not come
  says "waiting for the panel above";
- a control moved twice before its panel's turn measures once, with the latest values;
- the kernel's main thread stays free to answer the widgets (a Stop, a choice) meanwhile.
"""
from __future__ import annotations

import threading
import traceback
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable

WAITING = "waiting for the panel above"
# A live cell's execution returns in well under this, with or without a front end (it only shows its
# panel and queues a turn): a client's cell timeout this long is never met (tests/test_live_cells.py)
NEVER_WAITS_S = 30.0


@dataclass(eq=False)
class Turn:
    """One queued piece of a panel's work; ``kind`` says which turns a newer one replaces."""

    panel: Any
    work: Callable[[], None]
    kind: str
    done: threading.Event = field(default_factory=threading.Event)


class Turns:
    """The queue and its one measuring thread (started on the first turn, a daemon)."""

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._waiting: list[Turn] = []
        self._active: Turn | None = None
        self._thread: threading.Thread | None = None
        self._seen: list[weakref.ref] = []  # every panel that took a turn, in order (``panels``)

    def take(self, panel: Any, work: Callable[[], None], kind: str = "update") -> Turn:
        """Queue ``work`` for ``panel``: a turn of the same kind it had waiting is replaced (it
        measures once, with the values it has when its turn comes)."""
        frameworks_imported()
        turn = Turn(panel, work, kind)
        with self._cv:
            for old in [t for t in self._waiting if t.panel is panel and t.kind == kind]:
                self._waiting.remove(old)
                old.done.set()
            if not any(ref() is panel for ref in self._seen):
                self._seen.append(weakref.ref(panel))
            ahead = self._active is not None or bool(self._waiting)
            self._waiting.append(turn)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._serve, name="jitdeck-turns", daemon=True)
                self._thread.start()
            self._cv.notify_all()
        if ahead:
            panel.waiting()
        return turn

    @property
    def panels(self) -> list[Any]:
        """The panels that took a turn and still exist, in order (what a script reports)."""
        with self._cv:
            return [p for p in (ref() for ref in self._seen) if p is not None]

    def drop(self, panel: Any) -> int:
        """Forget the panel's waiting turns (its Stop); returns how many."""
        with self._cv:
            mine = [t for t in self._waiting if t.panel is panel]
            for t in mine:
                self._waiting.remove(t)
                t.done.set()
            self._cv.notify_all()
        return len(mine)

    def busy(self, panel: Any, kind: str | None = None) -> bool:
        """The panel has a turn (of ``kind``, when given) under way or waiting."""
        with self._cv:
            return any(t.panel is panel and kind in (None, t.kind) for t in [self._active, *self._waiting] if t)

    def measuring(self, panel: Any) -> bool:
        """The panel's turn is the one under way."""
        with self._cv:
            return self._active is not None and self._active.panel is panel

    def wait(self, panel: Any | None = None, timeout_s: float | None = None) -> bool:
        """Wait until the panel (every panel, when None) has no turn left; False on the timeout."""
        import time

        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._cv:
            while (self._active is not None and (panel is None or self._active.panel is panel)) or any(
                    panel is None or t.panel is panel for t in self._waiting):
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cv.wait(left)
        return True

    def _serve(self) -> None:
        while True:
            with self._cv:
                while not self._waiting:
                    self._cv.wait()
                turn = self._active = self._waiting.pop(0)
            try:
                turn.work()
            except BaseException:  # a panel turns its own failures into one line; this is a last guard
                traceback.print_exc()
            finally:
                with self._cv:
                    self._active = None
                    turn.done.set()
                    self._cv.notify_all()


_IMPORTED: list[bool] = []


def frameworks_imported() -> None:
    """Import torch (with Dynamo and Inductor) and JAX here, in the caller's thread (the kernel's
    main thread, before the first turn). Two threads importing the same package at once can meet
    in its circular imports, and Python then hands one of them the half-built module ("partially
    initialized module 'torch' has no attribute ..."): seen when a cell's panel set-up imported
    torch while the panel above measured. Once imported, the turns import only what they alone use.
    About 3 s on a 2-core CPU, once per kernel; none where ``make present``'s preload ran."""
    if _IMPORTED:
        return
    _IMPORTED.append(True)
    from demos.engine.devices import jax_or_none
    from demos.engine.hardware import torch_or_none

    torch = torch_or_none()
    if torch is not None:
        import importlib

        for name in ("torch._dynamo", "torch._inductor.compile_fx"):
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - a broken compiler is a demo's one line later
                pass
    jax_or_none()


TURNS = Turns()  # one per kernel: every live panel measures through it
