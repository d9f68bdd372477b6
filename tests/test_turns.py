"""The live panels' turns (demos.deck.turns): one measurement at a time, in the order asked; a
panel moved twice before its turn measures once, with its latest values; a panel behind another
is told it waits; Stop drops a turn not yet begun; a panel gone is forgotten."""
from __future__ import annotations

import gc
import threading

from demos.deck.turns import Turns


class Probe:
    def __init__(self, name: str):
        self.name, self.told = name, 0

    def waiting(self) -> None:
        self.told += 1


def test_turns_run_one_at_a_time_in_order_and_a_newer_move_replaces_a_waiting_one():
    turns, done, gate = Turns(), [], threading.Event()
    a, b = Probe("a"), Probe("b")
    started = threading.Event()

    def first():
        started.set()
        gate.wait(5)
        done.append("a1")

    turns.take(a, first)
    assert started.wait(5)
    turns.take(b, lambda: done.append("b1"))
    turns.take(b, lambda: done.append("b2"))  # moved again before its turn: b1 never runs
    turns.take(a, lambda: done.append("a2"), kind="run")  # another kind: queued, not replacing
    assert turns.busy(b) and turns.busy(a, "run") and turns.measuring(a) and not turns.measuring(b)
    assert b.told == 2 and a.told == 1  # each was told it waits for the panel above
    gate.set()
    assert turns.wait(timeout_s=10)
    assert done == ["a1", "b2", "a2"] and not turns.busy(a) and not turns.busy(b)


def test_stop_drops_a_turn_not_begun_and_a_failing_turn_leaves_the_queue_serving(capsys):
    turns, done, gate = Turns(), [], threading.Event()
    a, b = Probe("a"), Probe("b")
    turns.take(a, lambda: (gate.wait(5), 1 / 0))  # a turn that raises: printed, the next still runs
    turns.take(b, lambda: done.append("b"))
    assert turns.drop(b) == 1 and not turns.busy(b)
    turns.take(b, lambda: done.append("b again"))
    gate.set()
    assert turns.wait(b, timeout_s=10) and done == ["b again"]
    assert "ZeroDivisionError" in capsys.readouterr().err


def test_the_panels_that_took_a_turn_are_listed_while_they_exist():
    turns = Turns()
    a, b = Probe("a"), Probe("b")
    for p in (a, b, a):
        turns.take(p, lambda: None)
    assert turns.wait(timeout_s=10) and [p.name for p in turns.panels] == ["a", "b"]
    del b
    gc.collect()
    assert [p.name for p in turns.panels] == ["a"]
