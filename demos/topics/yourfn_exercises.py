"""Part 7's exercises: a function, a goal the inspector can measure, and a hidden solution.

The student edits the code and presses Check; :func:`grade` reads the inspector's report
(:func:`demos.introspection.inspector.inspect_source`) against the goal and says what is still
wrong, with the line. Each goal is a list of :class:`Goal` s, each one sentence and one reading
of the report, so the sentence the panel shows and the check are declared together.
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from typing import Any, Callable

def _code(text: str, imports: str = "import torch") -> str:
    """An exercise's code: one import line (the code box shows two lines before it scrolls), then the function."""
    return imports + "\n" + textwrap.dedent(text)


@dataclass(frozen=True)
class Goal:
    """One thing the code must achieve: ``text`` for the student, ``problems(report)`` the ways
    the report falls short of it (empty: achieved)."""

    text: str
    problems: Callable[[dict[str, Any]], list[str]]


def _breaks_at(t: dict[str, Any]) -> list[str]:
    return [f"line {b.get('line', '?')}: graph break at `{(b.get('source') or '').strip()[:48]}` — "
            f"{(b.get('plain') or b.get('reason') or '')[:70]}" for b in t.get("break_list") or []]


def graphs(n: int = 1) -> Goal:
    def problems(r: dict[str, Any]) -> list[str]:
        t = r.get("torch") or {}
        if t.get("graphs") == n and not t.get("breaks"):
            return []
        return [f"{t.get('graphs')} graphs, {t.get('breaks')} break(s)"] + _breaks_at(t)
    return Goal(f"torch.compile captures it as {n} graph, with no graph break", problems)


def kernels(n: int = 1) -> Goal:
    def problems(r: dict[str, Any]) -> list[str]:
        k = (r.get("torch") or {}).get("kernels")
        return [] if k == n else [f"{k} kernels generated"] + _breaks_at(r.get("torch") or {})
    return Goal(f"torch.compile generates {n} kernel for it", problems)


def compiles_at_most(n: int) -> Goal:
    def problems(r: dict[str, Any]) -> list[str]:
        sw = (r.get("sweep") or {}).get("torch") or {}
        c = sw.get("compiles")
        if c is not None and c <= n:
            return []
        return [f"{c} compiles over {len(sw.get('calls', []))} lengths"
                + (" (the recompile limit stopped it)" if c is not None and c >= sw.get("limit", 1e9) else "")]
    return Goal(f"at most {n} compiles while the length of the first dimension changes", problems)


def leaves_input() -> Goal:
    def problems(r: dict[str, Any]) -> list[str]:
        return ["it changes the caller's tensor in place"] if (r.get("torch") or {}).get("mutates") else []
    return Goal("the caller's tensor is unchanged after the call", problems)


def jax_traces() -> Goal:
    def problems(r: dict[str, Any]) -> list[str]:
        j = r.get("jax") or {}
        if not j:
            return ["JAX did not run it (is it written with jax.numpy?)"]
        return [j["error"][:130]] if j.get("error_type") else []
    return Goal("jax.jit traces and compiles it", problems)


@dataclass(frozen=True)
class Exercise:
    title: str
    start: str
    solution: str
    goals: tuple[Goal, ...]
    hint: str
    shape: str = "256x1024"
    sweep: bool = False  # the goal reads the sweep over the first dimension's lengths
    jax: bool = False  # the goal reads the JAX half
    extra: dict = field(default_factory=dict)


EXERCISES: dict[str, Exercise] = {
    "normalise": Exercise(
        "normalise by the largest value",
        _code("""\
            def normalise(x):
                m = x.abs().max().item()
                return torch.tanh(x / m) * m
            """),
        _code("""\
            def normalise(x):
                m = x.abs().max()  # a tensor: stays in the graph
                return torch.tanh(x / m) * m
            """),
        (graphs(1),), "a Python number leaves the graph; a 0-d tensor does not"),
    "logging": Exercise(
        "a logging line",
        _code("""\
            def step(x):
                y = torch.relu(x) * 3
                print("mean:", y.mean().item())
                return y.sin()
            """),
        _code("""\
            def step(x):
                y = torch.relu(x) * 3  # log the result after the call
                return y.sin()
            """),
        (graphs(1),), "print needs the value now; the compiled graph cannot stop for it"),
    "gate": Exercise(
        "a branch on the data",
        _code("""\
            def gate(x):
                if x.max() > 1:
                    x = x / x.max()
                return torch.sigmoid(x)
            """),
        _code("""\
            def gate(x):
                m = x.max()
                return torch.sigmoid(torch.where(m > 1, x / m, x))
            """),
        (graphs(1),), "compute both sides and choose with torch.where"),
    "roundtrip": Exercise(
        "through Python and back",
        _code("""\
            def act(x):
                y = torch.sin(x) * 2
                y = torch.tensor(y.tolist())  # via Python lists
                return torch.relu(y) + 1
            """),
        _code("""\
            def act(x):
                y = torch.sin(x) * 2
                return torch.relu(y) + 1
            """),
        (kernels(1),), "pointwise ops fuse when nothing leaves the graph between them",
        shape="16x64"),  # a list per call: Dynamo traces each element, so keep it short
    "inplace": Exercise(
        "centring in place",
        _code("""\
            def center(x):
                x -= x.mean()
                return torch.exp(x)
            """),
        _code("""\
            def center(x):
                y = x - x.mean()  # a new tensor
                return torch.exp(y)
            """),
        (graphs(1), leaves_input()), "write the result to a new tensor"),
    "lengths": Exercise(
        "a loop over the steps",
        _code("""\
            def running(x):  # x: (steps, features)
                h = torch.zeros_like(x[0])
                for t in range(x.shape[0]):
                    h = h * 0.9 + x[t]
                return h
            """),
        _code("""\
            def running(x):  # the same sum, weights 0.9^(n-1-t)
                n = x.shape[0]
                w = 0.9 ** torch.arange(n - 1, -1, -1, dtype=x.dtype, device=x.device)
                return (w[:, None] * x).sum(dim=0)
            """),
        (compiles_at_most(2),), "a Python loop over a length is unrolled once per length; "
        "one op over all steps is not", shape="16x1024", sweep=True),
    "jaxif": Exercise(
        "a Python if under jax.jit",
        _code("""\
            def clamp(x):
                if jnp.max(x) > 1:
                    return x / jnp.max(x)
                return x
            """, "import jax.numpy as jnp"),
        _code("""\
            def clamp(x):
                m = jnp.max(x)
                return jnp.where(m > 1, x / m, x)
            """, "import jax.numpy as jnp"),
        (jax_traces(),), "a traced value has no truth value; jnp.where or jax.lax.cond", jax=True),
}


def grade(exercise: Exercise, report: dict[str, Any]) -> list[dict[str, Any]]:
    """Each goal of ``exercise`` with what the report says is still wrong ([] when met)."""
    return [{"goal": g.text, "problems": g.problems(report)} for g in exercise.goals]
