"""Part 2's figures (:mod:`demos.topics.fusion` holds the lesson): one ``figure_*`` per demo,
drawing a measurement beside a recorded one (``reference``) from the data alone."""
from __future__ import annotations

import re

from typing import Any

from matplotlib.transforms import offset_copy

from demos.engine.devices import BACKENDS
from demos.engine import plots
from demos.engine.figure_values import TIME_FLOOR_S, fmt_ratio, largest, measured, on_log, ratio_of
from demos.engine.timing import fmt_seconds
from demos.engine.workload_defs import ITEMSIZE
from demos.introspection import profiling

# seed chapter 'Optimizations' (000): 731 µs → 144 µs at N = 20M on the author's GPU, 6 kernels → 1
SEED = {"N": 20_000_000, "eager_s": 731e-6, "compiled_s": 144e-6}
MONO = {"family": "monospace", "fontsize": 11.5}


def _where(d: dict) -> str:
    """'this machine' for a live run, the recording machine's short name for a recorded one."""
    return f"recorded: {d.get('machine_short', '?')}" if d.get("recorded") else "this machine"


def text_block(ax, lines: list[str], title: str = "", colors: list[str] | None = None, below: float = 0.0,
               step: float = 14.0, top: float = 0.97) -> float:
    """A title and lines of monospace text, one under another from ``below`` points under the top of
    ``ax`` (``top``, a fraction of its height), ``step`` points apart: a pitch in points, not in
    fractions of an axes whose height a longer footer takes away (lines met each other there).
    Returns how far under the top the next line goes, in points."""
    ax.axis("off")
    if title:
        ax.text(0.0, top, title, fontsize=14, fontweight="bold", va="top", transform=under_block(ax, below, top))
        below += max(step * 1.2, 17.0)  # 14 pt bold: its box is some 16 pt high
    for i, line in enumerate(lines):
        col = (colors[i] if colors and i < len(colors) else "#222222")
        ax.text(0.0, top, line, va="top", color=col, transform=under_block(ax, below, top), **MONO)
        below += step
    return below


def under_block(ax, below: float, top: float = 0.97):
    """The transform of a text placed ``below`` points under ``top`` of ``ax``: under a
    :func:`text_block`."""
    return offset_copy(ax.transAxes, fig=ax.figure, x=0, y=-below, units="points")


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
    if all(measured(r.get(k)) for k in ("median_s", "p10_s", "p90_s")):  # a missing time: no bar
        ax.errorbar(x, med, yerr=[[max(med - r["p10_s"] * scale, 0)], [max(r["p90_s"] * scale - med, 0)]],
                    color="#222222", capsize=3, **kw)
    return med


# 1a. Kernel / op counts of the four forms
FUSED_NAME = re.compile(r"(_fused_)[a-z0-9_]*?(_\d+)\b")


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
    # a generated kernel's name lists the ops it fused: the next slide asks what it is named after
    wrapper = [FUSED_NAME.sub(r"\1…\2", line) for line in data.get("wrapper") or ["(no wrapper lines)"]]
    y = text_block(txt, wrapper, "Inductor's call(): what runs (names: next slide)", [plots.color("torch_compile")] * 6)
    if data.get("hlo"):
        text_block(txt, data["hlo"], "XLA's optimized HLO (entry)", [plots.color("jax_jit")] * 6, below=y + 6)
    hows = " · ".join(forms[b]["how"].split(" (")[0] for b in BACKENDS if b in forms)
    txt.text(0.0, -0.16, "counted from (left to right):\n" + hows, fontsize=11.5, color="#555555", va="bottom",
             transform=txt.transAxes)
    plots.stamp_figure(fig, data, reference)
    return fig


# 1b. Two-lane timeline (profiling.py draws it)
def figure_timeline(data: dict[str, Any], reference: dict | None = None):
    runs = data["runs"]
    k = [r["counts"]["kernels"] for r in runs]
    busy = [profiling.busy_seconds(r) for r in runs]  # kernel time summed, not the span (launches, sync)
    what = "kernel time" if runs[0].get("device_lane") == "cuda" else "op time"
    title = (f"eager {k[0]} kernels, {fmt_seconds(busy[0])}  →  compiled {k[1]} kernel"
             f"{'s' * (k[1] != 1)}, {fmt_seconds(busy[1])} ({what}, summed)")
    if reference is not None and reference.get("runs"):
        rr = reference["runs"]
        title += (f"\nrecorded on {reference.get('machine_short', '?')}, N={reference['N']:,}: "
                  f"{rr[0]['counts']['kernels']} → {rr[1]['counts']['kernels']}, "
                  f"{fmt_seconds(profiling.busy_seconds(rr[0]))} → {fmt_seconds(profiling.busy_seconds(rr[1]))}"
                  f" of {'kernel' if rr[0].get('device_lane') == 'cuda' else 'op'} time")
    fig = profiling.timeline_figure(runs, ["eager", "torch.compile"], title=title)
    plots.text_floor(fig)  # nothing under plots.MIN_TEXT_PT, whatever the shared timeline draws
    plots.stamp_figure(fig, data, reference)
    return fig


# 1c. Latency, speedup and bandwidth of the four forms
def figure_latency(data: dict[str, Any], reference: dict | None = None):
    from matplotlib.ticker import NullFormatter

    fig, (ax, bw) = plots.figure(1, 2, width_ratios=[1.6, 1.0])
    def named(d: dict) -> str:  # a group's name in short lines: three groups share the axes' width
        return _where(d)[:32].replace(": ", ":\n") + f"\nN={plots.pow2_label(d['N'])}, {d['dtype']}"

    groups = [(named(data), data["forms"], None)]
    if reference is not None:
        groups.append((named(reference), reference["forms"], "//"))
    seed = {"torch_eager": {"median_s": SEED["eager_s"]}, "torch_compile": {"median_s": SEED["compiled_s"]}}
    groups.append(("seed's GPU\n(reported), N=20M", seed, ".."))
    width = 0.2
    for gi, (_name, forms, hatch) in enumerate(groups):
        for bi, b in enumerate(BACKENDS):
            r = forms.get(b)
            if not r or "median_s" not in r:
                continue
            x = gi + (bi - 1.5) * width
            ax.bar(x, on_log(r["median_s"]) * 1e3, width * 0.92, color=plots.color(b), hatch=hatch, edgecolor="white",
                   label=plots.label(b) if gi == 0 else None)
            if r.get("p10_s") is not None:
                _spread(ax, x, r, lw=1)
        for pair, x0 in ((("torch_eager", "torch_compile"), -1.0), (("jax_eager", "jax_jit"), 1.0)):
            a, c = forms.get(pair[0], {}), forms.get(pair[1], {})
            if "median_s" in a and "median_s" in c:
                top = on_log(largest([a.get("p90_s"), a["median_s"], c.get("p90_s"), c["median_s"]],
                                                 TIME_FLOOR_S)) * 1e3
                ax.text(gi + x0 * width, top * 1.3, fmt_ratio(ratio_of(a["median_s"], c["median_s"])), ha="center",
                        fontsize=14, fontweight="bold", color=plots.color(pair[1]))
    ax.set_yscale("log")
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([g[0] for g in groups], fontsize=12)
    ax.set_ylabel("median call time (ms, log)\nwall clock, bars p10–p90")
    lo, hi = ax.get_ylim()
    ax.set_ylim(lo, hi * 4)
    ax.grid(axis="x", visible=False)
    ax.set_title("median latency (colours as on the right) and speedup", fontsize=14)
    # bandwidth: bytes the form must move ÷ median time
    forms = data["forms"]
    names = [b for b in BACKENDS if "gbps" in forms.get(b, {})]
    # on a GPU, hatched behind each torch bar: the same bytes over its kernels' time in a profiler trace
    for i, b in enumerate(names):
        if forms[b].get("kernel_gbps"):
            bw.barh(i, forms[b]["kernel_gbps"], color="none", edgecolor=plots.color(b), hatch="///", lw=1)
    bw.barh(range(len(names)), [forms[b]["gbps"] for b in names], color=[plots.color(b) for b in names])
    for i, b in enumerate(names):
        kern = forms[b].get("kernel_gbps")
        end = max(forms[b]["gbps"], kern or 0)
        text = (f" call {forms[b]['gbps']:.0f} GB/s, kernels {kern:.0f} GB/s" if kern
                else f" {forms[b]['gbps']:.1f} GB/s") + f"\n moves {forms[b]['bytes'] / 2**20:.0f} MiB"
        bw.text(end, i, text, va="center", fontsize=11.5)
    bw.set_yticks(range(len(names)))
    bw.set_yticklabels([plots.label(b) for b in names])
    bw.invert_yaxis()
    bw.set_xlim(0, max([max(forms[b]["gbps"], forms[b].get("kernel_gbps") or 0) for b in names] + [1e-9]) * 2.0)
    kernels = any(forms[b].get("kernel_gbps") for b in names)
    bw.set_xlabel("GB/s = bytes ÷ call time (wall clock)"
                  + ("\nhatched: ÷ kernel time (profiler trace)" if kernels else "\n(CPU: no separate kernel time)"))
    bw.set_title("eager moves 15N, fused 3N elements", fontsize=13)
    bw.grid(axis="y", visible=False)
    plots.stamp_figure(fig, data, reference)
    return fig


# 2. Buffer reuse: peak memory and the buffers each form allocates
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
    ax.set_ylim(0, max(mib + [1]) * (1.6 if ref is not None else 1.35))  # the two-line labels under the legend
    ax.set_title("peak memory above the inputs", fontsize=15)
    eager = forms["torch_eager"]["buffers"]
    lines = [f"{b['op']:<10} {b['bytes'] / 2**20:6.1f} MiB" for b in eager[:7]]
    y = text_block(txt, lines, f"torch eager: {len(eager)} new buffers", [plots.color("torch_eager")] * 8)
    comp = forms["torch_compile"]
    clines = [f"{b}" for b in comp.get("code_buffers", [])][:3] + [f"reuse: {r}" for r in comp.get("reused", [])][:2]
    y = text_block(txt, clines, f"torch.compile: {len(comp.get('code_buffers', []))} buffer(s) in its code",
                   [plots.color("torch_compile")] * 5, below=y + 5)
    if "jax_jit" in forms:
        j = forms["jax_jit"]
        text_block(txt, [f"temp {j['temp_bytes'] / 2**20:.1f} MiB, output {j['output_bytes'] / 2**20:.1f} MiB"],
                   "jax.jit memory_analysis()", [plots.color("jax_jit")], below=y + 5)
    plots.stamp_figure(fig, data, reference)
    return fig


# 3. Relayout: einsum with a batch dimension in the middle
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
        ax.text(i, largest([r["p90_s"], r["median_s"]], 0.0) * 1e3, f"{fmt_seconds(r['median_s'])}\n{r['transposes']} transpose"
                f"{'s' * (r['transposes'] != 1)}", ha="center", va="bottom", fontsize=12.5)
        if reference is not None and k in reference.get("forms", {}):
            ax.text(i, 0, f"rec.\n{fmt_seconds(reference['forms'][k]['median_s'])}", ha="center",
                    va="bottom", fontsize=11.5, color="white", fontweight="bold")
    ax.set_xticks([0, 1])
    ax.set_xticklabels([labels["as_written"], labels["pretransposed"]], fontsize=11.5)
    ax.set_ylabel("jax.jit median (ms), p10–p90")
    ax.set_ylim(0, largest([forms[k]["p90_s"] for k in forms] + [forms[k]["median_s"] for k in forms], 1e-6)
                * 1e3 * 1.45)
    ax.grid(axis="x", visible=False)
    ax.set_title("einsum bhd,hdk→bhk", fontsize=15)
    y = -6.0
    for title, key in (("XLA's plan, as written (transposes in orange)", "as_written"),
                       ("pre-transposed operand", "pretransposed")):
        lines = forms[key]["excerpt"]
        hl = [plots.PALETTE["torch_eager"] if "transpose" in s else "#222222" for s in lines]
        y = text_block(txt, lines, title, hl, below=y + 6, step=15.0)
    verdict = ("transpose ops: the heads are copied in front\nbefore the batched dot, back after it"
               if data["relayout_inserted"] else
               f"no transpose op on this device: XLA ({data['backend']})\nchanges layouts instead")
    if reference is not None:
        verdict += f"; recorded on {reference.get('machine_short', '?')}: " + (
            "transpose ops" if reference.get("relayout_inserted") else "no transpose op")
    txt.text(0.0, 0.02, verdict, fontsize=12.5, fontweight="bold", transform=txt.transAxes, va="bottom")
    plots.stamp_figure(fig, data, reference)
    return fig


# 4. Dead-code elimination
def figure_dead_code(data: dict[str, Any], reference: dict | None = None):
    fig, (ax, tx) = plots.figure(1, 2)
    names = [b for b in BACKENDS if b in data["matmuls"]]
    vals = [data["matmuls"][b] for b in names]
    ref = None if reference is None else [reference["matmuls"].get(b) for b in names]
    _form_bars(ax, names, vals, [str(v) for v in vals], "matmuls executed per call", ref,
               f"recorded: {(reference or {}).get('machine_short')}", fontsize=18, fontweight="bold")
    ax.set_ylim(0, 4)
    st = data.get("stages", {})
    where = ", ".join(f"{k} {st[k]}" for k in ("Dynamo graph", "jaxpr", "StableHLO") if k in st)
    ax.set_title("x @ gating1 is never used" + (f"\nmatmuls in {where}" if where else ""),
                 fontsize=15 if not where else 12.5)
    t = data["times"]
    tn = [b for b in BACKENDS if b in t]
    for i, b in enumerate(tn):
        tx.bar(i, t[b]["median_s"] * 1e3, 0.62, color=plots.color(b))
        _spread(tx, i, t[b])
        if reference is not None and b in reference.get("times", {}):
            tx.text(i, 0, f"rec.\n{fmt_seconds(reference['times'][b]['median_s'])}", ha="center", va="bottom",
                    fontsize=11.5, color="white")
    for pair, xm in ((("torch_eager", "torch_compile"), 0.5), (("jax_eager", "jax_jit"), 2.5)):
        if pair[0] in t and pair[1] in t:
            s = ratio_of(t[pair[0]]["median_s"], t[pair[1]]["median_s"])
            top = largest([t[b][k] for b in pair for k in ("p90_s", "median_s")], 0.0) * 1e3
            tx.text(xm, top * 1.08, fmt_ratio(s, ".2f"), ha="center", fontsize=14, fontweight="bold")
    tx.set_xticks(range(len(tn)))
    tx.set_xticklabels([plots.label(b) for b in tn], rotation=12)
    tx.set_ylabel("median latency (ms), p10–p90")
    tx.set_ylim(0, largest([t[b][k] for b in tn for k in ("p90_s", "median_s")] + [1e-6], 1e-6) * 1e3 * 1.3)
    tx.grid(axis="x", visible=False)
    title = f"time (compiled needs {data['flops_ratio']:.2f}× the FLOPs)"
    if reference is not None:
        title += f"\nrec. = recorded on {reference.get('machine_short', '?')}"
    tx.set_title(title, fontsize=14)
    plots.stamp_figure(fig, data, reference)
    return fig

