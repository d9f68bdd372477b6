"""Part 4 — inside the compilers: capture, guards, graph breaks, generated code and IRs.

Two bets on one page (seed card 004, §02–§03): ``torch.compile`` captures Python bytecode
with Dynamo, guards its assumptions, breaks the graph where it cannot capture and lets
Inductor generate the kernels (Triton on a GPU, C++/OpenMP on a CPU); ``jax.jit`` traces a
pure, shape-static function to a jaxpr, lowers it to StableHLO and lets XLA optimise the whole
program (fusions in the optimized HLO).

Four live demos, each a :class:`demos.deck.demo.Demo` of a ``measure_*(run, …)``, a
``figure_*`` (:mod:`demos.topics.internals_figures`) and the slide's claims:

``pipeline()``      a workload through both compilers, one stage per side as highlighted
                    excerpts (kernel bodies first, boilerplate folded) with counts: graphs,
                    guards, generated kernels, HLO fusions. The stage buttons only redraw.
``guards()``        the guards Dynamo recorded for a call, in plain words; then one property of
                    the input changes and the figure shows the guard that failed.
``graph_breaks()``  a data-dependent ``if`` and a ``print``: Dynamo's explanation (graphs,
                    breaks, reason, source line) next to what ``jax.jit`` does with the same
                    function (an expected error, shown on purpose); then the fixed versions.
``capture_cost()``  eager vs compiled for the broken function and its fixes, measured.

What Dynamo says (graph breaks, guard trees, failed guards) is read by
:mod:`demos.introspection.dynamo`, the generated code and IRs by
:mod:`demos.introspection.codegen`; the stages and excerpts a slide shows are picked in
:mod:`demos.topics.internals_code`, the inputs made in :mod:`demos.topics.internals_inputs`.
Every capture compiles a fresh copy of the function (a new code object), so re-running a cell
gives the same answer and nothing else is reset. What a demo keeps between measurements
(stages, explanations, first-call times) is in its ``run.cache``.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from demos.deck import asks
from demos.deck.claims import Claim, Claims, regime
from demos.deck.conditions import AGREES, overhead_bound  # AGREES: allclose with tolerance(dtype), 2·n·u
from demos.deck.demo import Choice, Configs, Demo, Pow2
from demos.engine.convert import to_jax, to_numpy
from demos.engine.devices import device_kind, require_jax, require_torch, set_threads, torch_device
from demos.engine.errors import DemoError, one_line
from demos.engine.measurement import Run
from demos.engine.timing import Stopwatch, sync_for
from demos.engine.workload_defs import tolerance
from demos.engine.workloads import compiled_torch, jitted
from demos.introspection import dynamo
from demos.topics.internals_code import jax_side, slim_stages, source_lines, torch_side
from demos.topics.internals_examples import VARIANTS, _bind_frameworks, _variant
from demos.topics.internals_inputs import CHANGES, changed_inputs, inputs_1d
from demos.topics.internals_figures import (JAX_STAGES, TORCH_STAGES, figure_breaks, figure_capture_cost,
                                            figure_guards, figure_pipeline)

DTYPES = ("float32", "bfloat16")
PIPELINE_WORKLOADS = ("complex_activation", "chain", "two_matmuls", "mlp_block", "mlp_dead_code")


# =======================================================================================
# 1. The pipeline: both compilers, stage by stage
# =======================================================================================
def _sizes(workload: str, size: str) -> dict[str, int]:
    from demos.engine.workload_defs import get

    w = get(workload)
    if size == "small":
        return {p.name: p.quick for p in w.params}
    if size != "default":
        raise DemoError(f"size must be 'default' or 'small', not {size!r}")
    return w.defaults(device_kind())


def measure_pipeline(run: Run, workload: str = "complex_activation", size: str = "default",
                     dtype: str = "float32") -> dict[str, Any]:
    """Both compilers' stages for one workload at these sizes (kept in ``run.cache`` per sizes, dtype
    and device). A side that cannot run (JAX missing, dtype unsupported) carries an ``error`` line."""
    from demos.engine.workload_defs import get

    w = get(workload)
    params, device = _sizes(w.name, size), torch_device()
    key = ("pipeline", w.name, tuple(sorted(params.items())), dtype, device)
    if key in run.cache:
        return dict(run.cache[key])
    data: dict[str, Any] = {"workload": w.name, "params": params, "dtype": dtype, "device": device, "size": size,
                            "extra": f"{w.name}, {', '.join(f'{k}={v:,}' for k, v in params.items())}, {dtype}"}
    with Stopwatch() as watch:
        try:
            data["torch"] = torch_side(w, params, dtype, device, run.progress)
        except Exception as exc:  # one line on the figure; the other side still shows
            data["torch"] = {"error": one_line(exc)}
        try:
            run.progress(0.7, f"XLA: lowering and compiling {w.name}…")
            data["jax"] = jax_side(w, params, dtype, device)
        except Exception as exc:
            data["jax"] = {"error": one_line(exc)}
    data["seconds"] = watch.seconds
    run.cache[key] = data
    return dict(data)


def _torch_counts(d: dict[str, Any]) -> dict[str, Any]:
    return d.get("torch", {}).get("counts", {})


def _hlo_fusions(d: dict[str, Any]) -> int | None:
    return d.get("jax", {}).get("counts", {}).get("HLO fusions")


def _fused_kernels(d: dict[str, Any]) -> int | None:
    """Inductor's kernels, counted only when they are in the device's language and the first is
    named after the five ops it fused."""
    t = d.get("torch", {})
    lang = "C++/OpenMP" if d["device"] == "cpu" else "Triton"
    named = {"sin", "cos", "mul", "add", "relu"} <= set(t["kernels"][0].split("_"))
    return _torch_counts(d).get("kernels") if t.get("kernel_lang") == lang and named else None


def _is(workload: str) -> Callable[[dict], bool]:
    return lambda d: d["workload"] == workload


# The pipeline slides: 1 graph; complex_activation is 1 kernel named after what it fused and 1 HLO
# fusion; mlp_block's matmuls stay library calls, the rest fused into a few kernels around them
pipeline_claims = Claims(
    Claim("{d[workload]}: torch.compile captures the whole function as {threshold} graph",
          lambda d: _torch_counts(d).get("graphs"), "==", 1, key="graphs"),
    Claim({"cpu": "Inductor generates {threshold} C++/OpenMP kernel, named after the ops it fused (sin, cos, mul, add, relu)",
           "gpu": "Inductor generates {threshold} Triton kernel, named after the ops it fused (sin, cos, mul, add, relu)"},
          _fused_kernels, "==", 1, applies=_is("complex_activation"), key="kernel"),
    Claim("XLA's optimized HLO holds {threshold} fusion", _hlo_fusions, "==", 1, applies=_is("complex_activation"),
          key="fusion", ask=asks.count("complex_activation under jax.jit: how many fusions does XLA's optimized HLO "
                                       "hold?", (2, 3, 6), noun="fusion")),
    Claim("mlp_block: the {0} matmuls stay library calls, the elementwise rest is fused around them",
          lambda d: (_torch_counts(d).get("library calls"), _torch_counts(d).get("kernels"), _hlo_fusions(d)),
          ("==", "within", ">="), (2, (1, 4), 2), applies=_is("mlp_block"), key="library"),
)


pipeline = Demo(
    "pipeline", "Inside the compilers: the pipeline",
    controls=[Choice("workload", "complex_activation", options=PIPELINE_WORKLOADS, match=True),
              Choice("torch_stage", "generated code", label="torch.compile", options=TORCH_STAGES, toggle=True, view=True),
              Choice("jax_stage", "optimized HLO", label="jax.jit", options=JAX_STAGES, toggle=True, view=True),
              Choice("dtype", "float32", options=DTYPES, match=True),
              Choice("size", "default", options=("default", "small"), toggle=True)],
    measure=measure_pipeline, figure=figure_pipeline,
    configs=Configs(warm=[{"workload": w} for w in PIPELINE_WORKLOADS], quick={"size": "small"}, slim=slim_stages),
    claims=pipeline_claims,
)


# =======================================================================================
# 2. Guards: what Dynamo assumed, and which assumption a changed input broke
# =======================================================================================
GUARD_N = {"cpu": 2**14, "gpu": 2**20}


def measure_guards(run: Run, change: str = "dtype → float64", N: int | None = None,
                   dtype: str = "float32") -> dict[str, Any]:
    """Compile ``complex_activation`` (dynamic=False, Dynamo capture only), call it again with the
    same inputs, then with one property changed; report guards, timings and any recompile."""
    from demos.engine.workload_defs import complex_activation_torch

    if change not in CHANGES:
        raise DemoError(f"unknown change {change!r}; valid: {', '.join(CHANGES)}")
    torch_ = require_torch()
    set_threads()
    N, device = GUARD_N[device_kind()] if N is None else N, torch_device()
    gen = torch_.Generator().manual_seed(0)
    x, y = (torch_.randn(N, generator=gen).to(device=device, dtype=getattr(torch_, dtype)) for _ in range(2))
    g = dynamo.guarded_calls(complex_activation_torch, [("1st call", (x, y)), ("2nd call, same inputs", (x, y)),
                                                        (f"3rd call: {change}", changed_inputs(change, x, y))],
                             sync_for("torch_eager", device), progress=run.progress)
    calls, tree = g["calls"], g["guard_tree"]
    return {"change": change, "N": N, "dtype": dtype, "device": device,
            "guards_plain": dynamo.plain_guards(tree), "guard_count": len(dynamo.guard_leaves(tree)),
            "calls": calls, "compiles": g["compiles"], "recompiled": calls[2]["compiled"],
            "failed_guard": calls[2]["reason"], "extra": f"complex_activation, N={N:,}, {dtype}"}


CHANGE_WORDS = {c: w for c, w in zip(CHANGES[1:], ("dtype mismatch", "dtype mismatch", "size mismatch",
                                                   "requires_grad", "stride mismatch"))}  # what the failed guard says


def _guards_name_inputs(d: dict[str, Any]) -> bool:
    dev = "cpu" if d["device"] == "cpu" else "cuda"
    return all(any(g.startswith(f"{v}: {d['dtype']} on {dev}") and f"shape [{d['N']}]" in g for g in d["guards_plain"])
               for v in ("x", "y"))


# The guards slide: what guards name, the cache hit (its time is shown, not claimed: noisy), the
# guard a change trips
guards_claims = Claims(
    Claim("the guards name each input's dtype, device and shape", _guards_name_inputs, key="named"),
    Claim("call 1 captures; call 2, same kind of inputs, is a cache hit",
          lambda d: [c["compiled"] for c in d["calls"][:2]] == [True, False], key="hit"),
    # "recompiles": the second compile of the same function
    Claim(lambda d: f"{d['change']}: recompiles, and the failed guard says '{CHANGE_WORDS[d['change']]}'",
          lambda d: d["compiles"] if d["recompiled"] and CHANGE_WORDS[d["change"]] in d["failed_guard"] else None,
          "==", 2, applies=lambda d: d["change"] in CHANGE_WORDS, key="recompiles",
          ask=asks.count("Compiled on float32 inputs, then called with float64 ones: how many compiles in all?",
                         (1, 3), noun="compile", tells={"2 compiles": (r"\brecompil", r"\bfail\w* guard")})),
    Claim("fresh tensors with the same properties do not recompile ({threshold} compile)",
          lambda d: None if d["recompiled"] else d["compiles"], "==", 1,
          applies=lambda d: d["change"] not in CHANGE_WORDS, key="no_recompile"),
)


guards = Demo(
    "guards", "Guards and the recompile they trigger",
    controls=[Choice("change", "dtype → float64", label="then call it with", options=CHANGES, match=True)],
    measure=measure_guards, figure=figure_guards, claims=guards_claims,
)


# =======================================================================================
# 3. Graph breaks: Dynamo's explanation next to jax.jit's answer
# =======================================================================================
BREAK_N = {"cpu": 2**12, "gpu": 2**16}


def measure_breaks(run: Run, variant: str = "branch", N: int | None = None, dtype: str = "float32") -> dict[str, Any]:
    """Dynamo's explanation and jax.jit's answer for one example (kept in ``run.cache``: both are
    deterministic)."""
    import numpy as np

    v = _variant(variant)
    _bind_frameworks()
    N = BREAK_N[device_kind()] if N is None else N
    key = ("breaks", variant, N, dtype, torch_device())
    if key in run.cache:
        return dict(run.cache[key])
    set_threads()
    run.progress(0.1, "Dynamo: explaining…")
    x = inputs_1d(N, dtype)
    ex = dynamo.explain(v["torch"], x)
    with dynamo.prints_caught():
        ref = to_numpy(v["torch"](x))
    data: dict[str, Any] = {"variant": variant, "N": N, "dtype": dtype, "device": torch_device(),
                            "title": v["title"], "fixed": v["fixed"], "torch_source": source_lines(v["torch"]),
                            "torch_matches": bool(np.allclose(to_numpy(ex.pop("output")), ref, **tolerance(dtype))),
                            "torch": ex, "extra": f"{v['title']}, N={N:,}, {dtype}"}
    try:
        require_jax()  # no JAX: one line on the JAX side, the torch side still draws
        _bind_frameworks(need_jax=True)
        ja = dynamo.jit_attempt(v["jax"], to_jax(x))
        if ja.get("output") is not None:
            ja["matches"] = bool(np.allclose(to_numpy(ja["output"]), ref, **tolerance(dtype)))
        ja.pop("output", None)
        data.update(jax=ja, jax_source=source_lines(v["jax"]))
    except DemoError as exc:
        data.update(jax={"ok": False, "error_type": "missing", "error": str(exc), "printed": []}, jax_source=[])
    run.cache[key] = data
    return dict(data)


def _break_at(d: dict[str, Any], start: str) -> bool:
    """Dynamo's first graph break is at a source line starting with ``start``."""
    t = d["torch"]
    return bool(t["reasons"]) and t["reasons"][0]["source"].startswith(start)


def _graphs_breaks(d: dict[str, Any]) -> tuple[int, int]:
    return d["torch"]["graphs"], d["torch"]["breaks"]


def _example_is(*names: str, fixed: bool = False) -> Callable[[dict], bool]:
    return lambda d: (d["variant"] not in ("branch", "print")) if fixed else d["variant"] in names


# The graph-break slides, for the example shown (the branch, the print, or a fix)
breaks_claims = Claims(
    Claim("{d[variant]}: torch.compile's output matches eager", lambda d: d["torch_matches"], key="matches", **AGREES),
    Claim("branch on a tensor value: torch.compile makes {0} graphs and {1} break, at the `if`",
          lambda d: _graphs_breaks(d) if _break_at(d, "if ") else None, "==", (2, 1), applies=_example_is("branch"),
          key="branch_breaks",
          ask=asks.count("An `if` on a tensor's value inside the function: how many graphs does torch.compile make?",
                         (1, 3), part=0, noun="graph")),
    Claim("branch on a tensor value: jax.jit raises",
          lambda d: not d["jax"]["ok"] and d["jax"]["error_type"] in ("TracerBoolConversionError",
                                                                      "ConcretizationTypeError"),
          applies=_example_is("branch"), key="branch_jax"),
    Claim("print: torch.compile breaks the graph at the print (at least {threshold} break)",
          lambda d: d["torch"]["breaks"] if _break_at(d, "print(") else None, ">=", 1, applies=_example_is("print"),
          key="print_breaks"),
    Claim("print: jax.jit runs it {threshold}× in 3 calls, at trace time, printing a tracer",
          lambda d: len(d["jax"]["printed"]) if d["jax"]["ok"] and "Tracer" in d["jax"]["printed"][0] else None,
          "==", 1, applies=_example_is("print"), key="print_jax"),
    Claim("{d[variant]}: torch.compile makes {0} graph, {1} breaks", _graphs_breaks, "==", (1, 0),
          applies=_example_is(fixed=True), key="fixed_graphs"),
    Claim("{d[variant]}: jax.jit runs it, matching torch eager", lambda d: d["jax"]["ok"] and d["jax"].get("matches", False),
          applies=_example_is(fixed=True), key="fixed_jax", **AGREES),
)


graph_breaks = Demo(
    "graph_breaks", "Graph breaks: Dynamo vs jax.jit",
    controls=[Choice("variant", "branch", label="function", options=[(v["title"], k) for k, v in VARIANTS.items()], match=True)],
    measure=measure_breaks, figure=figure_breaks,
    configs=Configs(warm=[{"variant": v} for v in VARIANTS]), claims=breaks_claims,
)


# =======================================================================================
# 4. What capture costs: eager vs compiled, broken vs fixed, measured
# =======================================================================================
COST_ROWS = (
    # key, backend (colour), label, variant
    ("eager", "torch_eager", "torch eager · if-branch", "branch"),
    ("compile_branch", "torch_compile", "torch.compile · if-branch", "branch"),
    ("compile_where", "torch_compile", "torch.compile · torch.where", "where"),
    ("compile_cond", "torch_compile", "torch.compile · torch.cond", "cond"),
    ("jit_where", "jax_jit", "jax.jit · jnp.where", "where"),
    ("jit_cond", "jax_jit", "jax.jit · lax.cond", "cond"),
)
COST_N = {"cpu": (2**16, 12, 24), "gpu": (2**22, 14, 27)}  # default, lo, hi (log2)


def _cost_row(run: Run, key: str, backend: str, label: str, variant: str, x, N: int, dtype: str, budget_s: float,
              say: Callable[[str], None]) -> dict[str, Any]:
    v = _variant(variant)
    if backend == "torch_eager":
        fn, args = v["torch"], (x,)
    elif backend == "torch_compile":
        fn, args = compiled_torch(v["torch"], dynamic=False), (x,)
    else:
        require_jax()  # no JAX: one line on the JAX side, the torch side still draws
        _bind_frameworks(need_jax=True)
        fn, args = jitted(v["jax"]), (to_jax(x),)
    sync = sync_for(backend, torch_device())
    fkey = (key, N, dtype, torch_device())
    if ("first call", fkey) not in run.cache and backend != "torch_eager":
        say(f"compiling {label} (first call)…")
    first_s = run.first_call_once(fkey, lambda: fn(*args), sync)
    t = run.time(lambda: fn(*args), sync, budget_s=budget_s, warmup=1, min_samples=5)
    graphs = {"torch_eager": 0, "jax_jit": 1}.get(backend)
    if graphs is None:
        graphs = measure_breaks(Run(run.cache), variant, N, dtype)["torch"]["graphs"]  # its progress: none
    return {**t.to_dict(first_s=first_s), "graphs": graphs, "output": to_numpy(fn(*args))}


def measure_capture_cost(run: Run, N: int | None = None, dtype: str = "float32", budget_s: float = 0.06,
                         rows: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Steady-state time per call of the branching function and its fixes, eager and compiled.
    Compile time (first call) is kept apart; each row also says how many graphs Dynamo made."""
    import numpy as np

    _bind_frameworks()
    set_threads()
    kind = device_kind()
    N = COST_N[kind][0] if N is None else N
    if N <= 0 or N > 2 ** COST_N[kind][2]:
        raise DemoError(f"N={N} is outside 1…2^{COST_N[kind][2]} for this demo")
    x, ref, out_rows = inputs_1d(N, dtype), None, []
    wanted = [r for r in COST_ROWS if rows is None or r[0] in rows]
    for i, (key, backend, label, variant) in enumerate(wanted):
        say = functools.partial(run.progress, i / len(wanted))
        say(f"measuring {label}…")
        row: dict[str, Any] = {"key": key, "backend": backend, "label": label, "variant": variant}
        try:
            row.update(_cost_row(run, key, backend, label, variant, x, N, dtype, budget_s, say))
            out = row.pop("output")
            ref = out if ref is None else ref
            row["matches_eager"] = bool(np.allclose(out, ref, **tolerance(dtype)))
        except Exception as exc:
            row["error"] = one_line(exc)
        out_rows.append(row)
    run.progress(1.0, "")
    return {"N": N, "dtype": dtype, "device": torch_device(), "rows": out_rows,
            "extra": f"sin→branch→cos/tanh chain, N={N:,}, {dtype}"}


def _cost_rows(d: dict[str, Any]) -> dict[str, dict]:
    return {r["key"]: r for r in d["rows"]}


# The cost slide: graph counts and agreement; the timing only on a GPU (on a CPU the slide says to
# read the numbers off the figure, not to predict them)
cost_claims = Claims(
    Claim("torch.compile runs the if-branch as {0} graphs, torch.where and torch.cond as {1}",
          lambda d: tuple(_cost_rows(d)[k].get("graphs") for k in ("compile_branch", "compile_where", "compile_cond")),
          "==", (2, 1, 1), key="graphs",
          ask=asks.count("The `if` rewritten as torch.where: how many graphs does torch.compile make?",
                         (2, 3), part=1, noun="graph",
                         tells={"1 graph": (r"\bfix\w* (?:the|a) (?:graph )?break|\bno (?:graph )?break", r"inside the graph")})),
    Claim("every form runs and agrees with eager within tolerance",
          lambda d: all("error" not in r and r.get("matches_eager") for r in d["rows"]), key="agree", **AGREES),
    Claim({"gpu": "on a GPU, the one-graph torch.where beats the broken compile"},
          lambda d: _cost_rows(d)["compile_where"]["median_s"] < _cost_rows(d)["compile_branch"]["median_s"],
          key="where_faster", **regime(when=overhead_bound(  # a break's launches and guards show in a short call
              lambda d: _cost_rows(d)["compile_branch"]["median_s"], 1e-3, "the broken compile's call"))),
)


capture_cost = Demo(
    "capture_cost", "What a graph break costs",
    controls=lambda kind: [Pow2("N", COST_N[kind][0], label="N (elements)", lo=COST_N[kind][1], hi=COST_N[kind][2],
                                match=True),
                           Choice("dtype", "float32", options=DTYPES, match=True)],
    measure=measure_capture_cost, figure=figure_capture_cost, panel="warmed",
    configs=Configs(record={"budget_s": 0.3}, quick={"N": 2**16, "budget_s": 0.05}), claims=cost_claims,
)
