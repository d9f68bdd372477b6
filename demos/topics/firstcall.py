"""Part 1, the first call — what a call costs before it reaches steady state.

The eager timeline and the regimes sweep show steady state: every call after the first few.
The first calls cost more, and each extra cost has a source that pays once. One live demo,
``costs()``, measures them in a new Python process (the only state in which a first call is a
first call; :func:`demos.introspection.coldcompile.first_calls`), each on its own clock:

- ``import torch``: loading the library;
- the device made ready and the input created (on a GPU, ``torch.cuda.init()`` and the input's
  allocation: the CUDA context is created there);
- ``torch.sin(x)``: first, second and steady-state calls. The first pays the process's one-time
  setup of running an op as well as sin's own;
- ``torch.cos(x)``: an op whose first call comes after the process's first, so it pays only its own;
- ``torch.compile`` of relu(sin·cos + x): the first call captures and compiles (or loads from the
  compile caches `make warm` filled), then the second and steady-state calls.
"""
from __future__ import annotations

from typing import Any

from demos.deck import asks
from demos.deck.claims import Claim, Claims, regime
from demos.deck.conditions import measured
from demos.deck.demo import Choice, Configs, Demo, Pow2
from demos.engine import plots
from demos.engine.env import compile_root, temporary_root
from demos.engine.measurement import Run
from demos.engine.protocol import policy_threads
from demos.introspection import coldcompile
from demos.topics.firstcall_figures import figure_costs

DTYPES = ("float32", "bfloat16")
BUDGET_S = 0.1  # steady state of each form, in the new process


def measure_costs(run: Run, N: int = 2**12, dtype: str = "float32") -> dict[str, Any]:
    """First, second and steady-state calls of an op, a second op and a compiled function, in a
    new process whose compile caches are the deck's (what `make warm` filled)."""
    run.progress(0.1, "a new Python process: importing torch, then the first calls…")
    spec = {"kind": "first_call", "N": N, "dtype": dtype, "budget_s": BUDGET_S,
            "threads": policy_threads()}  # the threads the declared state chose for this load
    d = coldcompile.in_fresh_process(spec, str(compile_root() or temporary_root()), timeout=300)
    run.progress(1.0, "drawing…")
    d.update({"N": N, "dtype": dtype,
              "extra": f"sin, cos and compiled relu(sin·cos + x), N={plots.pow2_label(N)}, {dtype}, "
                       f"a new process, {d['threads']} thread{'s' * (d['threads'] != 1)}"})
    return d


def _ratio(form: str, which: str = "first_s"):
    return lambda d: d[form][which] / d[form]["steady_s"]


def _short_call(form: str, bound_s: float):
    """A first-call ratio is large where the call itself is short: its steady state under
    ``bound_s`` (the one-time costs, loading and compiling, take milliseconds to seconds)."""
    name = "torch.compile" if form == "compiled" else form
    return measured(lambda d: d[form]["steady_s"], "<", bound_s,
                    name + "'s steady-state call {xs}, {cmp} {ts} (a small N: one-time costs show)")


SHORT_OP_S, SHORT_COMPILED_S = 1e-4, 1e-3  # a first op call costs ≥ 1 ms, a compile ≥ 1 s
costs_claims = Claims(
    Claim("sin's first call in a new process costs over {threshold:g}× its steady-state call",
          _ratio("sin"), ">", 10, key="first_op", **regime(when=_short_call("sin", SHORT_OP_S)),
          ask=asks.bands("torch.sin on 4096 elements in a new Python process: its first call costs how many "
                         "times its steady-state call?", (3, 100))),
    Claim("cos's first call, after sin's, still costs over {threshold:g}× its steady-state call",
          _ratio("cos"), ">", {"cpu": 3}, key="second_op", **regime(when=_short_call("cos", SHORT_OP_S))),
    Claim("torch.compile's first call costs over {threshold:g}× its steady-state call",
          _ratio("compiled"), ">", 1000, key="compiled", **regime(when=_short_call("compiled", SHORT_COMPILED_S))),
)


costs = Demo(
    "costs", "The first call",
    controls=[Pow2("N", 2**12, lo=4, hi=24), Choice("dtype", "float32", options=DTYPES, match=True)],
    measure=measure_costs, figure=figure_costs, panel="warmed",
    configs=Configs(warm=[{}]), claims=costs_claims,
)
