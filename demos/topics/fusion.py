"""Part 2 — what a compiler does once it sees a whole graph of ops.

Four optimisations from the seed chapter 'Optimizations' (seeds 000/001), each shown
happening and measured on the viewer's device. Six live demos, each declared once
(:class:`demos.deck.demo.Demo`) from a ``measure_*(run, …)`` (JSON-able data) and a pure
``figure_*`` (in :mod:`demos.topics.fusion_figures`):

1. kernel fusion  — ``kernels()`` (counts of the four forms, from the profiler, Inductor's
   generated code, the jaxpr and XLA's optimized HLO), ``timeline()`` (eager above compiled
   on one time axis, drawn by :mod:`demos.introspection.profiling`), ``latency()`` (median
   latency with spread, speedup and achieved bandwidth over N and dtype, beside the seed's figure);
2. buffer reuse   — ``memory()`` (peak memory eager vs compiled, and each form's buffers; what
   may be overwritten, and donation, is :mod:`demos.topics.reuse`);
3. relayout       — ``relayout()`` (the transposes XLA inserts for an einsum whose batch
   dimension sits in the middle, and what pre-transposing the operand saves);
4. dead code      — ``dead_code()`` (3 matmuls written, 2 executed once compiled).

The declarations give the panels, ``make record``/``make warm`` and the reference lookup. How a
form is timed or profiled and the relayout operands are made: :mod:`demos.topics.fusion_forms`;
which lines of generated code a figure shows: :mod:`demos.topics.fusion_code`.
"""
from __future__ import annotations

import re
from typing import Any, Callable

from demos.deck import asks
from demos.deck.claims import Claim, Claims, regime
from demos.deck.conditions import over_cache
from demos.deck.demo import Choice, Configs, Demo, Pow2
from demos.engine import plots
from demos.engine.devices import BACKENDS, device_kind, require_jax, torch_device
from demos.engine.errors import DemoError
from demos.engine.measurement import Run
from demos.engine.timing import sync_jax
from demos.engine.workload_defs import ITEMSIZE, get
from demos.engine.workloads import jitted, prepare
from demos.introspection import codegen, dynamo, hlo, profiling
from demos.topics.fusion_code import fused_hlo_lines, jaxpr_buffers, relayout_lines, wrapper_lines
from demos.topics.fusion_figures import (figure_dead_code, figure_kernels, figure_latency, figure_memory,
                                         figure_relayout, figure_timeline)
from demos.topics.fusion_forms import (DTYPES, WORKLOAD, add_kernel_times, default_n, n_dtype_controls,
                                       panel_n, profiled_compiled, relayout_inputs, time_form)
from demos.topics.fusion_reads import buffers, elements_moved, jax_memory, kernel_counts, kernel_named

DEAD = "mlp_dead_code"
BUDGET_S = 0.03  # per backend per redraw: timing four forms stays well under 0.5 s on 2 CPU cores
COUNT_WORKLOADS = ("complex_activation", "chain", "mlp_block", "mlp_dead_code")
# ---------------------------------------------------------------------------------------
# 1a. Kernel / op counts of the four forms
# ---------------------------------------------------------------------------------------
def measure_kernels(run: Run, workload: str = WORKLOAD, dtype: str = "float32",
                    params: dict | None = None) -> dict[str, Any]:
    """How many separate kernels/ops each form runs for one call of ``workload``."""
    w = get(workload)
    p = w.resolve(params, device_kind())
    device = torch_device()
    run.progress(0.1, "profiling eager…")
    prof = profiling.profile_run(prepare(workload, "torch_eager", p, dtype), label="torch eager")
    gpu = prof.get("device_lane") == "cuda"
    run.progress(0.35, "reading Inductor's generated code…")
    ind = codegen.workload_inductor_code(workload, p, dtype, device)
    forms: dict[str, Any] = {
        "torch_eager": {"count": prof["counts"]["kernels"] if gpu else prof["counts"]["ops"],
                        "names": prof["kernel_names"] if gpu else prof["op_names"],
                        "how": "profiler (GPU kernels)" if gpu else "profiler (aten ops)"},
        "torch_compile": {"count": ind.launches, "names": ind.kernels + [f"extern {e}" for e in ind.extern_calls],
                          "how": "generated code (kernels + extern)",
                          "kernels": ind.kernel_count, "extern": ind.extern_calls},
    }
    hlo_lines: list[str] = []
    try:
        run.progress(0.6, "lowering with jax.jit…")
        x = codegen.workload_xla_code(workload, p, dtype, device)
        forms["jax_eager"] = {"count": x.jaxpr_eqns, "names": [], "how": "jaxpr (one dispatch per eqn)"}
        forms["jax_jit"] = {"count": x.kernel_count, "names": x.fusions, "how": "optimized HLO (entry ops)",
                            "fusions": x.fusion_count}
        hlo_lines = fused_hlo_lines(x.entry)
    except DemoError as exc:
        forms["jax_eager"] = forms["jax_jit"] = {"count": None, "names": [], "how": str(exc)}
    run.progress(1.0, "")
    sizes = ", ".join(f"{k}={plots.pow2_label(v)}" for k, v in p.items())
    return {"workload": workload, "params": p, "dtype": dtype, "device": device, "forms": forms,
            "wrapper": wrapper_lines(ind), "hlo": hlo_lines,
            "eager_ops_written": len(w.eager_ops), "extra": f"{workload}, {sizes}, {dtype}"}


# on a GPU eager may launch more CUDA kernels than the 6 ops it issues: at least 6 there
kernels_claims = Claims(
    Claim({"cpu": WORKLOAD + ": {0} aten ops become {1} fused kernel (torch.compile) and {3} fusion (jax.jit)",
           "gpu": WORKLOAD + ": {0} CUDA kernels become {1} fused kernel (torch.compile) and {3} fusion (jax.jit)"},
          kernel_counts, {"cpu": "==", "gpu": (">=", "==", "==", "==")}, (6, 1, 1, 1),
          applies=lambda d: d["workload"] == WORKLOAD, key="fused",
          ask=asks.count("complex_activation: six tensor ops. Compiled by torch.compile, how many kernels does one "
                         "call run?", (2, 3), part=1, noun="kernel")),
)


kernels = Demo(
    "kernels", "Kernels per call, four forms",
    controls=[Choice("workload", WORKLOAD, options=COUNT_WORKLOADS, match=True),
              Choice("dtype", "float32", options=DTYPES)],
    measure=measure_kernels, figure=figure_kernels,
    configs=Configs(warm=[{"workload": w, "dtype": d} for w in COUNT_WORKLOADS for d in DTYPES]),
    claims=kernels_claims,
)


# ---------------------------------------------------------------------------------------
# 1b. Two-lane timeline (profiling.py draws it)
# ---------------------------------------------------------------------------------------
def measure_timeline(run: Run, N: int | None = None, dtype: str = "float32") -> dict[str, Any]:
    N = panel_n() if N is None else N
    run.progress(0.2, "profiling eager and compiled…")
    eager = prepare(WORKLOAD, "torch_eager", {"N": N}, dtype)
    comp = profiled_compiled(run, eager.workload.torch_fn)
    args = eager.args
    runs = [profiling.profile_run(eager, label="torch eager", passes=2),
            profiling.profile_run(lambda: comp(*args), sync=eager.sync, device=eager.device,
                                  label="torch.compile", passes=2)]
    return {"N": N, "dtype": dtype, "device": eager.device, "runs": runs,
            "extra": f"{WORKLOAD}, N={plots.pow2_label(N)}, {dtype}, profiled"}


timeline_claims = Claims(
    Claim("eager runs {0} kernels one after another, torch.compile {1}",
          lambda d: tuple(r["counts"]["kernels"] for r in d["runs"]), {"cpu": "==", "gpu": (">=", "==")}, (6, 1),
          key="kernels"),
)


timeline = Demo(
    "timeline", "Two-lane timeline: eager vs compiled",
    controls=n_dtype_controls(14), measure=measure_timeline, figure=figure_timeline,
    configs=Configs(warm=[{"dtype": d} for d in DTYPES]), claims=timeline_claims,
    ask=asks.among("The compiled lane runs one kernel that Inductor generated for complex_activation. What is it "
                   "named after?",
                   ("the function: complex_activation", "the ops it fused: add, cos, mul, relu, sin",
                    "its position only: kernel_0"), kernel_named,
                   lambda d: "…" + d["runs"][1]["kernel_names"][0].split("fused", 1)[-1]),
)


# ---------------------------------------------------------------------------------------
# 1c. Latency, speedup and bandwidth of the four forms
# ---------------------------------------------------------------------------------------
def measure_latency(run: Run, N: int | None = None, dtype: str = "float32", backends=BACKENDS,
                    budget_s: float = BUDGET_S) -> dict[str, Any]:
    N = panel_n() if N is None else N
    w = get(WORKLOAD)
    out: dict[str, Any] = {"N": N, "dtype": dtype, "device": torch_device(), "forms": {},
                           "extra": f"{WORKLOAD}, N={plots.pow2_label(N)}, {dtype}"}
    for i, b in enumerate(backends):
        run.progress(i / len(backends), f"timing {plots.label(b)}…")
        try:
            res = time_form(run, prepare(w, b, {"N": N}, dtype), budget_s)
        except DemoError as exc:
            if b.startswith("jax"):
                out["forms"][b] = {"error": str(exc)}
                continue
            raise
        res["bytes"] = w.bytes({"N": N}, dtype, fused=b in ("torch_compile", "jax_jit"))
        res["gbps"] = res["bytes"] / res["median_s"] / 1e9
        out["forms"][b] = res
    f = out["forms"]
    if out["device"] == "cuda":  # the kernels alone, from a profiler trace: the call's time is more
        run.progress(0.95, "profiling the kernels…")
        add_kernel_times(f, w, N, dtype)
    if "torch_eager" in f and "median_s" in f.get("torch_compile", {}):
        out["speedup_torch"] = f["torch_eager"]["median_s"] / f["torch_compile"]["median_s"]
    if "median_s" in f.get("jax_eager", {}) and "median_s" in f.get("jax_jit", {}):
        out["speedup_jax"] = f["jax_eager"]["median_s"] / f["jax_jit"]["median_s"]
    run.progress(1.0, "")
    return out


def _warm_latency(demo: Demo) -> None:
    """The four forms at the panel's N and the workload default, in both dtypes."""
    for dtype in DTYPES:
        for n in sorted({panel_n(), default_n()}):
            demo.run({"N": n, "dtype": dtype})


# On a GPU compiled beats eager several-fold. On a CPU the panel's N times ~3 calls per form and a
# loaded 2-core machine stalls either form's OpenMP threads by 10×, both ways: no margin holds, so
# the CPU speed claim is tests/test_fusion.py's ("faster" at 2^21, longer budgets, retries).
latency_claims = Claims(
    Claim("eager must move {0:g}N elements, fused {1:g}N", elements_moved, "==", (15, 3), key="bytes"),
    Claim("torch.compile beats torch eager by over {threshold:g}×", lambda d: d["speedup_torch"], ">",
          {"gpu": 2.0}, key="speedup", **regime(when=over_cache(lambda d: d["N"] * ITEMSIZE[d["dtype"]])),
          ask=asks.bands("Eager moves 15N elements per call, fused 3N. How many times faster is torch.compile "
                         "than eager here?", (1, 5), read=lambda d: d["speedup_torch"])),
)


latency = Demo(
    "latency", "Latency of the four forms",
    controls=n_dtype_controls(12), measure=measure_latency, figure=figure_latency,
    configs=Configs(warm=_warm_latency, record={"budget_s": 0.5}, quick={"budget_s": 0.05}), claims=latency_claims,
)


# ---------------------------------------------------------------------------------------
# 2. Buffer reuse: peak memory and the buffers each form allocates
# ---------------------------------------------------------------------------------------
def measure_memory(run: Run, N: int | None = None, dtype: str = "float32") -> dict[str, Any]:
    N = panel_n() if N is None else N
    device = torch_device()
    run.progress(0.2, "profiling memory…")
    out: dict[str, Any] = {"N": N, "dtype": dtype, "device": device, "forms": {},
                           "input_bytes": 2 * N * ITEMSIZE[dtype]}
    eager = prepare(WORKLOAD, "torch_eager", {"N": N}, dtype)
    out["forms"]["torch_eager"] = profiling.peak_memory(eager.fn, eager.sync, device)
    comp = prepare(WORKLOAD, "torch_compile", {"N": N}, dtype)
    comp.sync(comp.fn())
    out["forms"]["torch_compile"] = profiling.peak_memory(comp.fn, comp.sync, device)
    code = codegen.workload_inductor_code(WORKLOAD, {"N": N}, dtype, device)
    out["forms"]["torch_compile"]["code_buffers"] = code.buffers
    out["forms"]["torch_compile"]["reused"] = code.reused
    try:
        x = codegen.workload_xla_code(WORKLOAD, {"N": N}, dtype, device)
        jax = require_jax()
        jprep = prepare(WORKLOAD, "jax_eager", {"N": N}, dtype)
        jaxpr = jax.make_jaxpr(jprep.workload.jax_fn)(*jprep.args)
        vals = jaxpr_buffers(jaxpr, N)  # N bytes and up: scalars/broadcast constants XLA folds left out
        out["forms"]["jax_eager"] = {"peak_bytes": sum(v["bytes"] for v in vals), "buffers": vals,
                                     "how": "jaxpr: each result is bound to a name, so it lives until return"}
        mem = x.memory or {}
        temp, outb = int(mem.get("temp_size_in_bytes", 0)), int(mem.get("output_size_in_bytes", 0))
        out["forms"]["jax_jit"] = {"peak_bytes": temp + outb, "temp_bytes": temp, "output_bytes": outb,
                                   "buffers": [], "how": "compiled.memory_analysis(): temp + output"}
    except DemoError as exc:
        out["jax_error"] = str(exc)
    out["extra"] = f"{WORKLOAD}, N={plots.pow2_label(N)}, {dtype}; torch: {out['forms']['torch_eager']['how']}"
    return out


memory_claims = Claims(
    Claim("torch.compile needs under 1/{threshold:g} of eager's peak memory",
          lambda d: d["forms"]["torch_eager"]["peak_bytes"] / max(d["forms"]["torch_compile"]["peak_bytes"], 1),
          ">", {"gpu": 3}, key="peak",
          ask=asks.bands("One call: eager's peak memory ÷ torch.compile's. How large?", (1.5, 5),
                         tells={"over 5×": (r"\bsix (?:results|buffers|tensors)\b[^.\n]*\b(?:live|alive)\b", r"only the output")})),
    Claim("torch eager allocates {0} N-sized buffers, torch.compile {1} (the output)", buffers, "==",
          {"cpu": (6, 1)}, key="buffers"),
    Claim("jax.jit: {0} bytes of temporaries, {1:g} output", jax_memory, "==", {"cpu": (0, 1)}, key="jax"),
)


memory = Demo(
    "memory", "Buffer reuse: peak memory",
    controls=n_dtype_controls(14), measure=measure_memory, figure=figure_memory,
    configs=Configs(warm=[{"dtype": d} for d in DTYPES]), claims=memory_claims,
)


# ---------------------------------------------------------------------------------------
# 3. Relayout: einsum with a batch dimension in the middle
# ---------------------------------------------------------------------------------------
RELAYOUT_DEFAULTS = {"B": 64, "H": 4, "D": 1024, "K": 256}  # the seed's (64, 4, 1024) operand


def einsum_as_written(x, w):
    import jax.numpy as jnp

    return jnp.einsum("bhd,hdk->bhk", x, w)  # x: (B, H, D), heads in the middle


def einsum_pretransposed(xt, w):
    import jax.numpy as jnp

    return jnp.einsum("hbd,hdk->hbk", xt, w)  # xt: (H, B, D), heads leading


def measure_relayout(run: Run, B: int = 64, H: int = 4, D: int = 1024, K: int = 256, dtype: str = "float32",
                     budget_s: float = BUDGET_S) -> dict[str, Any]:
    require_jax()
    run.progress(0.2, "lowering and timing the einsum…")
    x, xt, w = relayout_inputs(run, B, H, D, K, dtype)
    written = hlo.xla_code(einsum_as_written, x, w)
    pre = hlo.xla_code(einsum_pretransposed, xt, w)
    out: dict[str, Any] = {"B": B, "H": H, "D": D, "K": K, "dtype": dtype, "backend": written.backend,
                           "forms": {}, "extra": f"einsum B,H,D,K={B},{H},{D},{K}, {dtype}, "
                                                 f"XLA backend {written.backend}"}
    sync = sync_jax()
    for name, fn, args, code in (("as_written", einsum_as_written, (x, w), written),
                                 ("pretransposed", einsum_pretransposed, (xt, w), pre)):
        f = jitted(fn)
        sync(f(*args))
        t = run.time(lambda: f(*args), sync, warmup=0, budget_s=budget_s, min_samples=3)
        out["forms"][name] = {
            **t.to_dict(),
            "transposes": len(code.transposes),
            "entry_ops": code.entry_ops,
            "excerpt": relayout_lines(code),
        }
    out["relayout_inserted"] = out["forms"]["as_written"]["transposes"] > out["forms"]["pretransposed"]["transposes"]
    return out


def _warm_relayout(demo: Demo) -> None:
    try:
        demo.run({"budget_s": 0.01})
    except DemoError:  # no JAX here: the panel says so in one line
        pass


relayout = Demo(
    "relayout", "Relayout: where XLA puts the heads",
    controls=[Choice("H", RELAYOUT_DEFAULTS["H"], label="heads H", options=[1, 2, 4, 8]),
              Choice("B", RELAYOUT_DEFAULTS["B"], label="batch B", options=[16, 32, 64, 128])],
    measure=measure_relayout, figure=figure_relayout,
    configs=Configs(warm=_warm_relayout, record={"budget_s": 0.5}, quick={"budget_s": 0.05}),
    # on a GPU the slide makes no claim: XLA picks its own layouts there (the verdict line says which)
    claims=Claims(Claim("XLA on a CPU moves the heads in front for the einsum as written; heads-first data needs "
                        "{threshold} transposes",
                        lambda d: d["forms"]["pretransposed"]["transposes"] if d["relayout_inserted"] else None,
                        "==", {"cpu": 0}, key="relayout")),
    # JAX's StableHLO holds a transpose (dot_general puts the batch dimension first): with none left
    # in the optimized HLO, XLA reordered through the layouts it chose (H100 record: {1,0,2})
    ask=asks.among("einsum('bhd,hdk->bhk'): the heads h, the matmul's batch dimension, sit in the middle of x. "
                   "What does XLA's optimized program do with them?",
                   ("no transpose op: XLA changes layouts instead",
                    "transpose ops: heads copied in front before the dot, and back after",
                    "no batched dot: one matmul per head"),
                   lambda d: 1 if d["relayout_inserted"] else 0,
                   lambda d: f"{d['forms']['as_written']['transposes']} transpose op(s) as written, "
                             f"{d['forms']['pretransposed']['transposes']} heads-first",
                   # the seed's account of what XLA does is choice B, in other words
                   tells={"transpose ops: heads copied in front before the dot, and back after":
                          (r"\bheads? (?:in|to the) front\b", r"\btranspos\w* (?:it |them )?back\b")}),
)


# ---------------------------------------------------------------------------------------
# 4. Dead-code elimination
# ---------------------------------------------------------------------------------------
def measure_dead_code(run: Run, B: int | None = None, dtype: str = "float32",
                      budget_s: float = BUDGET_S) -> dict[str, Any]:
    w = get(DEAD)
    p = w.resolve({"B": B} if B else None, device_kind())
    device = torch_device()
    prof = profiling.profile_run(prepare(w, "torch_eager", p, dtype), label="torch eager")
    # count the matmul ops the code issued (each launches one GEMM; on Hopper cuBLAS kernels are
    # named nvjet_* rather than *gemm*, so kernel names are not a reliable count)
    counts = {"torch_eager": sum(1 for n in prof["op_names"] if n in ("mm", "matmul", "addmm", "bmm"))}
    how = {"torch_eager": "profiler: aten::mm ops"}
    run.progress(0.2, "reading generated code…")
    counts["torch_compile"] = codegen.workload_inductor_code(w, p, dtype, device).matmuls
    how["torch_compile"] = "Inductor code: extern mm calls"
    # where the dead matmul goes: Dynamo's FX graph still holds all three `@` (AOTAutograd's
    # dead-code pass drops one before Inductor); JAX drops it while lowering, so StableHLO has two
    prep = prepare(w, "torch_eager", p, dtype)
    stages = {"Dynamo graph": sum(len(re.findall(r" @ |\b(?:matmul|mm)\(", g))
                                  for g in dynamo.capture(w.torch_fn, *prep.args)["graphs"]),
              "Inductor code": counts["torch_compile"]}
    try:
        x = codegen.workload_xla_code(w, p, dtype, device)
        counts["jax_eager"], counts["jax_jit"] = x.jaxpr_matmuls, x.matmuls
        how["jax_eager"], how["jax_jit"] = "jaxpr: dot_general", "optimized HLO: dot"
        stages.update({"jaxpr": x.jaxpr_matmuls, "StableHLO": x.stablehlo_matmuls, "optimized HLO": x.matmuls})
    except DemoError:
        pass
    times = {}
    for i, b in enumerate(BACKENDS):
        if b.startswith("jax") and "jax_jit" not in counts:
            continue
        run.progress(0.3 + 0.7 * i / 4, f"timing {plots.label(b)}…")
        times[b] = time_form(run, prepare(w, b, p, dtype), budget_s)
    run.progress(1.0, "")
    return {"params": p, "dtype": dtype, "device": device, "matmuls": counts, "how": how, "stages": stages,
            "times": times,
            "flops_ratio": w.flops(p, fused=True) / w.flops(p, fused=False),
            "extra": f"{DEAD}, B,D,F={p['B']},{p['D']},{p['F']}, {dtype}"}


dead_code_claims = Claims(
    Claim("the dead matmul is gone: {0} matmuls → {1} (torch.compile and jax.jit)",
          lambda d: tuple(d["matmuls"].get(b) for b in BACKENDS), "==", (3, 2, 3, 2), key="matmuls",
          ask=asks.count("Three matmuls written, one result never read. How many matmuls does torch.compile run?",
                         (1, 3), part=1, noun="matmul",
                         # naming the pass, or saying unused work goes, is saying the third matmul goes
                         tells={"2 matmuls": (r"dead[- ]code elimination",
                                              r"(?:delet|remov|eliminat|drop|disappear)\w*[^.\n]{0,40}\b(?:unused|dead|nobody)",
                                              r"\b(?:unused|dead|nobody asked)[^.\n]{0,40}(?:delet|remov|eliminat|drop|disappear)")})),
    Claim("the compiled forms do 2/3 of the FLOPs (compiled ÷ eager within {lo:g}–{hi:g})",
          lambda d: d["flops_ratio"], "within", (0.66, 0.67), key="flops"),
)


dead_code = Demo(
    "dead_code", "Dead-code elimination",
    controls=lambda kind: [Pow2("B", get(DEAD).defaults(kind)["B"], label="rows B", lo=5,
                                hi=11 if kind == "cpu" else 13),
                           Choice("dtype", "float32", options=DTYPES)],
    measure=measure_dead_code, figure=figure_dead_code,
    configs=Configs(warm=[{"dtype": d} for d in DTYPES], record={"budget_s": 0.5}, quick={"budget_s": 0.05}),
    claims=dead_code_claims,
)
