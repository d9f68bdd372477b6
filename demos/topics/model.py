"""Part 6 — a real model: a transformer stack, eager vs compiled, forward and training step.

The model is :mod:`demos.engine.model_zoo`'s stack of pre-norm transformer blocks (torch and
JAX twins, random weights). Four live demos, each declared once (:class:`demos.deck.demo.Demo`)
from a ``measure_*`` here and a ``figure_*`` in :mod:`demos.topics.model_figures`:

``ops()``           aten ops one eager forward (or training step) issues, per layer and for the
                    stack, beside what torch.compile launches: graphs, fused kernels, library calls.
``speed()``         latency of a forward or a training step, eager vs torch.compile vs jax.jit, the
                    speedup beside the seed card's 1.2–1.8× and the PyTorch 2 paper's figures.
``backward()``      AOTAutograd's forward and backward graphs, activations saved for backward and
                    the peak memory of a step; JAX's residuals without and with ``jax.checkpoint``.
``compile_cost()``  (cold) compiling the whole stack vs one block reused for every layer, steps
                    until compiling pays, and ``torch.compiler.set_stance`` on a shape-varying loop.

Every torch.compile here is ``dynamic=False`` (one graph specialised to the sizes, as the seed
describes). The bundle's compiled model (:mod:`demos.topics.model_bundle`) uses Inductor itself
(``compile_fx``) with a hook that keeps the graphs AOTAutograd hands it and the code it generates,
so counting costs no extra compile. A demo keeps its bundles in its own cache (``run.cache``),
emptied by ``forget()``. Compile cost's fresh models and stance loop are :mod:`demos.topics.model_compile_cost`.
On a CPU the model runs on one torch thread (``DEMOS_MODEL_THREADS``): the machines this deck
runs on are shared, and OpenMP threads fighting for two cores make small ops erratic.
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable

from demos.deck import asks
from demos.deck.claims import Claim, Claims, regime
from demos.deck.conditions import measured, rounding_text
from demos.deck.demo import Choice, Configs, Demo
from demos.engine import model_zoo as zoo
from demos.engine.devices import device_kind, require_torch, torch_device
from demos.engine.errors import DemoError
from demos.engine.measurement import Run
from demos.engine.timing import break_even, compile_seconds, sync_jax, sync_torch
from demos.introspection import profiling
from demos.topics.model_bundle import agreement, bundle, cpu_threads, threads
from demos.topics.model_bundle import GEMM_BOUND, GEMM_N, OP_BOUND, agreement_bound, gemm_form  # the speed claims' regimes
from demos.topics.model_compile_cost import CACHES, faster_compile, fill_caches, first_step, stance_loops, warm_compiler
from demos.topics.model_figures import (figure_backward, figure_compile_cost, figure_ops, figure_speed,
                                        ops_totals)

SIZES = {"cpu": {"layers": 4, "width": 128, "tokens": "4x64"},
         "gpu": {"layers": 12, "width": 768, "tokens": "8x512"}}  # GPT-2 small's depth and width
HEAD_DIM = {"cpu": 32, "gpu": 64}
TOKENS = {"cpu": (("1 × 32", "1x32"), ("4 × 64", "4x64"), ("8 × 128", "8x128")),
          "gpu": (("1 × 128", "1x128"), ("8 × 512", "8x512"), ("16 × 1024", "16x1024"))}
WIDTHS = {"cpu": (64, 128, 256, 512), "gpu": (256, 512, 768, 1024, 2048)}  # D; 768 is GPT-2 small's
LAYERS = {"cpu": (1, 2, 4, 8), "gpu": (1, 4, 12, 24)}
COST_LAYERS = {"cpu": (8, 2, 4), "gpu": (12, 6, 24)}
OP_HEAVY = {"cpu": {"tokens": "1x32", "width": 64}, "gpu": {"tokens": "1x128", "width": 256}}
DTYPES = ("float32", "bfloat16")
STEPS = (("inference (forward)", "inference"), ("training step", "training"))
BUDGET_S = 0.25  # seconds of timing per form and redraw


# =======================================================================================
# Sizes (one bundle per configuration, its recording hook and the model's threads:
# demos.topics.model_bundle)
# =======================================================================================
def config(layers: int | None = None, width: int | None = None, tokens: str | None = None,
           dtype: str = "float32") -> zoo.Config:
    kind = device_kind()
    d = SIZES[kind]
    width = d["width"] if width is None else width
    tokens = d["tokens"] if tokens is None else tokens
    try:
        batch, seq = (int(v, 10) for v in str(tokens).lower().split("x"))
    except ValueError:
        raise DemoError(f"tokens must read 'batch x seq' (e.g. 4x64), not {tokens!r}") from None
    if dtype not in DTYPES:
        raise DemoError(f"dtype must be one of {', '.join(DTYPES)}, not {dtype!r}")
    cfg = zoo.Config(d["layers"] if layers is None else layers, width, max(1, width // HEAD_DIM[kind]), batch, seq,
                     dtype)
    zoo.check(cfg)
    return cfg


def _extra(cfg: zoo.Config, what: str = "") -> str:
    n = cpu_threads()
    thr = f", model on {n} thread" + "s" * (n != 1) if torch_device() == "cpu" else ""
    return f"{what}{cfg.layers} layers, D={cfg.width}, {cfg.batch}×{cfg.seq} tokens, {cfg.dtype}{thr}"


def _warm(demo: Demo, overrides: Callable[[str], list[dict]]) -> None:
    """What `make warm` measures for a demo whose warm sizes depend on the device."""
    for over in overrides(device_kind()):
        demo.run(over)


# =======================================================================================
# 1. How many ops is one forward pass?
# =======================================================================================
def measure_ops(run: Run, layers: int | None = None, step: str = "inference") -> dict[str, Any]:
    """Eager: aten ops dispatched (TorchDispatchMode), for the stack and one block; a training
    step split into forward, backward, optimizer. Compiled: each graph's kernels and library calls."""
    torch = require_torch()
    training = step == "training"
    cfg = config(layers)
    with threads():
        b = bundle(run, cfg)
        if f"ops-{step}" not in b.cache:
            run.progress(0.1, "counting eager ops…")
            eager: dict[str, Any] = {}
            with contextlib.nullcontext() if training else torch.no_grad():
                block = zoo.op_summary(lambda: b.model.layers[0](b.x))
                if training:
                    b.call("torch_eager", True)  # AdamW's state exists: count a steady step
                    b.opt.zero_grad(set_to_none=True)
                    box: list = []
                    eager["forward"] = zoo.op_summary(lambda: box.append(zoo.torch_loss(b.model, b.x, b.t)))
                    eager["backward"] = zoo.op_summary(lambda: box[0].backward())
                    eager["optimizer"] = zoo.op_summary(b.opt.step)
                else:
                    eager["forward"] = zoo.op_summary(lambda: b.model(b.x))
            run.progress(0.4, "torch.compile: graphs and generated code…")
            b.call("torch_compile", training)
            b.cache[f"ops-{step}"] = {"eager": eager, "block": block, "graphs": b.records[step]}
    return b.cache[f"ops-{step}"] | {"step": step, "cfg": vars(cfg) | {}, "extra": _extra(cfg, f"{step}: ")}


def _device(d: dict) -> str:
    """The measurements carry no device: claims are checked where they were measured."""
    return d.get("device") or device_kind()


def _step(step: str) -> Callable[[dict], bool]:
    return lambda d: d["step"] == step


# The ops slide: one graph; eager's ops many times the compiled launches; attention matched
ops_claims = Claims(
    Claim("torch.compile captures one {d[step]} step as {threshold} graph: no graph break",
          lambda d: ops_totals(d)["graphs"], "==", 1, key="graphs"),
    Claim("one forward of the stack issues one block's ops per layer",
          lambda d: d["eager"]["forward"]["total"] == d["cfg"]["layers"] * d["block"]["total"],
          applies=_step("inference"), key="per_layer"),
    Claim("forward: eager issues over {threshold:g}× as many aten ops as the compiled fused kernels",
          lambda d: ops_totals(d)["per_kernel"], ">", {"cpu": 8, "gpu": 5}, applies=_step("inference"),
          key="per_kernel", ask=asks.bands("One forward pass of the stack: eager's aten ops ÷ the compiled fused "
                                           "kernels. How large?", (2,))),
    Claim("forward: over {threshold:g}× as many as all compiled launches (fused kernels + library calls)",
          lambda d: ops_totals(d)["per_launch"], ">", {"cpu": 4.5}, applies=_step("inference"), key="per_launch"),
    Claim("forward: the matmuls stay library calls (mm/bmm), {threshold} per layer",
          lambda d: ops_totals(d)["library"] / d["cfg"]["layers"], "==", {"cpu": 4}, applies=_step("inference"),
          key="library"),
    Claim({"cpu": "Inductor matched the hand-written softmax(QKᵀ)V to one fused attention kernel"},
          lambda d: ops_totals(d)["attention_fused"], applies=_step("inference"), key="attention"),
    Claim("training step: eager issues over {threshold:g}× as many aten ops as the fused kernels of the forward + "
          "backward graphs", lambda d: ops_totals(d)["per_kernel"], ">", {"cpu": 10}, applies=_step("training"),
          key="training_per_kernel"),
    Claim("a training step (forward, backward, AdamW) issues over {threshold} aten ops",
          lambda d: ops_totals(d)["eager"], ">", {"cpu": 600}, applies=_step("training"), key="training_ops"),
    device=_device,
)


ops = Demo(
    "ops", "How many ops is one forward pass?",
    controls=lambda kind: [Choice("layers", SIZES[kind]["layers"], options=LAYERS[kind], match=True),
                           Choice("step", "inference", options=STEPS, toggle=True, match=True)],
    measure=measure_ops, figure=figure_ops,
    panel="warmed",  # compiling the stack, even from warm caches, took 3.1 s before its first figure
    configs=Configs(warm=lambda demo: _warm(demo, lambda k: [{"layers": n} for n in LAYERS[k]] + [
        {"layers": n, "step": "training"} for n in (SIZES[k]["layers"], LAYERS[k][1])])),
    claims=ops_claims,
)


# =======================================================================================
# 2. Inference and training step: eager vs compiled
# =======================================================================================
def measure_speed(run: Run, step: str = "inference", tokens: str | None = None, width: int | None = None,
                  dtype: str = "float32", layers: int | None = None, budget_s: float = BUDGET_S) -> dict[str, Any]:
    """Median latency (p10–p90) of a forward or a training step (forward, backward, AdamW):
    torch eager, torch.compile (default; reduce-overhead on CUDA), jax.jit."""
    training = step == "training"
    cfg = config(layers, width, tokens, dtype)
    with threads():
        b = bundle(run, cfg)
        run.progress(0.05, "torch.compile (the first time at these sizes: a minute on a CPU)…")
        first_s = run.first_call_once(("model step", step, tuple(sorted(vars(cfg).items()))), lambda: b.call("torch_compile", training))
        if not training and "agree" not in b.cache:
            b.cache["agree"] = agreement(b)
        names = ["torch_eager", "torch_compile"] + ["torch_compile_ro"] * (torch_device() == "cuda")
        forms = {k: ((lambda k=k: b.call(k, training)), sync_torch()) for k in names}
        skipped = {} if torch_device() == "cuda" else {
            "torch_compile_ro": "reduce-overhead (CUDA graphs) needs CUDA: not measured on a CPU"}
        try:
            run.progress(0.2, "jax.jit (compiles on its first call)…")
            forms["jax_jit"] = (zoo.jax_form(b.model, b.x, b.t, cfg.heads, training), sync_jax())
            sync_jax()(forms["jax_jit"][0]())
        except DemoError as exc:
            skipped["jax_jit"] = str(exc)
        run.progress(0.3, "timing every form, taking turns…")
        rows = {k: t.to_dict() for k, t in run.time_forms({**forms, "gemm": gemm_form()},  # the GEMM in turn
                                                          budget_s=budget_s * (len(forms) + 1), max_samples=80).items()}
        gemm = 2.0 * GEMM_N**3 / rows.pop("gemm")["median_s"]
    eager = rows["torch_eager"]["median_s"]
    speedup = {k: eager / r["median_s"] for k, r in rows.items() if k != "torch_eager"}
    hist = run.cached(("history", step, dtype, torch_device()), dict)
    hist[f"{cfg.batch}×{cfg.seq}, D={cfg.width}"] = [cfg.flops(training), speedup["torch_compile"]]
    return {"step": step, "cfg": vars(cfg) | {}, "rows": rows, "skipped": skipped, "speedup": speedup,
            "gemm_flops_per_s": gemm,
            "agree": None if training else b.cache["agree"], "flops": cfg.flops(training), "first_s": first_s,
            "compile_s": compile_seconds(first_s, rows["torch_compile"]["median_s"]),
            "history": dict(hist), "extra": _extra(cfg, f"{step}: ")}


def _op_heavy(d: dict) -> bool:
    c, o = d["cfg"], OP_HEAVY["cpu"]
    return f"{c['batch']}x{c['seq']}" == o["tokens"] and c["width"] == o["width"]


# At its defaults the speed slide claims agreement only (the speedup is inside a shared CPU's noise); the
# training-step speedups are regimes: op-bound (an op-heavy size; a GPU's defaults) or GEMM-bound (D=512)
speed_claims = Claims(
    Claim("every form's forward output agrees with eager: max|Δ| ÷ max|y| ÷ the rounding bound under {threshold:g}",
          lambda d: max(d["agree"].values()) / agreement_bound(d), "<", 1.0,
          applies=lambda d: d.get("agree") is not None and d["cfg"]["dtype"] == "float32", key="agree",
          **regime(when=lambda d: (True, rounding_text(d["cfg"]["dtype"], d["cfg"]["width"], d["cfg"]["layers"])))),
    Claim("training step at an op-heavy size ({d[cfg][batch]} × {d[cfg][seq]}, D={d[cfg][width]}): torch.compile "
          "over {threshold:g}× eager's speed", lambda d: d["speedup"]["torch_compile"], ">", {"cpu": 1.0},
          applies=lambda d: d["step"] == "training" and _op_heavy(d), key="op_heavy", **regime(when=OP_BOUND)),
    Claim("training step, D={d[cfg][width]} (big matmuls): compiling no longer pays, under {threshold:g}× eager's "
          "speed", lambda d: d["speedup"]["torch_compile"], "<", {"cpu": 1.15},
          applies=lambda d: d["step"] == "training" and d["cfg"]["width"] == WIDTHS["cpu"][-1],
          key="big_matmuls", **regime(when=GEMM_BOUND)),
    Claim("training step: torch.compile over {threshold:g}× eager's speed", lambda d: d["speedup"]["torch_compile"],
          ">", {"gpu": 1.0}, applies=_step("training"), key="training", **regime(when=OP_BOUND),
          ask=asks.bands("The inference step at these sizes: how many times faster is torch.compile than eager?",
                         (1.5, 3), read=lambda d: d["speedup"]["torch_compile"])),
    device=_device,
)


speed = Demo(
    "speed", "Inference and training step: eager vs compiled",
    controls=lambda kind: [Choice("step", "inference", options=STEPS, toggle=True, match=True),
                           Choice("tokens", SIZES[kind]["tokens"], label="batch × seq", options=TOKENS[kind]),
                           Choice("width", SIZES[kind]["width"], label="width D", options=WIDTHS[kind]),
                           Choice("dtype", "float32", options=DTYPES, match=True)],
    measure=measure_speed, figure=figure_speed, panel="warmed",
    configs=Configs(warm=lambda demo: _warm(demo, lambda k: [
        {}, {"step": "training"}, {"tokens": TOKENS[k][0][1]}, {"width": WIDTHS[k][WIDTHS[k].index(SIZES[k]["width"]) - 1]}, {"dtype": "bfloat16"},
        {"step": "training", **OP_HEAVY[k]}, {"step": "training", "width": WIDTHS[k][-1]}]),
        slim=lambda d: d | {"history": {}}),
    claims=speed_claims,
)


# =======================================================================================
# 3. What the compiler did to the backward
# =======================================================================================
def measure_backward(run: Run, tokens: str | None = None, layers: int | None = None) -> dict[str, Any]:
    """AOTAutograd's forward and backward graphs (ops, kernels, library calls, saved tensors);
    activations saved for backward and peak memory of one step, eager vs compiled; JAX's
    residuals without and with jax.checkpoint around every block."""
    cfg = config(layers, None, tokens)
    quiet = profiling.quiet_native_stderr
    with threads():
        b = bundle(run, cfg)
        run.progress(0.1, "compiling the training step (forward + backward)…")
        b.call("torch_compile", True)
        run.progress(0.5, "saved tensors and peak memory, eager and compiled…")
        saved = {"torch_eager": zoo.saved_for_backward(b.model, b.x, b.t),
                 "torch_compile": zoo.saved_for_backward(b.compiled, b.x, b.t)}
        peak = {"torch_eager": zoo.peak_step_bytes(b.model, b.opt, b.x, b.t, quiet)["peak"],
                "torch_compile": zoo.peak_step_bytes(b.compiled, b.opt, b.x, b.t, quiet)["peak"]}
    run.progress(0.75, "JAX: residuals without and with jax.checkpoint…")
    with contextlib.suppress(DemoError):  # no JAX: the torch half stands alone
        saved |= zoo.jax_residuals_of(b.model, b.x, b.t, cfg.heads)
    return {"cfg": vars(cfg) | {}, "graphs": b.records["training"], "saved": saved, "peak": peak,
            "peak_how": "CUDA allocator peak" if torch_device() == "cuda" else "torch.profiler memory events",
            "extra": _extra(cfg, "one training step: ")}


def _split(d: dict) -> tuple[list[dict], list[dict]]:
    """AOTAutograd's forward graphs and backward graphs."""
    return [g for g in d["graphs"] if not g["backward"]], [g for g in d["graphs"] if g["backward"]]


# The backward slide: one joint graph split in two, each fused; peak memory no higher; remat
backward_claims = Claims(
    Claim("AOTAutograd splits the training step into {0} forward and {1} backward graph",
          lambda d: tuple(len(gs) for gs in _split(d)), "==", (1, 1), key="graphs"),
    Claim("the forward graph saves tensors for the backward (at least {threshold})",
          lambda d: sum(g["saved"] for g in _split(d)[1]), ">=", 1, key="saved"),
    Claim("in each graph, over {threshold:g} aten ops per fused kernel",
          lambda d: min(g["nodes"] / max(g["kernels"], 1) for g in d["graphs"]), ">", 5, key="fused"),
    Claim("the compiled step's peak memory is no higher than eager's (at most {threshold:g}× it)",
          lambda d: d["peak"]["torch_compile"] / d["peak"]["torch_eager"], "<=", 1.01, key="peak"),
    Claim("the compiled forward saves no more tensors than eager",
          lambda d: d["saved"]["torch_compile"]["tensors"] <= d["saved"]["torch_eager"]["tensors"],
          key="saved_tensors"),
    Claim("jax.checkpoint keeps under 1/{threshold:g} of the residual bytes (the block inputs only)",
          lambda d: d["saved"]["jax"]["bytes"] / d["saved"]["jax_remat"]["bytes"], ">", 10,
          applies=lambda d: "jax_remat" in d["saved"], key="remat",
          ask=asks.bands("jax.checkpoint around each block: how many times fewer residual bytes does JAX keep for "
                         "the backward?", (2, 100))),
    device=_device,
)


backward = Demo(
    "backward", "What the compiler did to the backward",
    controls=lambda kind: [Choice("tokens", SIZES[kind]["tokens"], label="batch × seq", options=TOKENS[kind], match=True),
                           Choice("layers", SIZES[kind]["layers"], options=LAYERS[kind], match=True)],
    measure=measure_backward, figure=figure_backward, panel="warmed",
    configs=Configs(warm=lambda demo: _warm(demo, lambda k: [{}, {"tokens": TOKENS[k][0][1]},
                                                             {"layers": LAYERS[k][1]}])),
    claims=backward_claims,
)


# =======================================================================================
# 4. Compile cost at model scale (cold); the fresh first steps and the stance loop:
#    demos.topics.model_compile_cost
# =======================================================================================
def measure_compile_cost(run: Run, layers: int | None = None, caches: str = "bypassed",
                         budget_s: float = 0.3) -> dict[str, Any]:
    """Compile time of a training step (first step minus a steady one), the whole stack vs each
    block (regional), in a fresh Dynamo state, each form from its own cache folder, empty or warm
    (:mod:`demos.topics.model_compile_cost`); steps until each pays for itself; and a
    shape-varying loop under each torch.compiler.set_stance."""
    require_torch()
    if caches not in CACHES:
        raise DemoError(f"caches must be 'warm' or 'bypassed', not {caches!r}")
    cfg, state = config(COST_LAYERS[device_kind()][0] if layers is None else layers), CACHES[caches]
    with threads():
        run.progress(0.02, "warming the compiler's imports…")
        warm_compiler(run)
        fill_caches(run, cfg, caches)
        m = zoo.torch_model(cfg)
        opt, (x, t) = zoo.optimizer(m), zoo.torch_data(cfg)
        steps = {"eager": (lambda: zoo.train_step(m, opt, x, t), sync_torch())}
        res: dict[str, Any] = {}
        for i, how in enumerate(("regional", "whole")):
            run.progress(0.05 + 0.3 * i, f"{how}: {'the whole stack' if i else 'one block, reused by every layer'} "
                                         f"compiled ({state} cache)…")
            fn, res[how] = first_step(run, cfg, how, caches)
            steps[how] = (fn, sync_torch())
        run.progress(0.55, "timing eager and both compiled steps, taking turns…")
        timed = {k: t.to_dict() for k, t in run.time_forms(steps, budget_s=budget_s * len(steps), settle=False).items()}
        run.progress(0.65, f"a shape-varying loop of one block under each stance ({state} cache)…")
        stance = stance_loops(cfg, caches)
    for how, r in res.items():
        r["steady"] = timed[how]
        r["compile_s"] = compile_seconds(r["first_s"], timed[how]["median_s"])
        r["break_even"] = break_even(r["compile_s"], timed["eager"]["median_s"], timed[how]["median_s"])
    return {"cfg": vars(cfg) | {}, "caches": caches, "eager": timed["eager"], **res,
            "stance": stance, "extra": _extra(cfg, f"training step, Dynamo fresh, compile caches {state}: ")}


def _stance(d: dict, stance: str) -> dict:
    return d["stance"][stance]


# The compile-cost slide: graph counts of whole vs regional, and what each stance does to a
# shape-varying loop (counts); regional compiling faster is compared, not thresholded
compile_cost_claims = Claims(
    Claim("whole stack: {0} graph; regional: {1} graphs (the first block's input needs no grad, the rest reuse one)",
          lambda d: (d["whole"]["graphs"], d["regional"]["graphs"]), "==", (1, 2), key="graphs"),
    Claim("from empty caches, compiling one block for every layer (regional) is quicker than the whole stack",
          lambda d: d["regional"]["compile_s"] < d["whole"]["compile_s"], key="regional_faster",
          applies=lambda d: d["caches"] == "bypassed",
          **regime(when=measured(lambda d: d["cfg"]["layers"], ">=", 4,
                                 "the stack has {x:g} layers, {cmp} {t:g}: the whole graph is that many blocks "
                                 "to compile, the regional one a block"))),
    Claim("set_stance default: the loop compiles once per sequence length, {threshold} times",
          lambda d: _stance(d, "default")["compiles"] if _stance(d, "default")["compiles"] == _stance(d, "default")[
              "shapes"] else None, "==", {"cpu": 3, "gpu": 6}, key="stance_default"),
    Claim("eager_on_recompile: {threshold} compile, then every length runs (eager)",
          lambda d: _stance(d, "eager_on_recompile")["compiles"]
          if _stance(d, "eager_on_recompile")["calls"] == _stance(d, "eager_on_recompile")["shapes"] else None,
          "==", 1, key="stance_eager"),
    Claim("fail_on_recompile raises at the second length ({threshold} call ran)",
          lambda d: _stance(d, "fail_on_recompile")["calls"]
          if "recompile" in (_stance(d, "fail_on_recompile")["error"] or "") else None, "==", 1, key="stance_fail"),
    device=_device,
)


compile_cost = Demo(
    "compile_cost", "Compile cost at model scale",
    # on a CPU the slide opens on 8 layers: at 4 the C++ builds both forms share dominate (~1.3×)
    controls=lambda kind: [Choice("layers", COST_LAYERS[kind][0], options=sorted(COST_LAYERS[kind]), match=True),
                           Choice("caches", "bypassed", label="compile caches",
                                  options=[("empty", "bypassed"), ("warm", "warm")], match=True)],
    measure=measure_compile_cost, figure=figure_compile_cost,
    panel="cold",  # the lesson is a compile: the slide opens on `make warm`'s result
    claims=compile_cost_claims,
    ask=asks.among("Compile the whole stack, or compile one block and reuse it for every layer (regional): "
                   "which compiles faster?", ("the whole stack", "regional: one block, reused",
                                              "about the same (within 10%)"), faster_compile,
                   lambda d: f"{d['whole']['compile_s']:.1f} s vs {d['regional']['compile_s']:.1f} s",
                   tells={"regional: one block, reused": (r"\b(?:layers|blocks) share (?:their )?code|compile time grows",)}),
)
