"""Part 3's figures (:mod:`demos.topics.roofline`): each draws a measurement, live or recorded,
beside a recorded run's (``reference``). What they share with the lesson (the seed's published
numbers, the speedup, the size labels) is defined here and imported there."""
from __future__ import annotations

import math
import textwrap
from typing import Any

from demos.engine import plots
from demos.engine.figure_values import largest, measured, on_log, ratio_of
from demos.engine.peaks import peak_flops, ridge, spec_sheet
from demos.engine.timing import fmt_seconds
from demos.topics.roofline_points import WHY_CHARS, explain

TICKS = {"torch_eager": "eager", "torch_compile": "compile", "jax_jit": "jax.jit"}
MARKERS = {"torch_eager": "o", "torch_compile": "s", "jax_jit": "D"}
MODE_COLORS = {"eager": plots.PALETTE["torch_eager"], "default": plots.PALETTE["torch_compile"],
               "reduce-overhead": "#56B4E9"}
MODE_LABELS = {"eager": "torch eager", "default": "torch.compile (default)",
               "reduce-overhead": 'torch.compile(mode="reduce-overhead")'}

# What the seed published (seed lecture notebook 003 'PyTorch and JAX', float32 on an A100: its
# Triton metadata says compute capability 8.0, 108 SMs), drawn beside the live numbers. Shapes:
# two_matmuls X 256×1024, A 1024×2048, B 2048×1024; chain N = 10,000,000; mlp_block
# B,S,D,H = 256,1024,512,2048 (torch with TF32 matmuls).
SEED = {"two_matmuls": {"torch_eager": 183e-6, "torch_compile": 214e-6, "jax_jit": 205e-6},
        "chain": {"torch_eager": 549e-6, "torch_compile": 81.9e-6, "jax_jit": 124e-6},
        "mlp_block": {"torch_eager": 22.5e-3, "torch_compile": 14.4e-3, "jax_jit": 14.8e-3}}
# the precision each seed column ran at: the notebook sets torch's fp32 matmul precision to "high"
# (TF32) just before its MLP; JAX ran at its default matmul precision throughout, TF32 on an A100
SEED_PRECISION = {"two_matmuls": "torch fp32, JAX TF32", "chain": "fp32", "mlp_block": "TF32 matmuls"}


# =======================================================================================
# Shared with the lesson: speedups and size labels
# =======================================================================================
def speedup(rows: dict[str, Any], backend: str, base: str = "torch_eager") -> float | None:
    """``base``'s median ÷ ``backend``'s (None unless both were measured, the second not as 0)."""
    r = ratio_of(rows.get(base, {}).get("median_s"), rows.get(backend, {}).get("median_s"))
    return r if measured(r) else None


def short_sizes(workload: str, params: dict) -> str:
    """A workload's sizes as a title writes them: ``N=2^25``."""
    return ",".join(f"{k}={pow_text(v)}" for k, v in params.items())


def pow_text(v: int) -> str:
    """``2^k`` for a power of two from 1024 up, else with thousands separators."""
    return plots.pow2_label(v, smallest=1024)


# =======================================================================================
# Drawing helpers
# =======================================================================================
def _lean(ax, which: str = "xy") -> None:
    """Fewer tick objects (matplotlib builds each one slowly): no minor ticks, ≤ 6 major ones.
    Keeps a redraw well inside the deck's 0.5 s budget on a 2-core CPU."""
    from matplotlib.ticker import LogLocator, MaxNLocator, NullLocator

    for axis in [a for n, a in (("x", ax.xaxis), ("y", ax.yaxis)) if n in which]:
        if axis.get_scale() == "log":
            axis.set_major_locator(LogLocator(base=axis._scale.base if hasattr(axis, "_scale") else 10,
                                              numticks=7))
        else:
            axis.set_major_locator(MaxNLocator(5))
        axis.set_minor_locator(NullLocator())


def _fmt_rate(x: float, unit: str) -> str:
    for f, p in ((1e12, "T"), (1e9, "G"), (1e6, "M")):
        if x >= f:
            return f"{x / f:.3g} {p}{unit}"
    return f"{x:.3g} {unit}"


def _ref_name(reference: dict[str, Any]) -> str:
    return plots.where_measured(reference)


def _unit(seconds: float) -> tuple[float, str]:
    """The scale and unit an axis up to ``seconds`` reads in: its ticks under 1000 (three digits
    beside a panel's title, which a fourth pushed off a three-panel figure)."""
    if seconds >= 600:
        return 1 / 60, "min"
    if seconds < 1e-6:
        return 1e9, "ns"
    if seconds < 1e-3:
        return 1e6, "µs"
    if seconds < 1:
        return 1e3, "ms"
    return 1.0, "s"


# =======================================================================================
# 1. Three workloads, three outcomes
# =======================================================================================
def figure_payoff(data: dict[str, Any], reference: dict[str, Any] | None = None):
    """One panel per workload: bars per backend (median, p10–p90), speedups vs torch eager,
    the seed's A100 numbers and (if any) a recorded run's speedups written above."""
    names = list(data["workloads"])
    fig, axes = plots.figure(1, len(names))
    axes = [axes] if len(names) == 1 else list(axes)
    backends = data["backends"]
    for ax, w in zip(axes, names):
        wd = data["workloads"][w]
        rows = wd["rows"]
        meds = [rows.get(b, {}).get("median_s") for b in backends]
        top = largest([r.get("p90_s") for r in rows.values()] + meds, 0.0) or 1e-6
        scale, unit = _unit(top * 1.3)  # the axis' top (room for the speedup)
        for i, b in enumerate(backends):
            r = rows.get(b, {})
            if not measured(r.get("median_s")):
                ax.text(i, 0, "n/a", ha="center", va="bottom", fontsize=12, color="#777")
                continue
            m = r["median_s"] * scale
            spread = [r.get("p10_s"), r.get("p90_s")]
            lo, hi = ((max(m - spread[0] * scale, 0), max(spread[1] * scale - m, 0))
                      if all(measured(v) for v in spread) else (0.0, 0.0))
            ax.bar(i, m, 0.7, color=plots.color(b), yerr=[[lo], [hi]], capsize=4)  # named by its tick: no legend
            s = speedup(rows, b)
            if b != "torch_eager" and s is not None:
                ax.text(i, m + hi, f"{s:.2f}×", ha="center", va="bottom", fontsize=14, fontweight="bold")
        ax.set_xticks(range(len(backends)), [TICKS.get(b, b) for b in backends], fontsize=12.5)
        ax.set_ylabel(f"{unit} per call\n(median)")  # no taller than the axes: constrained layout keeps it inside
        ax.set_ylim(0, top * scale * 1.3)  # room for the speedup above the tallest whisker
        _lean(ax, "y")
        ax.grid(axis="x", visible=False)
        ax.set_title(f"{w}\n{short_sizes(w, wd['params'])}", fontsize=14)
        lines = []
        seed = SEED.get(w)
        if seed:
            parts = [fmt_seconds(seed[b]).split(" ") for b in backends if b in seed]
            if len({u for _, u in parts}) == 1:  # one unit: "22.5 / 14.4 / 14.8 ms" fits the panel
                nums = [v.rstrip("0").rstrip(".") if "." in v else v for v, _ in parts]
                vals = " / ".join(nums) + f" {parts[0][1]}"
            else:
                vals = " / ".join(f"{v} {u}" for v, u in parts)
            lines.append(f"A100 (seed): {vals}\n  ({SEED_PRECISION[w]})")
        if reference is not None and w in reference.get("workloads", {}):
            rr = reference["workloads"][w]["rows"]
            sp = [speedup(rr, b) for b in backends if b != "torch_eager"]
            who = _ref_name(reference).split(" ")[0]  # "H100"; the stamp below names it in full
            lines.append(f"{who} (recorded): {' / '.join(f'{s:.2f}×' if s else '—' for s in sp)}")
        if lines:  # under the bars' names, where no bar or label reaches (over the bars, a tall bar's label met it)
            ax.set_xlabel("\n".join(lines), fontsize=plots.MIN_TEXT_PT, color=plots.PALETTE["reference"],
                          loc="left", linespacing=1.1)
    plots.stamp_figure(fig, data, reference)
    return fig


# =======================================================================================
# 2. The roofline
# =======================================================================================
def _roof(ax, pk: dict[str, Any], dtype: str, xs, **kw) -> None:
    import numpy as np

    p, bw = peak_flops(pk, dtype), pk["bandwidth"]["bytes_per_s"]
    ax.plot(xs, np.minimum(p, xs * bw), **kw)


def figure_roofline(data: dict[str, Any], reference: dict[str, Any] | None = None):
    """Log-log roofline: measured roofs (solid), spec sheet (dashed, known GPUs), a recorded
    run's roofs (dotted, its own peaks) and its points for the same workload (hollow), and this
    workload's eager → compiled points."""
    import numpy as np

    pk, dtype = data["peaks"], data["dtype"]
    pts = [p for p in data["points"] if p.get("achieved")]
    fig, ax = plots.figure()
    p, bw = peak_flops(pk, dtype), pk["bandwidth"]["bytes_per_s"]
    spec = spec_sheet(pk.get("device_name"))
    ref_pk = (reference or {}).get("peaks")
    if not (ref_pk and dtype in ref_pk.get("compute", {})):
        ref_pk = None
    ref_pts = [q for q in reference.get("points", []) if q.get("achieved") and q.get("dtype") == dtype] \
        if ref_pk and reference.get("workload") == data["workload"] else []
    intens = [q["intensity"] for q in data["points"]] + [ridge(p, bw)]
    if spec and dtype in spec:
        intens.append(ridge(spec[dtype], spec["bandwidth"]))
    if ref_pk:
        intens.append(ridge(peak_flops(ref_pk, dtype), ref_pk["bandwidth"]["bytes_per_s"]))
    lo, hi = min(intens) / 4, max(intens) * 6
    xs = np.logspace(math.log10(lo), math.log10(hi), 60)
    where = "recorded" if data.get("recorded") else "this machine"
    _roof(ax, pk, dtype, xs, color=plots.PALETTE["floor"], lw=2.5,
          label=f"{where} (measured):\n{_fmt_rate(bw, 'B/s')} copy, {_fmt_rate(p, 'FLOP/s')} {dtype} GEMM")
    ax.axvline(ridge(p, bw), color=plots.PALETTE["floor"], lw=1, ls=":", alpha=0.6)
    if spec and dtype in spec:
        ax.plot(xs, np.minimum(spec[dtype], xs * spec["bandwidth"]), color=plots.PALETTE["accent"], lw=2, ls="--",
                label=f"{spec['name']} spec sheet:\n{_fmt_rate(spec['bandwidth'], 'B/s')}, "
                      f"{_fmt_rate(spec[dtype], 'FLOP/s')}")
    if ref_pk:
        _roof(ax, ref_pk, dtype, xs, color=plots.PALETTE["reference"], lw=1.5, ls=":",
              label=f"recorded{' (hollow points)' if ref_pts else ''}:\n{ref_pk.get('device_name', '?')[:30]}, "
                    f"{str(ref_pk.get('created', ''))[:10]}")
        for q in ref_pts:
            ax.scatter(q["intensity"], q["achieved"], s=70, marker=MARKERS.get(q["backend"], "o"),
                       facecolors="none", edgecolors=plots.color(q["backend"]), linewidths=1.5, zorder=3)
    for q in pts:
        ax.scatter(q["intensity"], q["achieved"], s=120, marker=MARKERS.get(q["backend"], "o"),
                   color=plots.color(q["backend"]), edgecolors="black", linewidths=0.6, zorder=4,
                   label=f"{plots.label(q['backend'])}: {fmt_seconds(q['median_s'])}")
    by = {q["backend"]: q for q in pts}
    if "torch_eager" in by and "torch_compile" in by:
        e, c = by["torch_eager"], by["torch_compile"]
        ax.annotate("", xy=(c["intensity"], c["achieved"]), xytext=(e["intensity"], e["achieved"]),
                    arrowprops=dict(arrowstyle="->", color=plots.color("torch_compile"), lw=1.8), zorder=3)
        # the note in the axes' bottom right corner, below the flat roof: clear of the points and the legend
        ax.text(0.98, 0.04, f"torch.compile: intensity ×{c['intensity'] / e['intensity']:.1f}, "
                f"FLOP/s ×{c['achieved'] / e['achieved']:.1f}", transform=ax.transAxes, ha="right", va="bottom",
                fontsize=12.5,
                color=plots.color("torch_compile"))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ys = [q["achieved"] for q in pts + ref_pts] + [p]
    if spec and dtype in spec:
        ys.append(spec[dtype])
    if ref_pk:
        ys.append(peak_flops(ref_pk, dtype))
    ax.set_ylim(min(min(ys) / 5, lo * bw), max(ys) * 3)
    _lean(ax)
    ax.set_xlabel("arithmetic intensity (FLOP / byte, analytic)")
    ax.set_ylabel("FLOP/s achieved\n(FLOPs ÷ call time)")
    ax.set_title(f"{data['workload']} ({short_sizes(data['workload'], data['params'])}, {dtype}) on the roofline", fontsize=15)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=11.5, frameon=False)
    plots.stamp_figure(fig, data, reference)
    return fig


# =======================================================================================
# 3. Predicted vs measured
# =======================================================================================
def figure_predicted(data: dict[str, Any], reference: dict[str, Any] | None = None):
    """One row per point: predicted (grey diamond) and measured (coloured marker) time on a log
    axis, joined by a line; measured ÷ predicted and the reason in the right-hand column."""
    pts = data["points"]
    fig, (ax, tx) = plots.figure(1, 2, width_ratios=[1.25, 1], sharey=True)
    ys = list(range(len(pts)))[::-1]
    times = [q["predicted_s"] for q in pts] + [q["median_s"] for q in pts if q.get("median_s")]
    lo, hi = min(times) / 3, max(times) * 3
    ref_label = f"recorded on {_ref_name(reference)} (its sizes)" if reference is not None else ""
    for y, q in zip(ys, pts):
        ax.scatter(q["predicted_s"], y, marker="D", s=60, color=plots.PALETTE["reference"], zorder=3,
                   label="predicted" if y == ys[0] else None)
        if q.get("median_s"):
            ax.plot([q["predicted_s"], q["median_s"]], [y, y], color="#999", lw=1.2, zorder=2)
            ax.scatter(q["median_s"], y, s=80, color=plots.color(q["backend"]), zorder=4,
                       marker=MARKERS.get(q["backend"], "o"))
            tx.text(0.0, y, f"×{q['ratio']:.1f}", va="center", fontsize=11.5, fontweight="bold")
        else:
            tx.text(0.0, y, q.get("error") or "not measured", va="center", fontsize=12, color="#b00020")
        r = next((p for p in (reference or {}).get("points", []) if p["workload"] == q["workload"]
                  and p["backend"] == q["backend"] and p.get("median_s")), None)
        if r is not None:
            ax.scatter(r["median_s"], y, s=60, facecolors="none", edgecolors=plots.PALETTE["reference"], zorder=3,
                       label=ref_label if ref_label not in ax.get_legend_handles_labels()[1] else None)
            lo, hi = min(lo, r["median_s"] / 3), max(hi, r["median_s"] * 3)
    # the reasons: one per run of rows that share it (two backends often do), centred on the run.
    # Read afresh from each point's numbers (a record stores the phrase of the code that made it)
    runs: list[list] = []
    for y, q in zip(ys, pts):
        if q.get("median_s"):
            why = explain(q, data["peaks"].get("device"))
            if runs and runs[-1][1] == why and runs[-1][0][-1] == y + 1:
                runs[-1][0].append(y)
            else:
                runs.append([[y], why])
    for yy, why in runs:
        tx.text(0.19, sum(yy) / len(yy), textwrap.fill(why, WHY_CHARS), va="center", fontsize=11.5, linespacing=1.0)
        if len(yy) > 1:  # a bracket: the reason holds for every row it spans
            tx.plot([0.17, 0.17], [min(yy) - 0.3, max(yy) + 0.3], color="#999999", lw=1.5)
    ax.set_yticks(ys, [f"{q['workload']} · {plots.label(q['backend'])}" for q in pts], fontsize=11.5)
    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(-0.5, len(pts) - 0.5)
    _lean(ax, "x")  # the y ticks are the rows: every one labelled
    # nine rows of 11.5 pt labels need some 180 px above a footer of verdicts: one line of headings, the
    # roofs in the legend's "predicted", the unit in the title and no x label
    ax.set_title(f"{data['dtype']}: seconds per call (log)", fontsize=14)
    ax.grid(axis="y", visible=False)
    from matplotlib.lines import Line2D

    pk = data["peaks"]
    handles, labels = ax.get_legend_handles_labels()
    labels[0] = (f"predicted: max(FLOPs ÷ {_fmt_rate(peak_flops(pk, data['dtype']), 'FLOP/s')}, "
                 f"bytes ÷ {_fmt_rate(pk['bandwidth']['bytes_per_s'], 'B/s')})")
    handles.insert(1, Line2D([], [], marker="o", ls="none", ms=8, color="#555555"))
    labels.insert(1, "measured (its colour)")
    # above both panels: inside the left one, a recorded run's third entry squeezed its axes
    fig.legend(handles, labels, loc="outside upper left", ncols=len(labels), fontsize=11.5, frameon=False,
               columnspacing=1.0, handletextpad=0.3)
    tx.set_xlim(0, 1)
    tx.axis("off")
    tx.set_title("measured ÷ predicted, and why", fontsize=14)
    plots.stamp_figure(fig, data, reference)
    return fig


# =======================================================================================
# 4. Overheads removed differently
# =======================================================================================
def figure_overheads(data: dict[str, Any], reference: dict[str, Any] | None = None):
    fig, ax = plots.figure()
    sizes = data["sizes"]
    for mode, rows in data["modes"].items():
        ls = "--" if mode == "reduce-overhead" else "-"
        ax.plot(sizes, [on_log(r["median_s"]) * 1e6 for r in rows], ls, marker="o", color=MODE_COLORS[mode], lw=2.2,
                label=f"{MODE_LABELS[mode]}: floor {fmt_seconds(rows[0]['median_s'])}")  # a 0 or NaN: at 1 ns, or none
        ax.fill_between(sizes, [on_log(r["p10_s"]) * 1e6 for r in rows], [on_log(r["p90_s"]) * 1e6 for r in rows],
                        color=MODE_COLORS[mode], alpha=0.12, lw=0)
    if reference is not None and reference.get("modes"):
        for mode, rows in reference["modes"].items():
            ax.plot(reference["sizes"], [on_log(r["median_s"]) * 1e6 for r in rows], ":", color=MODE_COLORS.get(mode, "#777"),
                    lw=1.5, alpha=0.8)
        ax.text(0.99, 0.02, f"dotted: recorded on {_ref_name(reference)}", transform=ax.transAxes,
                ha="right", va="bottom", fontsize=11.5, color=plots.PALETTE["reference"])
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    _lean(ax)
    ax.set_xlabel(f"N (elements of x and y), {data['workload']}")
    ax.set_ylabel("median call time\n(µs, wall clock)")
    if data["device"] == "cuda":
        note = ("GPU: fusion already left one launch per call; a CUDA graph replays it, but the per-call "
                "host time (guards, wrapper) stays, and each replay copies the inputs in")
    else:
        note = ("CPU: no kernel launches to batch, so reduce-overhead has nothing to remove "
                "(CUDA graphs need a GPU); both compiled modes run the same C++")
    ax.set_title(textwrap.fill(note, 95), fontsize=13)
    ax.legend(loc="upper left", fontsize=12)
    plots.stamp_figure(fig, data, reference)
    return fig
