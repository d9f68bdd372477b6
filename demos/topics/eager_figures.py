"""Part 1's figures: each draws a measurement of :mod:`demos.topics.eager`, live or recorded
(``figure(data, reference)``), from ``data`` alone."""
from __future__ import annotations

import math

from demos.engine import plots
from demos.engine.figure_values import log_limits, measured, on_log, ratio_of
from demos.engine.timing import fmt_seconds
from demos.introspection import profiling


def figure_timeline(data: dict, reference: dict | None = None):
    runs = [data]
    name = "recorded" if data.get("recorded") else "live"
    titles = [f"eager ({data.get('machine_short', name)})" if data.get("recorded") else "eager (here)"]
    if reference is not None:
        runs.append(reference)
        titles.append(plots.where_measured(reference))
    c = data["counts"]
    what = "GPU kernels" if data.get("device_lane") == "cuda" else "ops, each run by the host"
    title = (f"Eager complex_activation, N={plots.pow2_label(data.get('N', 0))}: {c['ops']} aten ops issued → "
             f"{c['kernels']} {what}")
    if reference is not None:
        title += f"  (recorded: {reference['counts']['kernels']})"
    fig = profiling.timeline_figure(runs, titles, title=title)
    plots.text_floor(fig)  # nothing under plots.MIN_TEXT_PT, whatever the shared timeline draws
    plots.stamp_figure(fig, data, reference)
    return fig



def _trap_axes(ax, data: dict, title: str) -> None:
    import numpy as np

    names = [b for b in data["rows"] if "error" not in data["rows"][b]]
    x = np.arange(len(names))
    wdt = 0.38
    # the axis from every time shown (a time under a nanosecond drawn at figure_values.TIME_FLOOR_S, a
    # missing one not at all), with headroom above for the legend
    shown = [data["rows"][b][k][q] for b in names for k in ("returned", "synced") for q in ("median_s", "p10_s", "p90_s")]
    lo, hi = log_limits(shown, below=2.5, above=40)
    for i, b in enumerate(names):
        r = data["rows"][b]
        ret, syn = r["returned"]["median_s"], r["synced"]["median_s"]
        col = plots.color(b)
        ax.bar(i - wdt / 2, on_log(ret) * 1e6, wdt, color=col, alpha=0.35, hatch="//", edgecolor=col,
               label="clock stopped when the call returns" if i == 0 else None)
        ax.bar(i + wdt / 2, on_log(syn) * 1e6, wdt, color=col,
               label="clock stopped after synchronising" if i == 0 else None)
        for xx, v, rr in ((i - wdt / 2, ret, r["returned"]), (i + wdt / 2, syn, r["synced"])):
            at = on_log(v)
            if measured(at) and measured(rr["p10_s"]) and measured(rr["p90_s"]):
                ax.errorbar(xx, at * 1e6, yerr=[[max(at - on_log(rr["p10_s"]), 0) * 1e6],
                                                [max(on_log(rr["p90_s"]) - at, 0) * 1e6]],
                            color="#333333", capsize=3, lw=1)
            ax.text(xx, (at if measured(at) else lo) * 1e6 * 1.15, fmt_seconds(v), ha="center", va="bottom",
                    fontsize=12.5, bbox=dict(facecolor="white", alpha=0.8, edgecolor="none", pad=1))
    ax.set_xticks(x)
    ax.set_xticklabels([f"{plots.label(b)}\n×{data['rows'][b]['ratio']:.1f} hidden"
                        if data["rows"][b]["ratio"] >= 1.5 else f"{plots.label(b)}\n×{data['rows'][b]['ratio']:.2f}"
                        for b in names])
    ax.set_yscale("log")
    plots.no_minor_ticks(ax)
    ax.set_ylim(lo * 1e6, hi * 1e6)
    ax.set_ylabel("µs per call (log)")
    ax.set_title(title, fontsize=14)
    ax.grid(axis="x", visible=False)
    errors = [f"{plots.label(b)}: {r['error']}" for b, r in data["rows"].items() if "error" in r]
    if errors:
        ax.text(0.5, 0.95, "\n".join(errors)[:160], transform=ax.transAxes, ha="center", va="top",
                fontsize=12, color="#b00020")


def figure_sync_trap(data: dict, reference: dict | None = None):
    panels = [data] + ([reference] if reference is not None else [])
    fig, axes = plots.figure(1, len(panels))
    axes = [axes] if len(panels) == 1 else list(axes)
    for ax, d in zip(axes, panels):
        where = "seed's GPU, mean ± sd" if d.get("seed") else plots.where_measured(d) + ", median, p10–p90"
        _trap_axes(ax, d, f"{d['workload']} · {d['dtype']}\n{where}")
    axes[0].legend(loc="upper right", fontsize=12)
    parts = []
    for b, r in data["rows"].items():
        if "error" not in r:
            parts.append(f"{plots.label(b)} ×{r['ratio']:.1f}")
    fig.suptitle("synchronised ÷ unsynchronised clock: " + ", ".join(parts), fontsize=16)
    plots.stamp_figure(fig, data, reference)
    return fig



def regime_at(data: dict, name: str, N: int) -> str:
    """Which regime the measured point at N is in (vs the floor and the copy-bandwidth line)."""
    i = data["Ns"].index(N)
    t = data["series"][name][i]["median_s"]
    floor = data["floors_s"][name]
    bw_t = N * data["bytes_per_elem"][name] / data["bandwidth_Bps"]
    if not measured(t):
        return "not measured"
    if t < 2 * floor:
        return "overhead-bound"
    if t <= 2.5 * max(bw_t, floor):
        return "bandwidth-bound"
    return "slower than copy: compute or allocation"


def effective_bandwidth(data: dict, name: str, N: int | None = None) -> float:
    """Bytes the eager form moves at N ÷ measured seconds (B/s); NaN where no time was measured."""
    N = N or data["Ns"][-1]
    t = data["series"][name][data["Ns"].index(N)]["median_s"]
    return ratio_of(N * data["bytes_per_elem"][name], t)


def figure_regimes(data: dict, reference: dict | None = None):
    import numpy as np

    fig, ax = plots.figure()
    op = data["op"]
    Ns = np.array(data["Ns"], dtype=float)
    colors = {op: plots.PALETTE["torch_compile"], "complex_activation": plots.PALETTE["torch_eager"]}
    labels = {op: f"one op: {op}", "complex_activation": "eager complex_activation (6 ops)"}
    bw = data["bandwidth_Bps"]
    grid = np.geomspace(Ns.min(), Ns.max(), 200)
    for name in data["series"]:
        pts = data["series"][name]
        med = np.array([p["median_s"] for p in pts]) * 1e6
        lo = np.array([p["p10_s"] for p in pts]) * 1e6
        hi = np.array([p["p90_s"] for p in pts]) * 1e6
        ax.fill_between(Ns, lo, hi, color=colors[name], alpha=0.15, lw=0)
        ax.plot(Ns, med, "o-", color=colors[name], label=labels[name], lw=2, ms=5)
        floor = data["floors_s"][name] * 1e6
        model = np.maximum(floor, grid * data["bytes_per_elem"][name] / bw * 1e6)
        ax.plot(grid, model, "--", color=colors[name], lw=1.3, alpha=0.9)
    # reference-line labels (once)
    ax.plot([], [], "--", color="#555555", label=f"model: max(floor at N=1, bytes ÷ {bw / 1e9:.0f} GB/s copy)")
    n_star = data["crossover"][op]
    if Ns.min() <= n_star <= Ns.max():
        ax.axvline(n_star, color=plots.PALETTE["accent"], lw=1.5, ls=":",
                   label=f"model crossover N ≈ 2^{math.log2(n_star):.1f}")
    if reference is not None and reference.get("series"):
        rop = reference["op"]
        drawn = []
        for name, ls in ((rop, ":"), ("complex_activation", "-.")):
            pts = reference["series"].get(name)
            if pts:
                drawn.append(ax.plot(reference["Ns"], [p["median_s"] * 1e6 for p in pts], ls, lw=1.6,
                                     color=plots.PALETTE["reference"])[0])
        if drawn:  # one legend row for both recorded lines: the legend must not grow over the data
            drawn[0].set_label(f"recorded {reference.get('machine_short', '')}: {rop} (dotted)"
                               + (", complex_activation (dash-dot)" if len(drawn) > 1 else ""))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    plots.no_minor_ticks(ax)
    ax.set_xlabel("N (elements)")
    ax.set_ylabel("µs per call\n(median, wall clock)")
    mc = data["measured_crossover"].get(op)
    if mc:
        i = data["Ns"].index(mc)
        ax.plot([mc], [data["series"][op][i]["median_s"] * 1e6], "s", ms=11, mfc="none", mec=plots.PALETTE["accent"],
                mew=2, label=f"{op} leaves its floor (2× floor) at N = {plots.pow2_label(mc)}")
    where = plots.where_measured(data)
    ax.set_title(f"{op}: flat at {fmt_seconds(data['floors_s'][op])} (overhead), then ∝ N (bandwidth); "
                 f"model crossover N ≈ 2^{math.log2(n_star):.1f} — {where}", fontsize=15)
    lines = [f"at N={plots.pow2_label(data['Ns'][-1])} (copy here: {bw / 1e9:.1f} GB/s):"]
    for name in data["series"]:
        eff = effective_bandwidth(data, name)
        said = f"{eff / 1e9:.1f} GB/s" if measured(eff) else "—"
        lines.append(f"  {name}: {said} effective, {regime_at(data, name, data['Ns'][-1])}")
    ax.text(0.01, 0.98, "\n".join(lines), transform=ax.transAxes, ha="left", va="top", fontsize=12,
            bbox=dict(facecolor="white", alpha=0.85, edgecolor="none"), color="#333333")
    # under the text box, left of the data (which climbs to the upper right)
    ax.legend(loc="upper left", bbox_to_anchor=(0.0, 0.76), fontsize=11.5, framealpha=0.9, ncols=2, columnspacing=1.0)
    plots.stamp_figure(fig, data, reference)
    return fig
