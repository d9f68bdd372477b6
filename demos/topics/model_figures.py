"""Part 6's figures: each draws a measurement of :mod:`demos.topics.model`, live or recorded
(``figure(data, reference)``), from ``data`` alone."""
from __future__ import annotations

import math
from typing import Any

from matplotlib.ticker import MaxNLocator

from demos.engine import plots
from demos.engine.figure_values import largest, measured, ratio_of
from demos.engine.timing import fmt_seconds

SEED_RANGE = (1.2, 1.8)  # seed card: typical torch.compile training speedups
PAPER = {"inference": 2.27, "training": 1.41}  # PyTorch 2 paper: geomean over 180+ models, A100
# each against eager at the same precision (its §6, Table 3): 2.27× is its float32 inference rows; the abstract
# names no precision for 1.41× (its table has float32 and AMP training runs)
PAPER_PRECISION = {"inference": "float32", "training": "eager at the same precision"}
STANCES = ("default", "eager_on_recompile", "fail_on_recompile")


def _bars(ax, names: list[str], values: list[float], colors: list[str], texts: list[str],
          tops: list[float] | None = None, **kw) -> None:
    """Bars with a label above each (above ``tops``, e.g. the whiskers, when given)."""
    ax.bar(range(len(names)), values, color=colors, width=0.65, edgecolor="white", **kw)
    for i, (v, t) in enumerate(zip(tops or values, texts)):
        ax.text(i, v if measured(v) else 0.0, t, ha="center", va="bottom", fontsize=12)
    ax.set_xticks(range(len(names)), names, fontsize=12)
    ax.set_ylim(0, largest(values + list(tops or []) + [1e-9], 1e-9) * 1.3)
    ax.grid(axis="x", visible=False)


def ops_totals(data: dict) -> dict[str, Any]:
    """Eager ops issued (model part: without the optimizer, eager in both) vs compiled launches."""
    opt = data["eager"].get("optimizer", {}).get("total", 0)
    eager = sum(p["total"] for p in data["eager"].values())
    kernels = sum(g["kernels"] for g in data["graphs"])
    library = sum(g["library"] for g in data["graphs"])
    names = [k for g in data["graphs"] for k in g["kernel_names"] + g["extern"]]
    return {"eager": eager, "model": eager - opt, "optimizer": opt, "kernels": kernels, "library": library,
            "launches": kernels + library, "graphs": sum(not g["backward"] for g in data["graphs"]),
            "per_kernel": (eager - opt) / max(kernels, 1), "per_launch": (eager - opt) / max(kernels + library, 1),
            "attention_fused": any("scaled_dot_product" in k for k in names)}


def figure_ops(data: dict, reference: dict | None = None):
    tot, cfg = ops_totals(data), data["cfg"]
    fig, (ax, side) = plots.figure(1, 2, gridspec_kw={"width_ratios": [2.3, 1]})
    shade = {"forward": 1.0, "backward": 0.65, "optimizer": 0.35}
    left = 0.0
    for ph, e in data["eager"].items():
        for part, a in (("compute", 1.0), ("layout", 0.3)):
            ax.barh(1, e[part], left=left, color=plots.color("torch_eager"), alpha=a * shade[ph], edgecolor="white",
                    label=None if ph != "forward" else "eager: " + ("compute ops" if part == "compute" else "views"))
            left += e[part]
    ax.text(left, 1, f" {tot['eager']:,}", va="center", fontsize=16, fontweight="bold")
    left = 0.0
    for g in data["graphs"]:
        ph = "backward" if g["backward"] else "forward"
        for part, a in (("kernels", 1.0), ("library", 0.45)):
            ax.barh(0, g[part], left=left, color=plots.color("torch_compile"), alpha=a * shade[ph], edgecolor="white",
                    label=None if g["backward"] else ("fused kernels" if part == "kernels" else "library calls (mm, bmm)"))
            left += g[part]
    if tot["optimizer"]:
        ax.barh(0, tot["optimizer"], left=left, color=plots.color("torch_eager"), alpha=0.35, hatch="//",
                edgecolor="white", label="AdamW: eager in both")
        left += tot["optimizer"]
    ax.text(left, 0, f" {tot['launches'] + tot['optimizer']:,}", va="center", fontsize=16, fontweight="bold")
    ax.set_yticks([1, 0], ["torch eager\naten ops issued", "torch.compile\nlaunches"])
    unit = "training step" if data["step"] == "training" else "forward pass"
    ax.set_xlabel(f"calls per {unit}")
    ax.set_xlim(0, max(tot["eager"], 1) * 1.2)
    ax.grid(axis="y", visible=False)
    blk, fw = data["block"], data["eager"]["forward"]
    lines = [f"eager, one block: {blk['total']} ops", f"  ({blk['compute']} compute, {blk['layout']} views)",
             f"eager, {cfg['layers']} blocks: {fw['total']} ops" + (" (+ loss)" if tot["optimizer"] else ""),
             f"compiled: {tot['graphs']} graph, {tot['kernels']} fused", f"  kernels + {tot['library']} library calls",
             f"eager ops ÷ fused kernels {tot['per_kernel']:.1f}×", f"eager ops ÷ all launches {tot['per_launch']:.1f}×",
             "most issued: " + ", ".join(f"{k} {v}" for k, v in fw["top"][:2])]
    if tot["attention_fused"]:
        lines += ["Inductor matched softmax(QKᵀ)V", "  to one fused attention kernel"]
    if tot["optimizer"]:
        lines += ["shades, left to right:", "  forward, backward, AdamW"]
    if reference is not None:
        rt = ops_totals(reference)
        lines += [f"recorded ({reference.get('machine_short', '')}):", f"  {rt['eager']:,} ops → {rt['launches']} launches"]
    side.axis("off")
    side.text(0, 1, "\n".join(lines), va="top", fontsize=11.5, family="monospace", transform=side.transAxes)
    ax.legend(loc="lower right", fontsize=12, frameon=False)  # under the eager bar, right of the compiled one
    ax.set_title(f"One {unit}, {cfg['layers']} layers: eager issues {tot['eager']:,} ops; compiled launches "
                 f"{tot['launches']}" + (f" + {tot['optimizer']} eager AdamW ops" if tot["optimizer"] else ""),
                 loc="left", fontsize=15)
    plots.stamp_figure(fig, data, reference)
    return fig


def figure_speed(data: dict, reference: dict | None = None):
    fig, (ax, sx) = plots.figure(1, 2, gridspec_kw={"width_ratios": [1.3, 1]})
    names = list(data["rows"])
    rows = [data["rows"][k] for k in names]
    texts = [fmt_seconds(r["median_s"]) + (f"\n×{data['speedup'][k]:.2f}" if k in data["speedup"] else "")
             for k, r in zip(names, rows)]
    labels = [{"torch_compile_ro": "reduce-\noverhead"}.get(k, plots.label(k)) for k in names]
    _bars(ax, labels, [r["median_s"] * 1e3 for r in rows], [plots.color(k.replace("_ro", "")) for k in names], texts,
          tops=[r["p90_s"] * 1e3 for r in rows])
    for i, r in enumerate(rows):
        if all(measured(r[k]) for k in ("median_s", "p10_s", "p90_s")):
            ax.errorbar(i, r["median_s"] * 1e3, yerr=[[max(r["median_s"] - r["p10_s"], 0) * 1e3],
                                                      [max(r["p90_s"] - r["median_s"], 0) * 1e3]],
                        color="#333333", capsize=4)
    ax.set_ylim(0, largest([r[k] for r in rows for k in ("p90_s", "median_s")], 1e-9) * 1e3 * 1.45)
    ax.set_ylabel(f"ms per {'training step' if data['step'] == 'training' else 'forward'}\n(median, p10–p90)")
    notes = list(data.get("skipped", {}).values())
    if data.get("agree"):
        notes.append("forward outputs vs eager, max|Δ|÷max|y|:\n"
                     + ", ".join(f"{plots.label(k)} {v:.0e}" for k, v in data["agree"].items()))
    ax.set_xlabel("\n".join(notes), fontsize=11.5, color="#555555")
    # right: speedup vs work per call — the sizes measured this session, the seed's range, the paper
    paper = PAPER[data["step"]]
    sx.axhspan(*SEED_RANGE, color=plots.PALETTE["accent"], alpha=0.2)
    sx.axhline(paper, color="#555555", ls="--", lw=1.2)
    sx.axhline(1.0, color="#999999", lw=0.8)
    here = [data["flops"], data["speedup"]["torch_compile"]]
    pts = list(data["history"].items()) or [("these sizes", here)]
    for lbl, (x, y) in pts:
        cur = [x, y] == here
        sx.plot(x, y, "o", color=plots.color("torch_compile"), alpha=1.0 if cur else 0.45, ms=11 if cur else 7)
        sx.annotate(lbl, (x, y), textcoords="offset points", xytext=(6, -12 if cur else 4), fontsize=11.5)
    if reference is not None and reference.get("speedup"):
        rx, ry = reference["flops"], reference["speedup"]["torch_compile"]
        sx.plot(rx, ry, "s", color=plots.PALETTE["reference"], ms=9)
        # labelled where it sits, as this session's points are (a legend box covered one or the other)
        sx.annotate(f"recorded: {reference.get('machine_short', '')}", (rx, ry), textcoords="offset points",
                    xytext=(-8, 8), ha="right", fontsize=11.5, color=plots.PALETTE["reference"])
    sx.set_xscale("log")
    plots.no_minor_ticks(sx)
    ys = [y for _, (_, y) in pts]
    sx.set_ylim(min(ys + [0.9]) * 0.9, max(ys + [paper, SEED_RANGE[1]]) * 1.2)
    tr = sx.get_yaxis_transform()
    sx.text(0.02, SEED_RANGE[1], "seed card: training 1.2–1.8× typical", transform=tr, fontsize=11.5, va="bottom")
    how = PAPER_PRECISION[data["step"]]
    sx.text(0.02, paper, f"PyTorch 2 paper: {paper}× {data['step']}\n(A100, {how}, geomean of 180+ models)",
            transform=tr, fontsize=11.5, va="bottom", color="#444444")
    sx.set_xlabel("matmul FLOPs per call (log)\nop-heavy ← → big matmuls")
    sx.set_ylabel("torch.compile ÷ eager")
    c = data["cfg"]
    fig.suptitle(f"{c['layers']} layers, batch {c['batch']} × seq {c['seq']}, D={c['width']}, {c['dtype']}, "
                 f"{'training step' if data['step'] == 'training' else 'inference'}: torch.compile "
                 f"×{data['speedup']['torch_compile']:.2f} over eager", fontsize=16)
    plots.stamp_figure(fig, data, reference)
    return fig


def figure_backward(data: dict, reference: dict | None = None):
    fig, (gx, sx, px) = plots.figure(1, 3, gridspec_kw={"width_ratios": [1.25, 1.1, 0.8]})
    fw = [g for g in data["graphs"] if not g["backward"]]
    bw = [g for g in data["graphs"] if g["backward"]]
    w = 0.27
    for i, gs in enumerate((fw, bw)):
        for j, (k, col, lbl) in enumerate((("nodes", "#999999", "aten ops in the graph"),
                                           ("kernels", plots.color("torch_compile"), "fused kernels"),
                                           ("library", "#9ecae1", "library calls"))):
            v = sum(g[k] for g in gs)
            gx.bar(i + (j - 1) * w, v, w, color=col, label=lbl if i == 0 else None)
            gx.text(i + (j - 1) * w, v, str(v), ha="center", va="bottom", fontsize=11.5)
    nsaved, mib = sum(g["saved"] for g in bw), sum(g["saved_bytes"] for g in bw) / 2**20
    gx.set_xticks([0, 1], [f"forward graph\nsaves {nsaved} tensors\n({mib:.1f} MiB)", "backward graph"], fontsize=12)
    gx.set_title("AOTAutograd: joint graph, split", loc="left", fontsize=14)
    gx.legend(loc="upper left", fontsize=11.5)
    gx.set_ylim(0, max(sum(g["nodes"] for g in gs) for gs in (fw, bw) if gs) * 1.9)  # room for the legend
    gx.grid(axis="x", visible=False)
    short = {"torch_eager": "eager", "torch_compile": "compiled", "jax": "JAX", "jax_remat": "JAX +\nremat"}
    s = data["saved"]
    names = [k for k in short if k in s]
    _bars(sx, [short[k] for k in names], [s[k]["bytes"] / 2**20 for k in names],
          [plots.color("jax_jit" if k.startswith("jax") else k) for k in names],
          [f"{s[k]['bytes'] / 2**20:.1f}\n{s[k]['tensors']} t." for k in names])
    sx.set_ylabel("MiB")
    sx.set_title("activations kept for backward", loc="left", fontsize=14)
    sx.text(0.0, -0.24, "torch: saved_tensors_hooks · JAX: jax.vjp residuals\n(weights left out)",
            transform=sx.transAxes, fontsize=11.5, color="#555555", va="top")
    p = data["peak"]
    _bars(px, ["eager", "compiled"], [p[k] / 2**20 for k in ("torch_eager", "torch_compile")],
          [plots.color("torch_eager"), plots.color("torch_compile")], [f"{p[k] / 2**20:.2f}" for k in p])
    px.set_ylabel("MiB")
    px.set_title("peak, one step", loc="left", fontsize=14)
    px.text(0.0, -0.24, f"{data['peak_how']},\nabove weights + AdamW state", transform=px.transAxes, fontsize=11.5,
            color="#555555", va="top")
    if reference is not None:
        px.plot([0, 1], [reference["peak"][k] / 2**20 for k in ("torch_eager", "torch_compile")], "_", ms=40,
                mew=2.5, color=plots.PALETTE["reference"], label=f"recorded: {reference.get('machine_short', '')}")
        px.legend(loc="lower right", fontsize=11.5)
    pe, pc, c = p["torch_eager"], p["torch_compile"], data["cfg"]
    fig.suptitle(f"Training step, {c['layers']} layers, {c['batch']}×{c['seq']} tokens, D={c['width']}: peak "
                 f"compiled {pc / 2**20:.2f} vs eager {pe / 2**20:.2f} MiB ({(pc / pe - 1) * 100:+.1f}%)", fontsize=15)
    plots.stamp_figure(fig, data, reference)
    return fig


def _steps(n: float) -> str:
    return "never (no gain)" if math.isinf(n) else f"{max(1, round(n)):,} step" + ("s" if round(n) > 1 else "")


def _hbars(ax, labels: list[str], values: list[float], texts: list[str], colors: list[str], title: str,
           xlabel: str) -> None:
    ax.barh(range(len(values)), values, color=colors, alpha=0.85)
    for i, (v, t) in enumerate(zip(values, texts)):
        ax.text(v if measured(v) else 0.0, i, " " + t, va="center", fontsize=11.5)
    ax.set_yticks(range(len(values)), labels, fontsize=11.5)
    top = largest(values, 0.0)  # every bar empty ("never"): a unit scale, not a 1e-9 offset over the label
    ax.set_xlim(0, top * 2.4 if top > 0 else 1.0)
    ax.invert_yaxis()
    ax.set(xlabel=xlabel)
    ax.set_title(title, loc="left", fontsize=14)
    ax.grid(axis="y", visible=False)


def figure_compile_cost(data: dict, reference: dict | None = None):
    fig, (cx, bx, st) = plots.figure(1, 3, gridspec_kw={"width_ratios": [0.9, 1, 1.2]})
    L, hows, blue = data["cfg"]["layers"], ("whole", "regional"), plots.color("torch_compile")
    g = {k: data[k]["graphs"] for k in hows}
    _bars(cx, [f"whole\n{g['whole']} graph", f"regional\n{g['regional']} graphs, {L} blocks"],
          [data[k]["compile_s"] for k in hows], [blue, "#6baed6"], [fmt_seconds(data[k]["compile_s"]) for k in hows])
    if reference is not None:
        cx.plot([0, 1], [reference[k]["compile_s"] for k in hows], "_", ms=40, mew=2.5,
                color=plots.PALETTE["reference"], label=f"recorded: {reference.get('machine_short', '')}")
        cx.legend(loc="upper right", fontsize=11.5)
    cx.set_ylabel("compile time (s)")  # caches: in the footer stamp
    cx.set_title("compiling a training step", loc="left", fontsize=14)
    be = [data[k]["break_even"] for k in hows]
    _hbars(bx, [f"{k}\n{fmt_seconds(data[k]['steady']['median_s'])}/step" for k in hows],
           [b if math.isfinite(b) else 0.0 for b in be], [_steps(b) for b in be], [blue, "#6baed6"],
           f"break-even (eager {fmt_seconds(data['eager']['median_s'])}/step)", "training steps until compiling pays")
    sd = [data["stance"][s] for s in STANCES]
    _hbars(st, [s.replace("_on_", "_on_\n") for s in STANCES], [r["seconds"] for r in sd],
           [f"{r['compiles']} compile{'s' * (r['compiles'] != 1)}, {r['calls']}/{r['shapes']} calls"
            + (f"\nthen raised {r['error'].split(':')[0]}" if r["error"] else "") for r in sd],
           [blue, plots.color("torch_eager"), "#b00020"], "set_stance: a shape-varying loop",
           f"s for {sd[0]['shapes']} sequence lengths, 1 block")
    bx.xaxis.set_major_locator(MaxNLocator(3, integer=True))  # 5-digit step counts: few ticks
    ratio = ratio_of(data["whole"]["compile_s"], data["regional"]["compile_s"])
    faster = (f"{max(ratio, 1 / ratio):.1f}× {'faster' if ratio >= 1 else 'slower'}" if measured(ratio) and ratio > 0
              else "—× faster")  # a compile time not measured: no ratio
    fig.suptitle(f"{L} layers: regional compile {faster} "
                 f"than whole · pays after {_steps(be[0])} / {_steps(be[1])} (whole / regional)", fontsize=15)
    plots.stamp_figure(fig, data, reference)
    return fig
