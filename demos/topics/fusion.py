"""Part 2 — what a compiler does once it sees the whole function.

Four optimisations from the seed chapter 'Optimizations' (seeds 000/001), each shown
happening and measured on the viewer's device:

1. kernel fusion  — ``kernels()`` (counts of the four forms, from the profiler, Inductor's
   generated code, the jaxpr and XLA's optimized HLO), ``timeline()`` (eager above compiled
   on one time axis, drawn by :mod:`demos.introspection.profiling`), ``latency()`` (median latency with
   spread, speedup and achieved bandwidth over N and dtype, beside the seed's figure);
2. buffer reuse   — ``memory()`` (peak memory eager vs compiled, and each form's buffers);
3. relayout       — ``relayout()`` (the transposes XLA inserts for an einsum whose batch
   dimension sits in the middle, and what pre-transposing the operand saves);
4. dead code      — ``dead_code()`` (3 matmuls written, 2 executed once compiled).

Every panel is ``measure_x(...) -> dict`` (JSON-able) + pure ``figure_x(data, reference)``;
``panels()`` lists the builders, ``record(rec)`` stores the default measurements in
``rec.sections["fusion"]`` and ``warm()`` compiles everything the live cells use.
"""
from __future__ import annotations

import math
import re
from typing import Any, Callable

from demos import BACKENDS

from demos.introspection import codegen

from demos.engine import plots

from demos.deck import ui
from demos.engine.devices import device_kind, require_jax, require_torch, torch_device
from demos.engine.errors import DemoError
from demos.engine.results import Record, reference as _reference
from demos.engine.timing import fmt_seconds, measure
from demos.engine.workloads import ITEMSIZE, get, jitted, prepare

SECTION = "fusion"
WORKLOAD = "complex_activation"
SEED = {
    "N": 20_000_000,
    "eager_s": 731e-6,
    "compiled_s": 144e-6,
    "kernels_eager": 6,
    "kernels_compiled": 1,
    "source": "seed chapter 'Optimizations' (000): 731 µs → 144 µs at N = 20M on the author's GPU",
}
COUNT_WORKLOADS = ("complex_activation", "chain", "mlp_block", "mlp_dead_code")
DTYPES = ("float32", "bfloat16")
BUDGET_S = 0.03  # per backend per redraw: warm interaction stays under 0.5 s on 2 CPU cores
MONO = {"family": "monospace", "fontsize": 9.5}


# ---------------------------------------------------------------------------------------
# Shared helpers
# ---------------------------------------------------------------------------------------
def _device() -> str:
    return torch_device()


def default_n() -> int:
    """The workload's default N for this device (2^21 on a CPU, 20M on a GPU)."""
    return get(WORKLOAD).defaults(device_kind())["N"]


def panel_n() -> int:
    """N the live panels open at: 2^19 on a CPU (a redraw of four forms stays under 0.5 s on
    two cores — XLA's CPU sin/cos alone take ~10 ms at 2^20), the workload default (the
    seed's 20M) on a GPU. The claims are checked at the workload default too."""
    return 2**19 if device_kind() == "cpu" else default_n()


def _n_hi() -> int:
    """Largest N slider exponent: 2^23 on a CPU, 2^26 on a GPU (the seed's 20M is ~2^24)."""
    return 23 if device_kind() == "cpu" else 26


def _pow2_label(n: int) -> str:
    k = math.log2(n) if n > 0 else 0
    return f"2^{int(k)}" if k == int(k) else f"{n:,}"


def _reference_section(name: str) -> tuple[dict | None, str]:
    """(recorded data of this panel, stamp) from the reference record, or (None, '')."""
    try:
        rec = _reference()
    except Exception:
        return None, ""
    if rec is None:
        return None, ""
    data = rec.sections.get(SECTION, {}).get(name)
    if not data:
        return None, ""
    return data, plots.machine_stamp(rec.machine, "", rec.created)


def _time(prep, warmed: set, budget_s: float = BUDGET_S) -> dict[str, Any]:
    key = (prep.workload.name, prep.backend, tuple(sorted(prep.params.items())), prep.dtype, prep.device)
    compile_s = None
    if key not in warmed:
        import time

        t0 = time.perf_counter()
        prep.sync(prep.fn())
        compile_s = time.perf_counter() - t0
        warmed.add(key)
    t = measure(prep.fn, prep.sync, warmup=0, budget_s=budget_s, min_samples=3)
    return {"median_s": t.median, "p10_s": t.p10, "p90_s": t.p90, "n": t.n, "first_s": compile_s}


_WARMED: set = set()


def _live_or_recorded(name: str, measure_fn: Callable[[], dict]) -> tuple[dict, dict | None, str]:
    """Measure live, or (exports with DEMOS_RESULTS) draw the recorded run instead."""
    ref, ref_stamp = _reference_section(name)
    if ui.recorded_only():
        if ref is None:
            raise DemoError(f"the recorded run has no '{SECTION}.{name}' section")
        return ref, None, ref_stamp
    return measure_fn(), ref, ref_stamp


def _layout(fig, left=0.08, right=0.99, bottom=0.17, top=0.9, wspace=0.25):
    """Fixed margins instead of constrained layout: it halves the PNG time of a redraw."""
    fig.set_layout_engine("none")
    gs = fig.axes[0].get_subplotspec().get_gridspec()
    gs.update(left=left, right=right, bottom=bottom, top=top, wspace=wspace)
    for ax in fig.axes:
        if ax.get_subplotspec() is not None:
            ax.set_position(ax.get_subplotspec().get_position(fig))
    return fig


def _stamp(fig, recorded: str | None, ref_stamp: str, what: str) -> None:
    """Footer: where this figure was measured (device, sizes, dtype, versions, date); a recorded
    run drawn alone says 'Recorded on', and a recorded run drawn beside the live one is named
    (machine and date) at the top right."""
    if recorded:
        plots.stamp(fig, f"{recorded} · {what}", where="Recorded on")
    else:
        plots.stamp(fig, plots.live_stamp(what))
    if ref_stamp and not recorded:
        fig.text(0.995, 0.995, f"grey/hatched/dashed = recorded on {ref_stamp}", ha="right", va="top",
                 fontsize=8.5, color="#555555")


def _text_block(ax, lines: list[str], title: str = "", colors: list[str] | None = None, y0: float = 0.97,
                step: float = 0.075) -> float:
    ax.axis("off")
    y = y0
    if title:
        ax.text(0.0, y, title, fontsize=12, fontweight="bold", va="top", transform=ax.transAxes)
        y -= step * 1.2
    for i, line in enumerate(lines):
        col = (colors[i] if colors and i < len(colors) else "#222222")
        ax.text(0.0, y, line, va="top", color=col, transform=ax.transAxes, **MONO)
        y -= step
    return y


# ---------------------------------------------------------------------------------------
# 1a. Kernel / op counts of the four forms
# ---------------------------------------------------------------------------------------
def _eager_profile(workload: str, params: dict | None, dtype: str) -> dict[str, Any]:
    from demos.introspection import profiling

    prep = prepare(workload, "torch_eager", params, dtype)
    return profiling.profile_run(prep, label="torch eager")


def measure_kernels(workload: str = WORKLOAD, dtype: str = "float32", params: dict | None = None,
                    progress: ui.Progress | None = None) -> dict[str, Any]:
    """How many separate kernels/ops each form runs for one call of ``workload``."""
    progress = progress or (lambda f, m="": None)
    w = get(workload)
    p = w.resolve(params, device_kind())
    device = _device()
    progress(0.1, "profiling eager…")
    prof = _eager_profile(workload, p, dtype)
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
    return {"workload": workload, "params": p, "dtype": dtype, "device": device, "forms": forms,
            "wrapper": [codegen._shorten(s, 62) for s in wrapper[:5]], "hlo": hlo_lines,
            "eager_ops_written": len(w.eager_ops)}


def figure_kernels(data: dict[str, Any], reference: dict | None = None, ref_stamp: str = "",
                   stamp: str | None = None):
    fig, (ax, txt) = plots.figure(1, 2, width_ratios=[1.0, 1.25])
    _layout(fig, left=0.07, bottom=0.2, wspace=0.08)
    forms = data["forms"]
    xs, hs, cols = [], [], []
    for i, b in enumerate(BACKENDS):
        c = forms.get(b, {}).get("count")
        xs.append(i)
        hs.append(c or 0)
        cols.append(plots.color(b))
    ax.bar(xs, hs, color=cols, width=0.62, label="this machine")
    for i, b in enumerate(BACKENDS):
        c = forms.get(b, {}).get("count")
        ax.text(i, (c or 0) + 0.1, "n/a" if c is None else str(c), ha="center", va="bottom", fontsize=15,
                fontweight="bold")
    if reference:
        rforms = reference.get("forms", {})
        for i, b in enumerate(BACKENDS):
            rc = rforms.get(b, {}).get("count")
            if rc is not None:
                ax.plot([i - 0.31, i + 0.31], [rc, rc], color=plots.PALETTE["floor"], lw=2.5, ls="--")
        ax.plot([], [], color=plots.PALETTE["floor"], lw=2.5, ls="--", label=f"recorded: {ref_stamp.split(' · ')[0]}")
        ax.legend(loc="upper right", fontsize=9)
    ax.set_xticks(xs)
    ax.set_xticklabels([plots.label(b) for b in BACKENDS], rotation=12)
    ax.set_ylabel("separate kernels / ops per call")
    ax.set_ylim(0, max(hs + [1]) * 1.3 + 0.5)
    ax.grid(axis="x", visible=False)
    ax.set_title(f"{data['workload']}: {forms['torch_eager']['count']} → {forms['torch_compile']['count']}"
                 f" (torch), {forms.get('jax_eager', {}).get('count')} → {forms.get('jax_jit', {}).get('count')} (JAX)",
                 fontsize=13)
    y = _text_block(txt, data.get("wrapper") or ["(no wrapper lines)"],
                    "Inductor's call(): what runs", [plots.color("torch_compile")] * 6)
    if data.get("hlo"):
        _text_block(txt, data["hlo"], "XLA's optimized HLO (entry)", [plots.color("jax_jit")] * 6, y0=y - 0.04)
    hows = " · ".join(forms[b]["how"].split(" (")[0] for b in BACKENDS if b in forms)
    txt.text(0.0, -0.16, "counted from (left to right):\n" + hows, fontsize=8.5, color="#555555", va="bottom",
             transform=txt.transAxes)
    sizes = ", ".join(f"{k}={_pow2_label(v)}" for k, v in data["params"].items())
    _stamp(fig, stamp, ref_stamp if reference else '', (f"{data['workload']}, {sizes}, {data['dtype']}"))
    return fig


_KERNELS_CACHE: dict[tuple, dict] = {}


def kernels(show: bool = True):
    """Live: kernel/op counts of the four forms, with the generated code behind them."""
    controls = {
        "workload": ui.choice("workload", list(COUNT_WORKLOADS), WORKLOAD),
        "dtype": ui.dtype_choice("float32", DTYPES),
    }

    def render(v, progress):
        def counts():  # counts are deterministic for given code: measured once per workload/dtype/device
            key = (v["workload"], v["dtype"], _device())
            if key not in _KERNELS_CACHE:
                _KERNELS_CACHE[key] = measure_kernels(v["workload"], v["dtype"], progress=progress)
            return _KERNELS_CACHE[key]

        data, ref, ref_stamp = _live_or_recorded("kernels", counts)
        if ui.recorded_only():
            return figure_kernels(data, stamp=ref_stamp)
        if ref and ref.get("workload") != data["workload"]:
            ref = None
        return figure_kernels(data, ref, ref_stamp)

    return _finish(ui.Panel("Kernels per call, four forms", controls, render), show)


# ---------------------------------------------------------------------------------------
# 1b. Two-lane timeline (profiling.py draws it)
# ---------------------------------------------------------------------------------------
_PROFILED_COMPILED: dict[str, Callable] = {}


def _profiled_compiled(fn: Callable) -> Callable:
    """torch.compile of a fresh copy of ``fn`` whose C++ kernels emit profiler events.

    A separate code object keeps the deck's shared compiled wrapper untouched (no reset)."""
    torch = require_torch()
    key = fn.__qualname__
    if key not in _PROFILED_COMPILED:
        _PROFILED_COMPILED[key] = torch.compile(codegen._fresh_copy(fn))
    compiled = _PROFILED_COMPILED[key]

    def call(*args):
        import torch._inductor.config as ic

        with ic.patch({"cpp.enable_kernel_profile": True}):
            return compiled(*args)

    return call


def measure_timeline(N: int | None = None, dtype: str = "float32") -> dict[str, Any]:
    from demos.introspection import profiling

    N = N or panel_n()
    eager = prepare(WORKLOAD, "torch_eager", {"N": N}, dtype)
    comp = _profiled_compiled(eager.workload.torch_fn)
    args = eager.args
    runs = [profiling.profile_run(eager, label="torch eager", passes=2),
            profiling.profile_run(lambda: comp(*args), sync=eager.sync, device=eager.device,
                                  label="torch.compile", passes=2)]
    return {"N": N, "dtype": dtype, "device": eager.device, "runs": runs}


def figure_timeline(data: dict[str, Any], reference: dict | None = None, ref_stamp: str = "",
                    stamp: str | None = None):
    from demos.introspection import profiling

    runs = data["runs"]
    k = [r["counts"]["kernels"] for r in runs]
    spans = [r.get("span_us") or 0.0 for r in runs]
    title = (f"eager {k[0]} kernels, {fmt_seconds(spans[0] * 1e-6)}  →  compiled {k[1]} kernel"
             f"{'s' * (k[1] != 1)}, {fmt_seconds(spans[1] * 1e-6)}")
    if reference and reference.get("runs"):
        rr = reference["runs"]
        where = ref_stamp.split(" · ")
        title += (f"\nrecorded on {where[0][:28]} ({where[-1]}), N={reference['N']:,}: "
                  f"{rr[0]['counts']['kernels']} → "
                  f"{rr[1]['counts']['kernels']}, {fmt_seconds(rr[0]['span_us'] * 1e-6)} → "
                  f"{fmt_seconds(rr[1]['span_us'] * 1e-6)}")
    fig = profiling.timeline_figure(runs, ["eager", "torch.compile"], title=title)
    _stamp(fig, stamp, "", (f"{WORKLOAD}, N={_pow2_label(data['N'])}, {data['dtype']}, profiled"))
    return fig


def timeline(show: bool = True):
    """Live: eager's six ops above the compiled kernel, on one time axis."""
    controls = {
        "N": ui.pow2_slider("N", 14, _n_hi(), panel_n()),
        "dtype": ui.dtype_choice("float32", DTYPES),
    }

    def render(v, progress):
        progress(0.2, "profiling eager and compiled…")
        data, ref, ref_stamp = _live_or_recorded("timeline", lambda: measure_timeline(v["N"], v["dtype"]))
        if ui.recorded_only():
            return figure_timeline(data, stamp=ref_stamp)
        return figure_timeline(data, ref, ref_stamp)

    return _finish(ui.Panel("Two-lane timeline: eager vs compiled", controls, render), show)


# ---------------------------------------------------------------------------------------
# 1c. Latency, speedup and bandwidth of the four forms
# ---------------------------------------------------------------------------------------
def measure_latency(N: int | None = None, dtype: str = "float32", backends=BACKENDS,
                    budget_s: float = BUDGET_S, progress: ui.Progress | None = None) -> dict[str, Any]:
    progress = progress or (lambda f, m="": None)
    N = N or panel_n()
    w = get(WORKLOAD)
    out: dict[str, Any] = {"N": N, "dtype": dtype, "device": _device(), "forms": {}}
    for i, b in enumerate(backends):
        progress(i / len(backends), f"timing {plots.label(b)}…")
        try:
            prep = prepare(w, b, {"N": N}, dtype)
            res = _time(prep, _WARMED, budget_s)
        except DemoError as exc:
            if b.startswith("jax"):
                out["forms"][b] = {"error": str(exc)}
                continue
            raise
        fused = b in ("torch_compile", "jax_jit")
        res["bytes"] = w.bytes({"N": N}, dtype, fused=fused)
        res["gbps"] = res["bytes"] / res["median_s"] / 1e9
        out["forms"][b] = res
    f = out["forms"]
    if "torch_eager" in f and "median_s" in f.get("torch_compile", {}):
        out["speedup_torch"] = f["torch_eager"]["median_s"] / f["torch_compile"]["median_s"]
    if "median_s" in f.get("jax_eager", {}) and "median_s" in f.get("jax_jit", {}):
        out["speedup_jax"] = f["jax_eager"]["median_s"] / f["jax_jit"]["median_s"]
    progress(1.0, "")
    return out


def figure_latency(data: dict[str, Any], reference: dict | None = None, ref_stamp: str = "",
                   stamp: str | None = None):
    fig, (ax, bw) = plots.figure(1, 2, width_ratios=[1.6, 1.0])
    _layout(fig, left=0.085, right=0.97, bottom=0.2, wspace=0.5)
    groups = [("this machine\nN=" + _pow2_label(data["N"]) + f", {data['dtype']}", data["forms"])]
    if reference:
        groups.append((f"recorded: {ref_stamp.split(' · ')[0][:22]}\nN={reference['N']:,}, {reference['dtype']}",
                       reference["forms"]))
    seed = {"torch_eager": {"median_s": SEED["eager_s"]}, "torch_compile": {"median_s": SEED["compiled_s"]}}
    groups.append(("seed's GPU\n(reported), N=20M", seed))
    width = 0.2
    for gi, (name, forms) in enumerate(groups):
        for bi, b in enumerate(BACKENDS):
            r = forms.get(b)
            if not r or "median_s" not in r:
                continue
            x = gi + (bi - 1.5) * width
            med = r["median_s"] * 1e3
            hatch = None if gi == 0 else ("//" if name.startswith("recorded") else "..")
            ax.bar(x, med, width * 0.92, color=plots.color(b), hatch=hatch, edgecolor="white",
                   label=plots.label(b) if gi == 0 else None)
            if r.get("p10_s") is not None:
                ax.errorbar(x, med, yerr=[[med - r["p10_s"] * 1e3], [r["p90_s"] * 1e3 - med]], color="#222222",
                            capsize=3, lw=1)
        for pair, x0 in ((("torch_eager", "torch_compile"), -1.0), (("jax_eager", "jax_jit"), 1.0)):
            a, c = forms.get(pair[0], {}), forms.get(pair[1], {})
            if "median_s" in a and "median_s" in c:
                top = max(a.get("p90_s") or a["median_s"], c.get("p90_s") or c["median_s"]) * 1e3
                ax.text(gi + x0 * width, top * 1.3, f"{a['median_s'] / c['median_s']:.1f}×", ha="center",
                        fontsize=12, fontweight="bold", color=plots.color(pair[1]))
    ax.set_yscale("log")
    from matplotlib.ticker import NullFormatter

    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([g[0] for g in groups], fontsize=10)
    ax.set_ylabel("median latency per call (ms, log)\nbars: p10–p90")
    lo, hi = ax.get_ylim()
    ax.set_ylim(lo, hi * 4)
    ax.grid(axis="x", visible=False)
    ax.set_title("median latency (colours as on the right) and speedup", fontsize=12)
    # bandwidth: bytes the form must move ÷ median time
    forms = data["forms"]
    names = [b for b in BACKENDS if "gbps" in forms.get(b, {})]
    bw.barh(range(len(names)), [forms[b]["gbps"] for b in names], color=[plots.color(b) for b in names])
    for i, b in enumerate(names):
        bw.text(forms[b]["gbps"], i, f" {forms[b]['gbps']:.1f} GB/s\n moves {forms[b]['bytes'] / 2**20:.0f} MiB",
                va="center", fontsize=9.5)
    bw.set_yticks(range(len(names)))
    bw.set_yticklabels([plots.label(b) for b in names])
    bw.invert_yaxis()
    bw.set_xlim(0, max([forms[b]["gbps"] for b in names] + [1e-9]) * 1.8)
    bw.set_xlabel("achieved bandwidth (GB/s)")
    bw.set_title("bandwidth: eager 15N, fused 3N elements", fontsize=12)
    bw.grid(axis="y", visible=False)
    _stamp(fig, stamp, ref_stamp if reference else '', (f"{WORKLOAD}, N={_pow2_label(data['N'])}, {data['dtype']}"))
    return fig


def latency(show: bool = True):
    """Live: median latency (p10–p90) of the four forms, speedup and bandwidth, over N and dtype."""
    controls = {
        "N": ui.pow2_slider("N", 12, _n_hi(), panel_n()),
        "dtype": ui.dtype_choice("float32", DTYPES),
    }

    def render(v, progress):
        data, ref, ref_stamp = _live_or_recorded(
            "latency", lambda: measure_latency(v["N"], v["dtype"], progress=progress))
        if ui.recorded_only():
            return figure_latency(data, stamp=ref_stamp)
        return figure_latency(data, ref, ref_stamp)

    return _finish(ui.Panel("Latency of the four forms", controls, render), show)


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
        allocs = []  # the CUDA allocator gives the peak; names come from the profiler below
        how = "torch.cuda.max_memory_allocated"
    else:
        peak, allocs, how = None, [], "profiler memory events"
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        out = fn()
        sync(out)
        del out
    cur = top = 0
    for e in sorted(prof.events(), key=lambda e: e.time_range.start):
        d = getattr(e, "self_device_memory_usage" if device.startswith("cuda") else "self_cpu_memory_usage", 0)
        if not d:
            continue
        cur += d
        top = max(top, cur)
        if d > 0:
            allocs.append({"op": e.name.replace("aten::", ""), "bytes": int(d)})
    if peak is None:
        peak = top
    return {"peak_bytes": int(peak), "buffers": allocs, "how": how}


def measure_memory(N: int | None = None, dtype: str = "float32") -> dict[str, Any]:
    N = N or panel_n()
    device = _device()
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
        out["forms"]["jax_jit"] = {"peak_bytes": temp + outb,
                                   "temp_bytes": int(mem.get("temp_size_in_bytes", 0)),
                                   "output_bytes": int(mem.get("output_size_in_bytes", 0)),
                                   "buffers": [], "how": "compiled.memory_analysis(): temp + output"}
    except DemoError as exc:
        out["jax_error"] = str(exc)
    return out


def figure_memory(data: dict[str, Any], reference: dict | None = None, ref_stamp: str = "",
                  stamp: str | None = None):
    fig, (ax, txt) = plots.figure(1, 2, width_ratios=[1.0, 1.1])
    _layout(fig, left=0.07, bottom=0.2, wspace=0.08)
    forms = data["forms"]
    names = [b for b in BACKENDS if b in forms]
    mib = [forms[b]["peak_bytes"] / 2**20 for b in names]
    ax.bar(range(len(names)), mib, color=[plots.color(b) for b in names], width=0.62)
    nbuf = data["N"] * ITEMSIZE[data["dtype"]] / 2**20
    for i, (b, m) in enumerate(zip(names, mib)):
        ax.text(i, m, f"{m:.0f} MiB\n= {m / nbuf:.0f} × N", ha="center", va="bottom", fontsize=11)
    if reference:
        for i, b in enumerate(names):
            r = reference["forms"].get(b)
            if r:
                rn = reference["N"] * ITEMSIZE[reference["dtype"]]
                ax.plot([i - 0.31, i + 0.31], [r["peak_bytes"] / rn * nbuf] * 2, color=plots.PALETTE["floor"],
                        ls="--", lw=2.5)
        ax.plot([], [], color=plots.PALETTE["floor"], ls="--", lw=2.5,
                label=f"recorded on {ref_stamp.split(' · ')[0][:24]} (scaled to this N)")
        ax.legend(loc="upper right", fontsize=9)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels([plots.label(b) for b in names], rotation=12)
    ax.set_ylabel("memory allocated during one call (MiB)")
    ax.set_ylim(0, max(mib + [1]) * 1.35)
    ax.grid(axis="x", visible=False)
    ax.set_title("peak memory above the inputs", fontsize=13)
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
    _stamp(fig, stamp, ref_stamp if reference else '', (f"{WORKLOAD}, N={_pow2_label(data['N'])}, {data['dtype']}; "
                                               f"torch: {forms['torch_eager']['how']}"))
    return fig


def memory(show: bool = True):
    """Live: peak memory of eager vs compiled and the buffers each allocates."""
    controls = {
        "N": ui.pow2_slider("N", 14, _n_hi(), panel_n()),
        "dtype": ui.dtype_choice("float32", DTYPES),
    }

    def render(v, progress):
        progress(0.2, "profiling memory…")
        data, ref, ref_stamp = _live_or_recorded("memory", lambda: measure_memory(v["N"], v["dtype"]))
        if ui.recorded_only():
            return figure_memory(data, stamp=ref_stamp)
        return figure_memory(data, ref, ref_stamp)

    return _finish(ui.Panel("Buffer reuse: peak memory", controls, render), show)


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


_RELAYOUT_INPUTS: dict[tuple, tuple] = {}


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
                     budget_s: float = BUDGET_S) -> dict[str, Any]:
    require_jax()
    x, xt, w = _relayout_inputs(B, H, D, K, dtype)
    written = codegen.xla_code(einsum_as_written, x, w)
    pre = codegen.xla_code(einsum_pretransposed, xt, w)
    out: dict[str, Any] = {"B": B, "H": H, "D": D, "K": K, "dtype": dtype, "backend": written.backend,
                           "forms": {}}
    for name, fn, args, code in (("as_written", einsum_as_written, (x, w), written),
                                 ("pretransposed", einsum_pretransposed, (xt, w), pre)):
        f = jitted(fn)
        from demos.engine.timing import sync_jax

        sync = sync_jax()
        sync(f(*args))
        t = measure(lambda: f(*args), sync, warmup=0, budget_s=budget_s, min_samples=3)
        layout_ops = [s for s in code.transposes]
        out["forms"][name] = {
            "median_s": t.median, "p10_s": t.p10, "p90_s": t.p90, "n": t.n,
            "transposes": len(layout_ops),
            "entry_ops": code.entry_ops,
            "excerpt": codegen.excerpt(code.entry, [r" (transpose|copy|dot|fusion|custom-call)\("],
                                       max_lines=3, width=64) + [codegen._shorten(t, 64) for t in code.transposes][:2],
        }
    out["relayout_inserted"] = out["forms"]["as_written"]["transposes"] > out["forms"]["pretransposed"]["transposes"]
    return out


def figure_relayout(data: dict[str, Any], reference: dict | None = None, ref_stamp: str = "",
                    stamp: str | None = None):
    fig, (ax, txt) = plots.figure(1, 2, width_ratios=[0.8, 1.6])
    _layout(fig, left=0.07, bottom=0.2, wspace=0.08)
    forms = data["forms"]
    labels = {"as_written": f"as written\n({data['B']},{data['H']},{data['D']})",
              "pretransposed": f"pre-transposed\n({data['H']},{data['B']},{data['D']})"}
    cols = {"as_written": plots.color("jax_jit"), "pretransposed": plots.PALETTE["accent"]}
    for i, k in enumerate(("as_written", "pretransposed")):
        r = forms[k]
        med = r["median_s"] * 1e3
        ax.bar(i, med, 0.6, color=cols[k])
        ax.errorbar(i, med, yerr=[[med - r["p10_s"] * 1e3], [r["p90_s"] * 1e3 - med]], color="#222", capsize=3)
        ax.text(i, r["p90_s"] * 1e3, f"{fmt_seconds(r['median_s'])}\n{r['transposes']} transpose"
                f"{'s' * (r['transposes'] != 1)}",
                ha="center", va="bottom", fontsize=10.5)
        if reference and k in reference.get("forms", {}):
            rr = reference["forms"][k]
            ax.text(i, 0, f"recorded: {fmt_seconds(rr['median_s'])}", ha="center", va="bottom", fontsize=9,
                    color="white", fontweight="bold")
    ax.set_xticks([0, 1])
    ax.set_xticklabels([labels["as_written"], labels["pretransposed"]], fontsize=9.5)
    ax.set_ylabel("jax.jit median (ms), p10–p90")
    ax.set_ylim(0, max(forms[k]["p90_s"] for k in forms) * 1e3 * 1.45)
    ax.grid(axis="x", visible=False)
    ax.set_title("einsum bhd,hdk→bhk", fontsize=13)
    w_lines = forms["as_written"]["excerpt"]
    hl = [plots.PALETTE["torch_eager"] if "transpose" in s else "#222222" for s in w_lines]
    y = _text_block(txt, w_lines, "XLA's plan, as written (transposes in orange)", hl, step=0.08)
    p_lines = forms["pretransposed"]["excerpt"]
    hl2 = [plots.PALETTE["torch_eager"] if "transpose" in s else "#222222" for s in p_lines]
    y = _text_block(txt, p_lines, "pre-transposed operand", hl2, y0=y - 0.04, step=0.08)
    verdict = ("XLA moved the heads dimension in front (a relayout)\nbefore the batched dot, and back after it"
               if data["relayout_inserted"] else
               f"no relayout on this device:\nXLA ({data['backend']}) used the layout as written")
    if reference:
        verdict += f"; recorded on {ref_stamp.split(' · ')[0][:24]}: " + (
            "relayout" if reference.get("relayout_inserted") else "no relayout")
    txt.text(0.0, 0.02, verdict, fontsize=10.5, fontweight="bold", transform=txt.transAxes, va="bottom")
    _stamp(fig, stamp, ref_stamp if reference else '',
           (f"einsum B,H,D,K={data['B']},{data['H']},{data['D']},{data['K']}, "
                                               f"{data['dtype']}, XLA backend {data['backend']}"))
    return fig


def relayout(show: bool = True):
    """Live: the transposes XLA inserts for a mid-position batch dimension, and their cost."""
    controls = {
        "H": ui.choice("heads H", [1, 2, 4, 8], 4),
        "B": ui.choice("batch B", [16, 32, 64, 128], 64),
    }

    def render(v, progress):
        progress(0.2, "lowering and timing the einsum…")
        data, ref, ref_stamp = _live_or_recorded(
            "relayout", lambda: measure_relayout(B=v["B"], H=v["H"], D=RELAYOUT_DEFAULTS["D"],
                                                 K=RELAYOUT_DEFAULTS["K"]))
        if ui.recorded_only():
            return figure_relayout(data, stamp=ref_stamp)
        return figure_relayout(data, ref, ref_stamp)

    return _finish(ui.Panel("Relayout: where XLA puts the heads", controls, render), show)


# ---------------------------------------------------------------------------------------
# 4. Dead-code elimination
# ---------------------------------------------------------------------------------------
DEAD = "mlp_dead_code"


def measure_dead_code(B: int | None = None, dtype: str = "float32", budget_s: float = BUDGET_S,
                      progress: ui.Progress | None = None) -> dict[str, Any]:
    from demos.introspection import profiling

    progress = progress or (lambda f, m="": None)
    w = get(DEAD)
    p = w.resolve({"B": B} if B else None, device_kind())
    device = _device()
    eager = prepare(w, "torch_eager", p, dtype)
    prof = profiling.profile_run(eager, label="torch eager")
    # count the matmul ops the code issued (each launches one GEMM; on Hopper cuBLAS kernels are
    # named nvjet_* rather than *gemm*, so kernel names are not a reliable count)
    mm_names = ("mm", "matmul", "addmm", "bmm")
    eager_mm = sum(1 for n in prof["op_names"] if n in mm_names)
    counts = {"torch_eager": eager_mm}
    how = {"torch_eager": "profiler: aten::mm ops"}
    progress(0.2, "reading generated code…")
    ind = codegen.workload_inductor_code(w, p, dtype, device)
    counts["torch_compile"] = ind.matmuls
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
        times[b] = _time(prepare(w, b, p, dtype), _WARMED, budget_s)
    progress(1.0, "")
    return {"params": p, "dtype": dtype, "device": device, "matmuls": counts, "how": how, "times": times,
            "flops_ratio": w.flops(p, fused=True) / w.flops(p, fused=False)}


def figure_dead_code(data: dict[str, Any], reference: dict | None = None, ref_stamp: str = "",
                     stamp: str | None = None):
    fig, (ax, tx) = plots.figure(1, 2)
    _layout(fig, left=0.065, bottom=0.2, wspace=0.2)
    names = [b for b in BACKENDS if b in data["matmuls"]]
    vals = [data["matmuls"][b] for b in names]
    ax.bar(range(len(names)), vals, color=[plots.color(b) for b in names], width=0.62)
    for i, v in enumerate(vals):
        ax.text(i, v + 0.05, str(v), ha="center", va="bottom", fontsize=16, fontweight="bold")
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels([plots.label(b) for b in names], rotation=12)
    ax.set_ylim(0, 4)
    ax.set_ylabel("matmuls executed per call")
    ax.grid(axis="x", visible=False)
    ax.set_title("x @ gating1 is never used", fontsize=13)
    t = data["times"]
    tn = [b for b in BACKENDS if b in t]
    for i, b in enumerate(tn):
        r = t[b]
        med = r["median_s"] * 1e3
        tx.bar(i, med, 0.62, color=plots.color(b))
        tx.errorbar(i, med, yerr=[[med - r["p10_s"] * 1e3], [r["p90_s"] * 1e3 - med]], color="#222", capsize=3)
        if reference and b in reference.get("times", {}):
            rm = reference["times"][b]["median_s"]
            tx.text(i, 0, f"rec.\n{fmt_seconds(rm)}", ha="center", va="bottom", fontsize=8.5, color="white")
    for pair, xm in ((("torch_eager", "torch_compile"), 0.5), (("jax_eager", "jax_jit"), 2.5)):
        if pair[0] in t and pair[1] in t:
            s = t[pair[0]]["median_s"] / t[pair[1]]["median_s"]
            top = max(t[pair[0]]["p90_s"], t[pair[1]]["p90_s"]) * 1e3
            tx.text(xm, top * 1.08, f"{s:.2f}×", ha="center", fontsize=12, fontweight="bold")
    tx.set_xticks(range(len(tn)))
    tx.set_xticklabels([plots.label(b) for b in tn], rotation=12)
    tx.set_ylabel("median latency (ms), p10–p90")
    tx.set_ylim(0, max([t[b]["p90_s"] for b in tn] + [1e-6]) * 1e3 * 1.3)
    tx.grid(axis="x", visible=False)
    tx.set_title(f"time (compiled needs {data['flops_ratio']:.2f}× the FLOPs)", fontsize=12)
    p = data["params"]
    extra = f"{DEAD}, B,D,F={p['B']},{p['D']},{p['F']}, {data['dtype']}"
    if reference:
        extra += f"; 'rec.' = recorded on {ref_stamp.split(' · ')[0][:24]}"
    _stamp(fig, stamp, ref_stamp if reference else '', (extra))
    return fig


def dead_code(show: bool = True):
    """Live: 3 matmuls written, 2 run once compiled; and the time it saves."""
    b0 = get(DEAD).defaults(device_kind())["B"]
    controls = {
        "B": ui.pow2_slider("rows B", 5, 11 if device_kind() == "cpu" else 13, b0),
        "dtype": ui.dtype_choice("float32", DTYPES),
    }

    def render(v, progress):
        data, ref, ref_stamp = _live_or_recorded(
            "dead_code", lambda: measure_dead_code(v["B"], v["dtype"], progress=progress))
        if ui.recorded_only():
            return figure_dead_code(data, stamp=ref_stamp)
        return figure_dead_code(data, ref, ref_stamp)

    return _finish(ui.Panel("Dead-code elimination", controls, render), show)


# ---------------------------------------------------------------------------------------
# Deck plumbing: panels, record, warm
# ---------------------------------------------------------------------------------------
def _finish(panel: ui.Panel, show: bool):
    if show:
        panel.show()
        return None
    return panel


def panels() -> dict[str, Callable[[], ui.Panel]]:
    return {
        "kernels": lambda: kernels(show=False),
        "timeline": lambda: timeline(show=False),
        "latency": lambda: latency(show=False),
        "memory": lambda: memory(show=False),
        "relayout": lambda: relayout(show=False),
        "dead_code": lambda: dead_code(show=False),
    }


def record(rec: Record, quick: bool = False) -> Record:
    """Store the default measurements of every panel in ``rec.sections['fusion']``."""
    budget = 0.05 if quick else 0.5
    sec: dict[str, Any] = {}
    sec["kernels"] = measure_kernels(WORKLOAD)
    sec["timeline"] = measure_timeline()
    sec["latency"] = measure_latency(budget_s=budget)
    sec["memory"] = measure_memory()
    try:
        sec["relayout"] = measure_relayout(budget_s=budget)
    except DemoError as exc:
        sec["relayout"] = {"error": str(exc)}
    sec["dead_code"] = measure_dead_code(budget_s=budget)
    rec.sections[SECTION] = sec
    return rec


def warm() -> None:
    """Compile what the live cells use at their default sizes (fills .cache/): the four forms
    of complex_activation at the panels' N and the workload default, mlp_dead_code, Inductor's
    code and XLA's HLO for every workload of the kernels panel, the profiled timeline and the
    relayout einsums."""
    import torch  # noqa: F401

    sizes = sorted({panel_n(), default_n()})
    for dtype in DTYPES:
        for b in BACKENDS:
            try:
                for n in sizes:
                    prepare(WORKLOAD, b, {"N": n}, dtype).output_numpy()
                prepare(DEAD, b, None, dtype).output_numpy()
            except DemoError:
                pass
        for wname in COUNT_WORKLOADS:
            codegen.workload_inductor_code(wname, dtype=dtype)
            try:
                codegen.workload_xla_code(wname, dtype=dtype)
            except DemoError:
                pass
        codegen.workload_inductor_code(WORKLOAD, {"N": panel_n()}, dtype)
        measure_timeline(panel_n(), dtype)
    try:
        measure_relayout(budget_s=0.01)
    except DemoError:
        pass
