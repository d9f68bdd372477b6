"""Part 2 — what a compiler does once it sees the whole function.

Four optimisations from the seed chapter 'Optimizations' (seeds 000/001), each shown
happening and measured on the viewer's device. Six live demos, each declared once
(:class:`demos.deck.demo.Demo`) from a ``measure_*`` (JSON-able data) and a pure ``figure_*``:

1. kernel fusion  — ``kernels()`` (counts of the four forms, from the profiler, Inductor's
   generated code, the jaxpr and XLA's optimized HLO), ``timeline()`` (eager above compiled
   on one time axis, drawn by :mod:`demos.introspection.profiling`), ``latency()`` (median
   latency with spread, speedup and achieved bandwidth over N and dtype, beside the seed's figure);
2. buffer reuse   — ``memory()`` (peak memory eager vs compiled, and each form's buffers);
3. relayout       — ``relayout()`` (the transposes XLA inserts for an einsum whose batch
   dimension sits in the middle, and what pre-transposing the operand saves);
4. dead code      — ``dead_code()`` (3 matmuls written, 2 executed once compiled).

The declarations give the panels, ``make record``/``make warm`` and the reference lookup.
"""
from __future__ import annotations

import math
import re
import time
from typing import Any, Callable

from demos import BACKENDS
from demos.deck.claims import Claim, Claims
from demos.deck.demo import Choice, Demo, Pow2, Progress
from demos.engine import plots
from demos.engine.devices import device_kind, require_jax, require_torch, torch_device
from demos.engine.errors import DemoError
from demos.engine.timing import fmt_seconds, measure, sync_jax
from demos.engine.workloads import ITEMSIZE, get, jitted, prepare
from demos.introspection import codegen, profiling
from demos.engine.protocol import fresh_function, kept

PART = 2

WORKLOAD = "complex_activation"
DEAD = "mlp_dead_code"
# seed chapter 'Optimizations' (000): 731 µs → 144 µs at N = 20M on the author's GPU, 6 kernels → 1
SEED = {"N": 20_000_000, "eager_s": 731e-6, "compiled_s": 144e-6}
COUNT_WORKLOADS = ("complex_activation", "chain", "mlp_block", "mlp_dead_code")
DTYPES = ("float32", "bfloat16")
BUDGET_S = 0.03  # per backend per redraw: timing four forms stays well under 0.5 s on 2 CPU cores
N_HI = {"cpu": 23, "gpu": 26}  # top of the N sliders (log2): the seed's 20M is ~2^24
MONO = {"family": "monospace", "fontsize": 11.5}


def _noop(_fraction: float, _message: str = "") -> None:
    pass


def default_n(kind: str | None = None) -> int:
    """The workload's default N for the device (2^21 on a CPU, 20M on a GPU)."""
    return get(WORKLOAD).defaults(kind or device_kind())["N"]


def panel_n(kind: str | None = None) -> int:
    """N the live panels open at: 2^19 on a CPU (timing the four forms stays under 0.5 s on
    two cores — XLA's CPU sin/cos alone take ~10 ms at 2^20), the workload default (the
    seed's 20M) on a GPU. The claims are checked at the workload default too."""
    kind = kind or device_kind()
    return 2**19 if kind == "cpu" else default_n(kind)


def _pow2_label(n: int) -> str:
    k = math.log2(n) if n > 0 else 0
    return f"2^{int(k)}" if k == int(k) else f"{n:,}"


def _where(d: dict) -> str:
    """'this machine' for a live run, the recording machine's short name for a recorded one."""
    return f"recorded: {d.get('machine_short', '?')}" if d.get("recorded") else "this machine"


_WARMED: set = kept("topics.fusion._WARMED", set())


def _time(prep, budget_s: float = BUDGET_S) -> dict[str, Any]:
    """Median and p10–p90 of a prepared call; the first call (a compile) is timed apart, once."""
    key = (prep.workload.name, prep.backend, tuple(sorted(prep.params.items())), prep.dtype, prep.device)
    compile_s = None
    if key not in _WARMED:
        t0 = time.perf_counter()
        prep.sync(prep.fn())
        compile_s = time.perf_counter() - t0
        _WARMED.add(key)
    t = measure(prep.fn, prep.sync, warmup=0, budget_s=budget_s, min_samples=3)
    return {"median_s": t.median, "p10_s": t.p10, "p90_s": t.p90, "n": t.n, "first_s": compile_s}


def _text_block(ax, lines: list[str], title: str = "", colors: list[str] | None = None, y0: float = 0.97,
                step: float = 0.075) -> float:
    ax.axis("off")
    y = y0
    if title:
        ax.text(0.0, y, title, fontsize=14, fontweight="bold", va="top", transform=ax.transAxes)
        y -= step * 1.2
    for i, line in enumerate(lines):
        col = (colors[i] if colors and i < len(colors) else "#222222")
        ax.text(0.0, y, line, va="top", color=col, transform=ax.transAxes, **MONO)
        y -= step
    return y


def _form_bars(ax, names: list[str], heights: list[float], texts: list[str], ylabel: str,
               ref: list[float | None] | None = None, ref_label: str = "", **text_kw) -> None:
    """One bar per form in its colour with a label on top; a recorded run as dashed marks."""
    ax.bar(range(len(names)), heights, color=[plots.color(b) for b in names], width=0.62)
    for i, (h, s) in enumerate(zip(heights, texts)):
        ax.text(i, h, s, ha="center", va="bottom", **text_kw)
    if ref is not None:
        for i, r in enumerate(ref):
            if r is not None:
                ax.plot([i - 0.31, i + 0.31], [r, r], color=plots.PALETTE["floor"], lw=2.5, ls="--")
        ax.plot([], [], color=plots.PALETTE["floor"], lw=2.5, ls="--", label=ref_label)
        ax.legend(loc="upper right", fontsize=11.5)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels([plots.label(b) for b in names], rotation=12)
    ax.set_ylabel(ylabel)
    ax.grid(axis="x", visible=False)


def _spread(ax, x: float, r: dict, scale: float = 1e3, **kw) -> float:
    """Error bar p10–p90 around the median of a timing dict; returns the median (scaled)."""
    med = r["median_s"] * scale
    ax.errorbar(x, med, yerr=[[med - r["p10_s"] * scale], [r["p90_s"] * scale - med]], color="#222222",
                capsize=3, **kw)
    return med


def _n_dtype(lo: int) -> Callable[[str], list]:
    """Controls N (2^lo … the device's top, opening at the panel N) and dtype."""
    return lambda kind: [Pow2("N", panel_n(kind), lo=lo, hi=N_HI[kind]),
                         Choice("dtype", "float32", options=DTYPES)]


# ---------------------------------------------------------------------------------------
# 1a. Kernel / op counts of the four forms
# ---------------------------------------------------------------------------------------
def measure_kernels(workload: str = WORKLOAD, dtype: str = "float32", params: dict | None = None,
                    progress: Progress = _noop) -> dict[str, Any]:
    """How many separate kernels/ops each form runs for one call of ``workload``."""
    w = get(workload)
    p = w.resolve(params, device_kind())
    device = torch_device()
    progress(0.1, "profiling eager…")
    prof = profiling.profile_run(prepare(workload, "torch_eager", p, dtype), label="torch eager")
    gpu = prof.get("device_lane") == "cuda"
    progress(0.35, "reading Inductor's generated code…")
    ind = codegen.workload_inductor_code(workload, p, dtype, device)
    forms: dict[str, Any] = {
        "torch_eager": {"count": prof["counts"]["kernels"] if gpu else prof["counts"]["ops"],
                        "names": prof["kernel_names"] if gpu else prof["op_names"],
                        "how": "profiler (GPU kernels)" if gpu else "profiler (aten ops)"},
        "torch_compile": {"count": ind.launches, "names": ind.kernels + [f"extern {e}" for e in ind.extern_calls],
                          "how": "generated code (kernels + extern)",
                          "kernels": ind.kernel_count, "extern": ind.extern_calls},
    }
    wrapper = [s for s in ind.wrapper.splitlines()
               if not s.startswith(("assert_size_stride", "args.clear", "del ", "#", "return"))
               and ("(" in s or "reuse" in s) and not s.startswith("arg")
               and not re.match(r"^\w+ = reinterpret_tensor\(", s)]
    calls = [s for s in wrapper if "extern_kernels." in s or any(s.startswith(k) for k in ind.kernels)]
    if len(calls) >= 3:
        wrapper = calls  # what runs; allocations only when there is room
    hlo_lines: list[str] = []
    try:
        progress(0.6, "lowering with jax.jit…")
        x = codegen.workload_xla_code(workload, p, dtype, device)
        forms["jax_eager"] = {"count": x.jaxpr_eqns, "names": [], "how": "jaxpr (one dispatch per eqn)"}
        forms["jax_jit"] = {"count": x.kernel_count, "names": x.fusions, "how": "optimized HLO (entry ops)",
                            "fusions": x.fusion_count}
        hlo_lines = codegen.excerpt(x.entry, [r"^(ROOT )?%\S+ = .* (fusion|dot|custom-call|copy|transpose)\("],
                                    max_lines=3, width=62)
    except DemoError as exc:
        forms["jax_eager"] = forms["jax_jit"] = {"count": None, "names": [], "how": str(exc)}
    progress(1.0, "")
    sizes = ", ".join(f"{k}={_pow2_label(v)}" for k, v in p.items())
    return {"workload": workload, "params": p, "dtype": dtype, "device": device, "forms": forms,
            "wrapper": [codegen._shorten(s, 62) for s in wrapper[:5]], "hlo": hlo_lines,
            "eager_ops_written": len(w.eager_ops), "extra": f"{workload}, {sizes}, {dtype}"}


def figure_kernels(data: dict[str, Any], reference: dict | None = None):
    fig, (ax, txt) = plots.figure(1, 2, width_ratios=[1.0, 1.25])
    forms = data["forms"]
    counts = [forms.get(b, {}).get("count") for b in BACKENDS]
    ref = None if reference is None else [reference["forms"].get(b, {}).get("count") for b in BACKENDS]
    _form_bars(ax, list(BACKENDS), [c or 0 for c in counts], ["n/a" if c is None else str(c) for c in counts],
               "separate kernels / ops per call", ref, f"recorded: {(reference or {}).get('machine_short')}",
               fontsize=16.5, fontweight="bold")
    ax.set_ylim(0, max([c or 0 for c in counts] + [1]) * 1.3 + 0.5)
    c = counts  # in BACKENDS order: torch eager, torch.compile, JAX op-by-op, jax.jit
    ax.set_title(f"{data['workload']}: {c[0]} → {c[1]} (torch), {c[2]} → {c[3]} (JAX)", fontsize=15)
    y = _text_block(txt, data.get("wrapper") or ["(no wrapper lines)"],
                    "Inductor's call(): what runs", [plots.color("torch_compile")] * 6)
    if data.get("hlo"):
        _text_block(txt, data["hlo"], "XLA's optimized HLO (entry)", [plots.color("jax_jit")] * 6, y0=y - 0.04)
    hows = " · ".join(forms[b]["how"].split(" (")[0] for b in BACKENDS if b in forms)
    txt.text(0.0, -0.16, "counted from (left to right):\n" + hows, fontsize=11, color="#555555", va="bottom",
             transform=txt.transAxes)
    plots.stamp_figure(fig, data, reference)
    return fig


def _counts(d: dict[str, Any]) -> tuple:
    """Eager ops (kernels on a GPU), torch.compile's launches, jax.jit's entry ops and its fusions."""
    f = d["forms"]
    return (f["torch_eager"]["count"], f["torch_compile"]["count"], f.get("jax_jit", {}).get("count"),
            f.get("jax_jit", {}).get("fusions"))


# on a GPU eager may launch more CUDA kernels than the 6 ops it issues: at least 6 there
kernels_claims = Claims(
    Claim({"cpu": WORKLOAD + ": {0} aten ops become {1} fused kernel (torch.compile) and {3} fusion (jax.jit)",
           "gpu": WORKLOAD + ": {0} CUDA kernels become {1} fused kernel (torch.compile) and {3} fusion (jax.jit)"},
          _counts, {"cpu": "==", "gpu": (">=", "==", "==", "==")}, (6, 1, 1, 1),
          applies=lambda d: d["workload"] == WORKLOAD, key="fused"),
)


kernels = Demo(
    "kernels", "Kernels per call, four forms",
    controls=[Choice("workload", WORKLOAD, options=COUNT_WORKLOADS), Choice("dtype", "float32", options=DTYPES)],
    measure=measure_kernels, figure=figure_kernels, match=("workload",),
    warm=[{"workload": w, "dtype": d} for w in COUNT_WORKLOADS for d in DTYPES], claims=kernels_claims,
)


# ---------------------------------------------------------------------------------------
# 1b. Two-lane timeline (profiling.py draws it)
# ---------------------------------------------------------------------------------------
_PROFILED_COMPILED: dict[str, Callable] = kept("topics.fusion._PROFILED_COMPILED", {})


def _profiled_compiled(fn: Callable) -> Callable:
    """torch.compile of a fresh copy of ``fn`` whose C++ kernels emit profiler events.

    A separate code object keeps the deck's shared compiled wrapper untouched (no reset)."""
    torch = require_torch()
    key = fn.__qualname__
    if key not in _PROFILED_COMPILED:
        _PROFILED_COMPILED[key] = torch.compile(fresh_function(fn, "profiled"))
    compiled = _PROFILED_COMPILED[key]

    def call(*args):
        import torch._inductor.config as ic

        with ic.patch({"cpp.enable_kernel_profile": True}):
            return compiled(*args)

    return call


def measure_timeline(N: int | None = None, dtype: str = "float32", progress: Progress = _noop) -> dict[str, Any]:
    N = panel_n() if N is None else N
    progress(0.2, "profiling eager and compiled…")
    eager = prepare(WORKLOAD, "torch_eager", {"N": N}, dtype)
    comp = _profiled_compiled(eager.workload.torch_fn)
    args = eager.args
    runs = [profiling.profile_run(eager, label="torch eager", passes=2),
            profiling.profile_run(lambda: comp(*args), sync=eager.sync, device=eager.device,
                                  label="torch.compile", passes=2)]
    return {"N": N, "dtype": dtype, "device": eager.device, "runs": runs,
            "extra": f"{WORKLOAD}, N={_pow2_label(N)}, {dtype}, profiled"}


def figure_timeline(data: dict[str, Any], reference: dict | None = None):
    runs = data["runs"]
    k = [r["counts"]["kernels"] for r in runs]
    spans = [r.get("span_us") or 0.0 for r in runs]
    title = (f"eager {k[0]} kernels, {fmt_seconds(spans[0] * 1e-6)}  →  compiled {k[1]} kernel"
             f"{'s' * (k[1] != 1)}, {fmt_seconds(spans[1] * 1e-6)}")
    if reference is not None and reference.get("runs"):
        rr = reference["runs"]
        title += (f"\nrecorded on {reference.get('machine_short', '?')}, N={reference['N']:,}: "
                  f"{rr[0]['counts']['kernels']} → {rr[1]['counts']['kernels']}, "
                  f"{fmt_seconds((rr[0]['span_us'] or 0) * 1e-6)} → {fmt_seconds((rr[1]['span_us'] or 0) * 1e-6)}")
    fig = profiling.timeline_figure(runs, ["eager", "torch.compile"], title=title)
    plots.text_floor(fig)  # the shared timeline's 10 pt lane names and notes
    plots.stamp_figure(fig, data, reference)
    return fig


timeline = Demo(
    "timeline", "Two-lane timeline: eager vs compiled",
    controls=_n_dtype(14), measure=measure_timeline, figure=figure_timeline,
    warm=[{"dtype": d} for d in DTYPES],
    claims=Claims(Claim("eager runs {0} kernels one after another, torch.compile {1}",
                        lambda d: tuple(r["counts"]["kernels"] for r in d["runs"]),
                        {"cpu": "==", "gpu": (">=", "==")}, (6, 1), key="kernels")),
)


# ---------------------------------------------------------------------------------------
# 1c. Latency, speedup and bandwidth of the four forms
# ---------------------------------------------------------------------------------------
def measure_latency(N: int | None = None, dtype: str = "float32", backends=BACKENDS,
                    budget_s: float = BUDGET_S, progress: Progress = _noop) -> dict[str, Any]:
    N = panel_n() if N is None else N
    w = get(WORKLOAD)
    out: dict[str, Any] = {"N": N, "dtype": dtype, "device": torch_device(), "forms": {},
                           "extra": f"{WORKLOAD}, N={_pow2_label(N)}, {dtype}"}
    for i, b in enumerate(backends):
        progress(i / len(backends), f"timing {plots.label(b)}…")
        try:
            res = _time(prepare(w, b, {"N": N}, dtype), budget_s)
        except DemoError as exc:
            if b.startswith("jax"):
                out["forms"][b] = {"error": str(exc)}
                continue
            raise
        res["bytes"] = w.bytes({"N": N}, dtype, fused=b in ("torch_compile", "jax_jit"))
        res["gbps"] = res["bytes"] / res["median_s"] / 1e9
        out["forms"][b] = res
    f = out["forms"]
    if "torch_eager" in f and "median_s" in f.get("torch_compile", {}):
        out["speedup_torch"] = f["torch_eager"]["median_s"] / f["torch_compile"]["median_s"]
    if "median_s" in f.get("jax_eager", {}) and "median_s" in f.get("jax_jit", {}):
        out["speedup_jax"] = f["jax_eager"]["median_s"] / f["jax_jit"]["median_s"]
    progress(1.0, "")
    return out


def figure_latency(data: dict[str, Any], reference: dict | None = None):
    from matplotlib.ticker import NullFormatter

    fig, (ax, bw) = plots.figure(1, 2, width_ratios=[1.6, 1.0])
    groups = [(f"{_where(data)}\nN={_pow2_label(data['N'])}, {data['dtype']}", data["forms"], None)]
    if reference is not None:
        groups.append((f"{_where(reference)[:32]}\nN={reference['N']:,}, {reference['dtype']}",
                       reference["forms"], "//"))
    seed = {"torch_eager": {"median_s": SEED["eager_s"]}, "torch_compile": {"median_s": SEED["compiled_s"]}}
    groups.append(("seed's GPU\n(reported), N=20M", seed, ".."))
    width = 0.2
    for gi, (_name, forms, hatch) in enumerate(groups):
        for bi, b in enumerate(BACKENDS):
            r = forms.get(b)
            if not r or "median_s" not in r:
                continue
            x = gi + (bi - 1.5) * width
            ax.bar(x, r["median_s"] * 1e3, width * 0.92, color=plots.color(b), hatch=hatch, edgecolor="white",
                   label=plots.label(b) if gi == 0 else None)
            if r.get("p10_s") is not None:
                _spread(ax, x, r, lw=1)
        for pair, x0 in ((("torch_eager", "torch_compile"), -1.0), (("jax_eager", "jax_jit"), 1.0)):
            a, c = forms.get(pair[0], {}), forms.get(pair[1], {})
            if "median_s" in a and "median_s" in c:
                top = max(a.get("p90_s") or a["median_s"], c.get("p90_s") or c["median_s"]) * 1e3
                ax.text(gi + x0 * width, top * 1.3, f"{a['median_s'] / c['median_s']:.1f}×", ha="center",
                        fontsize=14, fontweight="bold", color=plots.color(pair[1]))
    ax.set_yscale("log")
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([g[0] for g in groups], fontsize=12)
    ax.set_ylabel("median latency per call (ms, log)\nbars: p10–p90")
    lo, hi = ax.get_ylim()
    ax.set_ylim(lo, hi * 4)
    ax.grid(axis="x", visible=False)
    ax.set_title("median latency (colours as on the right) and speedup", fontsize=14)
    # bandwidth: bytes the form must move ÷ median time
    forms = data["forms"]
    names = [b for b in BACKENDS if "gbps" in forms.get(b, {})]
    bw.barh(range(len(names)), [forms[b]["gbps"] for b in names], color=[plots.color(b) for b in names])
    for i, b in enumerate(names):
        bw.text(forms[b]["gbps"], i, f" {forms[b]['gbps']:.1f} GB/s\n moves {forms[b]['bytes'] / 2**20:.0f} MiB",
                va="center", fontsize=11.5)
    bw.set_yticks(range(len(names)))
    bw.set_yticklabels([plots.label(b) for b in names])
    bw.invert_yaxis()
    bw.set_xlim(0, max([forms[b]["gbps"] for b in names] + [1e-9]) * 1.8)
    bw.set_xlabel("achieved bandwidth (GB/s)")
    bw.set_title("eager moves 15N, fused 3N elements", fontsize=14)
    bw.grid(axis="y", visible=False)
    plots.stamp_figure(fig, data, reference)
    return fig


def _warm_latency() -> None:
    """The four forms at the panel's N and the workload default, in both dtypes."""
    for dtype in DTYPES:
        for n in sorted({panel_n(), default_n()}):
            latency.run({"N": n, "dtype": dtype})


def _elements_moved(d: dict[str, Any]) -> tuple:
    """Elements each torch form must move, in units of N (bytes ÷ N ÷ itemsize)."""
    n = d["N"] * ITEMSIZE[d["dtype"]]
    return tuple(d["forms"][b]["bytes"] / n for b in ("torch_eager", "torch_compile"))


# On a GPU compiled beats eager several-fold. On a CPU the panel's N times ~3 calls per form and a
# loaded 2-core machine stalls either form's OpenMP threads by 10×, both ways: no margin holds, so
# the CPU speed claim is tests/test_fusion.py's ("faster" at 2^21, longer budgets, retries).
latency_claims = Claims(
    Claim("eager must move {0:g}N elements, fused {1:g}N", _elements_moved, "==", (15, 3), key="bytes"),
    Claim("torch.compile beats torch eager by over {threshold:g}×", lambda d: d["speedup_torch"], ">",
          {"gpu": 2.0}, key="speedup"),
)


latency = Demo(
    "latency", "Latency of the four forms",
    controls=_n_dtype(12), measure=measure_latency, figure=figure_latency,
    record={"budget_s": 0.5}, record_quick={"budget_s": 0.05}, warm=_warm_latency, claims=latency_claims,
)


# ---------------------------------------------------------------------------------------
# 2. Buffer reuse: peak memory and the buffers each form allocates
# ---------------------------------------------------------------------------------------
def _torch_peak(fn: Callable[[], Any], sync, device: str) -> dict[str, Any]:
    """Peak bytes allocated during one call above what existed before, and the allocations."""
    torch = require_torch()
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        out = fn()
        sync(out)
        peak = torch.cuda.max_memory_allocated() - base
        del out
        how = "torch.cuda.max_memory_allocated"  # the allocator gives the peak; names: the profiler
    else:
        peak, how = None, "profiler memory events"
    from torch.profiler import ProfilerActivity, profile

    with profiling.quiet_native_stderr(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        out = fn()
        sync(out)
        del out
    allocs, cur, top = [], 0, 0
    for e in sorted(prof.events(), key=lambda e: e.time_range.start):
        d = getattr(e, "self_device_memory_usage" if device.startswith("cuda") else "self_cpu_memory_usage", 0)
        if not d:
            continue
        cur += d
        top = max(top, cur)
        if d > 0:
            allocs.append({"op": e.name.replace("aten::", ""), "bytes": int(d)})
    return {"peak_bytes": int(top if peak is None else peak), "buffers": allocs, "how": how}


def measure_memory(N: int | None = None, dtype: str = "float32", progress: Progress = _noop) -> dict[str, Any]:
    N = panel_n() if N is None else N
    device = torch_device()
    progress(0.2, "profiling memory…")
    out: dict[str, Any] = {"N": N, "dtype": dtype, "device": device, "forms": {},
                           "input_bytes": 2 * N * ITEMSIZE[dtype]}
    eager = prepare(WORKLOAD, "torch_eager", {"N": N}, dtype)
    out["forms"]["torch_eager"] = _torch_peak(eager.fn, eager.sync, device)
    comp = prepare(WORKLOAD, "torch_compile", {"N": N}, dtype)
    comp.sync(comp.fn())
    out["forms"]["torch_compile"] = _torch_peak(comp.fn, comp.sync, device)
    code = codegen.workload_inductor_code(WORKLOAD, {"N": N}, dtype, device)
    out["forms"]["torch_compile"]["code_buffers"] = code.buffers
    out["forms"]["torch_compile"]["reused"] = code.reused
    try:
        x = codegen.workload_xla_code(WORKLOAD, {"N": N}, dtype, device)
        jax = require_jax()
        jprep = prepare(WORKLOAD, "jax_eager", {"N": N}, dtype)
        jaxpr = jax.make_jaxpr(jprep.workload.jax_fn)(*jprep.args)
        vals = []
        for e in jaxpr.jaxpr.eqns:
            for v in e.outvars:
                nbytes = int(math.prod(v.aval.shape)) * v.aval.dtype.itemsize
                if nbytes >= N:  # skip scalars/broadcast constants folded by XLA
                    vals.append({"op": e.primitive.name, "bytes": nbytes})
        out["forms"]["jax_eager"] = {"peak_bytes": sum(v["bytes"] for v in vals), "buffers": vals,
                                     "how": "jaxpr: every op's result is a live array until return"}
        mem = x.memory or {}
        temp, outb = int(mem.get("temp_size_in_bytes", 0)), int(mem.get("output_size_in_bytes", 0))
        out["forms"]["jax_jit"] = {"peak_bytes": temp + outb, "temp_bytes": temp, "output_bytes": outb,
                                   "buffers": [], "how": "compiled.memory_analysis(): temp + output"}
    except DemoError as exc:
        out["jax_error"] = str(exc)
    out["extra"] = f"{WORKLOAD}, N={_pow2_label(N)}, {dtype}; torch: {out['forms']['torch_eager']['how']}"
    return out


def figure_memory(data: dict[str, Any], reference: dict | None = None):
    fig, (ax, txt) = plots.figure(1, 2, width_ratios=[1.0, 1.1])
    forms = data["forms"]
    names = [b for b in BACKENDS if b in forms]
    mib = [forms[b]["peak_bytes"] / 2**20 for b in names]
    nbuf = data["N"] * ITEMSIZE[data["dtype"]] / 2**20
    ref = None
    if reference is not None:  # the recorded peaks as multiples of N, scaled to this N
        rn = reference["N"] * ITEMSIZE[reference["dtype"]]
        ref = [reference["forms"][b]["peak_bytes"] / rn * nbuf if b in reference["forms"] else None for b in names]
    _form_bars(ax, names, mib, [f"{m:.0f} MiB\n= {m / nbuf:.0f} × N" for m in mib],
               "MiB allocated in one call", ref,
               f"recorded on {(reference or {}).get('machine_short')} (scaled to this N)", fontsize=12.5)
    ax.set_ylim(0, max(mib + [1]) * 1.35)
    ax.set_title("peak memory above the inputs", fontsize=15)
    eager = forms["torch_eager"]["buffers"]
    lines = [f"{b['op']:<10} {b['bytes'] / 2**20:6.1f} MiB" for b in eager[:7]]
    y = _text_block(txt, lines, f"torch eager: {len(eager)} new buffers", [plots.color("torch_eager")] * 8,
                    step=0.068)
    comp = forms["torch_compile"]
    clines = [f"{b}" for b in comp.get("code_buffers", [])][:3] + [f"reuse: {r}" for r in comp.get("reused", [])][:2]
    y = _text_block(txt, clines, f"torch.compile: {len(comp.get('code_buffers', []))} buffer(s) in its code",
                    [plots.color("torch_compile")] * 5, y0=y - 0.03, step=0.068)
    if "jax_jit" in forms:
        j = forms["jax_jit"]
        _text_block(txt, [f"temp {j['temp_bytes'] / 2**20:.1f} MiB, output {j['output_bytes'] / 2**20:.1f} MiB"],
                    "jax.jit memory_analysis()", [plots.color("jax_jit")], y0=y - 0.03, step=0.068)
    plots.stamp_figure(fig, data, reference)
    return fig


def _buffers(d: dict[str, Any]) -> tuple | None:
    """N-sized buffers eager allocates (None if any is another size) and buffers in torch.compile's code."""
    f, nbytes = d["forms"], d["N"] * ITEMSIZE[d["dtype"]]
    eager = [b["bytes"] for b in f["torch_eager"]["buffers"]]
    if any(b != nbytes for b in eager):
        return None
    return len(eager), len(f["torch_compile"].get("code_buffers", []))


def _jax_memory(d: dict[str, Any]) -> tuple:
    """jax.jit's temporary bytes and its output in units of N elements."""
    j, nbytes = d["forms"].get("jax_jit", {}), d["N"] * ITEMSIZE[d["dtype"]]
    return j["temp_bytes"], j["output_bytes"] / nbytes


memory_claims = Claims(
    Claim("torch.compile needs under 1/{threshold:g} of eager's peak memory",
          lambda d: d["forms"]["torch_eager"]["peak_bytes"] / max(d["forms"]["torch_compile"]["peak_bytes"], 1),
          ">", {"gpu": 3}, key="peak"),
    Claim("torch eager allocates {0} N-sized buffers, torch.compile {1} (the output)", _buffers, "==",
          {"cpu": (6, 1)}, key="buffers"),
    Claim("jax.jit: {0} bytes of temporaries, {1:g} output", _jax_memory, "==", {"cpu": (0, 1)}, key="jax"),
)


memory = Demo(
    "memory", "Buffer reuse: peak memory",
    controls=_n_dtype(14), measure=measure_memory, figure=figure_memory,
    warm=[{"dtype": d} for d in DTYPES], claims=memory_claims,
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


_RELAYOUT_INPUTS: dict[tuple, tuple] = kept("topics.fusion._RELAYOUT_INPUTS", {})


def _relayout_inputs(B: int, H: int, D: int, K: int, dtype: str):
    key = (B, H, D, K, dtype)
    if key not in _RELAYOUT_INPUTS:
        jax = require_jax()
        import jax.numpy as jnp
        import numpy as np

        rng = np.random.default_rng(0)
        x = rng.standard_normal((B, H, D), dtype=np.float32)
        w = rng.standard_normal((H, D, K), dtype=np.float32) / math.sqrt(D)
        jd = getattr(jnp, dtype)
        _RELAYOUT_INPUTS.clear()
        _RELAYOUT_INPUTS[key] = tuple(jax.device_put(jnp.asarray(a).astype(jd))
                                      for a in (x, np.ascontiguousarray(x.transpose(1, 0, 2)), w))
    return _RELAYOUT_INPUTS[key]


def measure_relayout(B: int = 64, H: int = 4, D: int = 1024, K: int = 256, dtype: str = "float32",
                     budget_s: float = BUDGET_S, progress: Progress = _noop) -> dict[str, Any]:
    require_jax()
    progress(0.2, "lowering and timing the einsum…")
    x, xt, w = _relayout_inputs(B, H, D, K, dtype)
    written = codegen.xla_code(einsum_as_written, x, w)
    pre = codegen.xla_code(einsum_pretransposed, xt, w)
    out: dict[str, Any] = {"B": B, "H": H, "D": D, "K": K, "dtype": dtype, "backend": written.backend,
                           "forms": {}, "extra": f"einsum B,H,D,K={B},{H},{D},{K}, {dtype}, "
                                                 f"XLA backend {written.backend}"}
    sync = sync_jax()
    for name, fn, args, code in (("as_written", einsum_as_written, (x, w), written),
                                 ("pretransposed", einsum_pretransposed, (xt, w), pre)):
        f = jitted(fn)
        sync(f(*args))
        t = measure(lambda: f(*args), sync, warmup=0, budget_s=budget_s, min_samples=3)
        out["forms"][name] = {
            "median_s": t.median, "p10_s": t.p10, "p90_s": t.p90, "n": t.n,
            "transposes": len(code.transposes),
            "entry_ops": code.entry_ops,
            "excerpt": codegen.excerpt(code.entry, [r" (transpose|copy|dot|fusion|custom-call)\("],
                                       max_lines=3, width=64) + [codegen._shorten(s, 64) for s in code.transposes][:2],
        }
    out["relayout_inserted"] = out["forms"]["as_written"]["transposes"] > out["forms"]["pretransposed"]["transposes"]
    return out


def figure_relayout(data: dict[str, Any], reference: dict | None = None):
    fig, (ax, txt) = plots.figure(1, 2, width_ratios=[0.8, 1.6])
    forms = data["forms"]
    labels = {"as_written": f"as written\n({data['B']},{data['H']},{data['D']})",
              "pretransposed": f"pre-transposed\n({data['H']},{data['B']},{data['D']})"}
    cols = {"as_written": plots.color("jax_jit"), "pretransposed": plots.PALETTE["accent"]}
    for i, k in enumerate(("as_written", "pretransposed")):
        r = forms[k]
        ax.bar(i, r["median_s"] * 1e3, 0.6, color=cols[k])
        _spread(ax, i, r)
        ax.text(i, r["p90_s"] * 1e3, f"{fmt_seconds(r['median_s'])}\n{r['transposes']} transpose"
                f"{'s' * (r['transposes'] != 1)}", ha="center", va="bottom", fontsize=12.5)
        if reference is not None and k in reference.get("forms", {}):
            ax.text(i, 0, f"rec.\n{fmt_seconds(reference['forms'][k]['median_s'])}", ha="center",
                    va="bottom", fontsize=11.5, color="white", fontweight="bold")
    ax.set_xticks([0, 1])
    ax.set_xticklabels([labels["as_written"], labels["pretransposed"]], fontsize=11.5)
    ax.set_ylabel("jax.jit median (ms), p10–p90")
    ax.set_ylim(0, max(forms[k]["p90_s"] for k in forms) * 1e3 * 1.45)
    ax.grid(axis="x", visible=False)
    ax.set_title("einsum bhd,hdk→bhk", fontsize=15)
    y = 0.97 + 0.04
    for title, key in (("XLA's plan, as written (transposes in orange)", "as_written"),
                       ("pre-transposed operand", "pretransposed")):
        lines = forms[key]["excerpt"]
        hl = [plots.PALETTE["torch_eager"] if "transpose" in s else "#222222" for s in lines]
        y = _text_block(txt, lines, title, hl, y0=y - 0.04, step=0.08)
    verdict = ("XLA moved the heads dimension in front (a relayout)\nbefore the batched dot, and back after it"
               if data["relayout_inserted"] else
               f"no relayout on this device:\nXLA ({data['backend']}) used the layout as written")
    if reference is not None:
        verdict += f"; recorded on {reference.get('machine_short', '?')}: " + (
            "relayout" if reference.get("relayout_inserted") else "no relayout")
    txt.text(0.0, 0.02, verdict, fontsize=12.5, fontweight="bold", transform=txt.transAxes, va="bottom")
    plots.stamp_figure(fig, data, reference)
    return fig


def _warm_relayout() -> None:
    try:
        relayout.run({"budget_s": 0.01})
    except DemoError:  # no JAX here: the panel says so in one line
        pass


relayout = Demo(
    "relayout", "Relayout: where XLA puts the heads",
    controls=[Choice("H", RELAYOUT_DEFAULTS["H"], label="heads H", options=[1, 2, 4, 8]),
              Choice("B", RELAYOUT_DEFAULTS["B"], label="batch B", options=[16, 32, 64, 128])],
    measure=measure_relayout, figure=figure_relayout,
    record={"budget_s": 0.5}, record_quick={"budget_s": 0.05}, warm=_warm_relayout,
    # on a GPU the slide makes no claim: XLA picks its own layouts there (the verdict line says which)
    claims=Claims(Claim("XLA on a CPU moves the heads in front for the einsum as written; heads-first data needs "
                        "{threshold} transposes",
                        lambda d: d["forms"]["pretransposed"]["transposes"] if d["relayout_inserted"] else None,
                        "==", {"cpu": 0}, key="relayout")),
)


# ---------------------------------------------------------------------------------------
# 4. Dead-code elimination
# ---------------------------------------------------------------------------------------
def measure_dead_code(B: int | None = None, dtype: str = "float32", budget_s: float = BUDGET_S,
                      progress: Progress = _noop) -> dict[str, Any]:
    w = get(DEAD)
    p = w.resolve({"B": B} if B else None, device_kind())
    device = torch_device()
    prof = profiling.profile_run(prepare(w, "torch_eager", p, dtype), label="torch eager")
    # count the matmul ops the code issued (each launches one GEMM; on Hopper cuBLAS kernels are
    # named nvjet_* rather than *gemm*, so kernel names are not a reliable count)
    counts = {"torch_eager": sum(1 for n in prof["op_names"] if n in ("mm", "matmul", "addmm", "bmm"))}
    how = {"torch_eager": "profiler: aten::mm ops"}
    progress(0.2, "reading generated code…")
    counts["torch_compile"] = codegen.workload_inductor_code(w, p, dtype, device).matmuls
    how["torch_compile"] = "Inductor code: extern mm calls"
    try:
        x = codegen.workload_xla_code(w, p, dtype, device)
        counts["jax_eager"], counts["jax_jit"] = x.jaxpr_matmuls, x.matmuls
        how["jax_eager"], how["jax_jit"] = "jaxpr: dot_general", "optimized HLO: dot"
    except DemoError:
        pass
    times = {}
    for i, b in enumerate(BACKENDS):
        if b.startswith("jax") and "jax_jit" not in counts:
            continue
        progress(0.3 + 0.7 * i / 4, f"timing {plots.label(b)}…")
        times[b] = _time(prepare(w, b, p, dtype), budget_s)
    progress(1.0, "")
    return {"params": p, "dtype": dtype, "device": device, "matmuls": counts, "how": how, "times": times,
            "flops_ratio": w.flops(p, fused=True) / w.flops(p, fused=False),
            "extra": f"{DEAD}, B,D,F={p['B']},{p['D']},{p['F']}, {dtype}"}


def figure_dead_code(data: dict[str, Any], reference: dict | None = None):
    fig, (ax, tx) = plots.figure(1, 2)
    names = [b for b in BACKENDS if b in data["matmuls"]]
    vals = [data["matmuls"][b] for b in names]
    ref = None if reference is None else [reference["matmuls"].get(b) for b in names]
    _form_bars(ax, names, vals, [str(v) for v in vals], "matmuls executed per call", ref,
               f"recorded: {(reference or {}).get('machine_short')}", fontsize=18, fontweight="bold")
    ax.set_ylim(0, 4)
    ax.set_title("x @ gating1 is never used", fontsize=15)
    t = data["times"]
    tn = [b for b in BACKENDS if b in t]
    for i, b in enumerate(tn):
        tx.bar(i, t[b]["median_s"] * 1e3, 0.62, color=plots.color(b))
        _spread(tx, i, t[b])
        if reference is not None and b in reference.get("times", {}):
            tx.text(i, 0, f"rec.\n{fmt_seconds(reference['times'][b]['median_s'])}", ha="center", va="bottom",
                    fontsize=11, color="white")
    for pair, xm in ((("torch_eager", "torch_compile"), 0.5), (("jax_eager", "jax_jit"), 2.5)):
        if pair[0] in t and pair[1] in t:
            s = t[pair[0]]["median_s"] / t[pair[1]]["median_s"]
            top = max(t[pair[0]]["p90_s"], t[pair[1]]["p90_s"]) * 1e3
            tx.text(xm, top * 1.08, f"{s:.2f}×", ha="center", fontsize=14, fontweight="bold")
    tx.set_xticks(range(len(tn)))
    tx.set_xticklabels([plots.label(b) for b in tn], rotation=12)
    tx.set_ylabel("median latency (ms), p10–p90")
    tx.set_ylim(0, max([t[b]["p90_s"] for b in tn] + [1e-6]) * 1e3 * 1.3)
    tx.grid(axis="x", visible=False)
    title = f"time (compiled needs {data['flops_ratio']:.2f}× the FLOPs)"
    if reference is not None:
        title += f"\nrec. = recorded on {reference.get('machine_short', '?')}"
    tx.set_title(title, fontsize=14)
    plots.stamp_figure(fig, data, reference)
    return fig


dead_code = Demo(
    "dead_code", "Dead-code elimination",
    controls=lambda kind: [Pow2("B", get(DEAD).defaults(kind)["B"], label="rows B", lo=5,
                                hi=11 if kind == "cpu" else 13),
                           Choice("dtype", "float32", options=DTYPES)],
    measure=measure_dead_code, figure=figure_dead_code,
    record={"budget_s": 0.5}, record_quick={"budget_s": 0.05}, warm=[{"dtype": d} for d in DTYPES],
    claims=Claims(
        Claim("the dead matmul is gone: {0} matmuls → {1} (torch.compile and jax.jit)",
              lambda d: tuple(d["matmuls"].get(b) for b in BACKENDS), "==", (3, 2, 3, 2), key="matmuls"),
        Claim("the compiled forms do 2/3 of the FLOPs (compiled ÷ eager within {lo:g}–{hi:g})",
              lambda d: d["flops_ratio"], "within", (0.66, 0.67), key="flops")),
)
