"""Part 7's exercises (demos.topics.yourfn_exercises): every goal is met by the solution and missed
by the starting code, as the inspector measures them. The panel drawing and redrawing is
tests/test_demos.py's."""
from __future__ import annotations

import pytest

from demos.introspection.inspector import inspect_source
from demos.topics import yourfn
from demos.topics.yourfn_exercises import EXERCISES, grade


def _graded(key: str, code: str) -> list[dict]:
    ex = EXERCISES[key]
    report = inspect_source(code, shape=ex.shape, jax=ex.jax, sweep_dim=0 if ex.sweep else None)
    return grade(ex, report)


def test_there_are_at_least_six_exercises_each_with_a_goal_and_a_hidden_solution():
    assert len(EXERCISES) >= 6
    for key, ex in EXERCISES.items():
        assert ex.goals and ex.solution != ex.start and ex.hint, key
    kinds = {g.text.split(" ")[0] for ex in EXERCISES.values() for g in ex.goals}
    assert len(kinds) >= 4, kinds  # graphs, kernels, compiles, the caller's tensor, jax.jit


@pytest.mark.parametrize("key", list(EXERCISES))
def test_the_solution_passes_and_the_starting_code_fails(key):
    start = _graded(key, EXERCISES[key].start)
    assert any(g["problems"] for g in start), start
    solved = _graded(key, EXERCISES[key].solution)
    assert all(not g["problems"] for g in solved), solved


def test_a_graph_break_is_graded_with_its_line():
    start = _graded("normalise", EXERCISES["normalise"].start)
    problems = start[0]["problems"]
    assert problems[0] == "2 graphs, 1 break(s)"
    assert problems[1].startswith("line 3: graph break at `m = x.abs().max().item()`")


def test_the_panel_fills_the_code_box_with_the_chosen_exercise_and_hides_the_solution():
    v = yourfn.exercise.validate({"exercise": "gate"})
    assert v["code"] == EXERCISES["gate"].start and v["solution"] == "hidden"
    v = yourfn.exercise.validate({"exercise": "gate", "code": "def f(x):\n    return x\n"})
    assert v["code"] == "def f(x):\n    return x\n"  # what the student typed is graded, not replaced
