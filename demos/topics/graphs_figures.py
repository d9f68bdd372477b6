"""Figure of part 6's CUDA-graph demo (:mod:`demos.topics.graphs`): each form's step time, and its
launches per step (kernel launches, graph launches) beside the kernels the GPU ran."""
from __future__ import annotations

import textwrap
from typing import Any

from demos.engine import plots
from demos.engine.figure_values import largest
from demos.engine.timing import fmt_seconds

FORMS = ("torch_eager", "torch_compile", "torch_compile_ro")
LABELS = {"torch_eager": "eager", "torch_compile": "torch.compile", "torch_compile_ro": "reduce-overhead"}


def figure_replay(data: dict[str, Any], reference: dict[str, Any] | None = None):
    fig, (tx, lx) = plots.figure(1, 2, width_ratios=[1.0, 1.2])
    rows = data["rows"]
    forms = [f for f in FORMS if f in rows]
    ys = list(range(len(forms)))
    ms = [rows[f]["median_s"] * 1e3 for f in forms]
    tx.barh(ys, ms, height=0.55, color=[plots.color("torch_eager")] + [plots.color("torch_compile")] * (len(forms) - 1),
            xerr=[[max(0.0, m - rows[f]["p10_s"] * 1e3) for f, m in zip(forms, ms)],
                  [max(0.0, rows[f]["p90_s"] * 1e3 - m) for f, m in zip(forms, ms)]], capsize=3)
    for y, f in zip(ys, forms):
        tx.text(0, y - 0.36, fmt_seconds(rows[f]["median_s"]), fontsize=11.5, va="bottom")
    if reference is not None:
        ref = [(reference.get("rows", {}).get(f) or {}).get("median_s") for f in forms]
        tx.scatter([r * 1e3 if r else float("nan") for r in ref], ys, marker="D", s=36, zorder=3,
                   color=plots.PALETTE["reference"], label=f"recorded: {reference.get('machine_short', '')}")
        tx.legend(loc="lower right", fontsize=11.5, frameon=False)
    tx.set_yticks(ys, [LABELS[f] for f in forms], fontsize=12)
    tx.set_ylim(len(forms) - 0.4, -0.8)
    tx.set_xlim(0, largest(ms, 1e-6) * 1.35)
    tx.set_xlabel("ms per forward (median, p10–p90)")
    tx.set_title("one batch-1 step", loc="left", fontsize=13)
    tx.grid(axis="y", visible=False)

    launches = [rows[f]["kernel_launches"] + rows[f]["graph_launches"] for f in forms]
    if not any(launches):
        lx.axis("off")
        ran = ", ".join(f"{LABELS[f]} {rows[f]['kernels']}" for f in forms)
        why = data.get("skipped", {}).get("torch_compile_ro", "")
        said = [f"0 launches in every form. {why[:1].upper() + why[1:]}.",
                f"Work the host ran itself (ops and compiled kernels): {ran}."]
        if reference is not None and "torch_compile_ro" in reference.get("rows", {}):
            r = reference["rows"]
            said.append("Recorded on the GPU: " + "; ".join(
                f"{LABELS[f]} {r[f]['kernel_launches']} kernel + {r[f]['graph_launches']} graph launches"
                for f in FORMS if f in r) + ".")
        lx.text(0.0, 0.85, "\n\n".join(textwrap.fill(t, 58) for t in said), transform=lx.transAxes, fontsize=12,
                va="top")
    else:
        k = [rows[f]["kernel_launches"] for f in forms]
        g = [rows[f]["graph_launches"] for f in forms]
        lx.barh(ys, k, height=0.55, color="#E69F00", label="kernel launches")
        lx.barh(ys, g, left=k, height=0.55, color="#0072B2", label="graph launches")
        for y, f in zip(ys, forms):
            r = rows[f]
            said = f" {r['kernel_launches']} + {r['graph_launches']} graph · GPU ran {r['kernels']} kernels"
            if r["copies"]:
                said += f" · copies: {', '.join(c.split('::')[-1] for c in r['copies'])}"
            lx.text(r["kernel_launches"] + r["graph_launches"], y, said, va="center", fontsize=11.5)
        lx.set_yticks(ys, [])
        lx.set_ylim(len(forms) - 0.4, -0.8)
        lx.set_xlim(0, max(launches) * 2.2)
        lx.legend(loc="upper right", fontsize=11.5, frameon=False)
        lx.set_xlabel("launches from the host per step (profiled)")
        lx.grid(axis="y", visible=False)
    lx.set_title("what the host launched", loc="left", fontsize=13)
    plots.stamp_figure(fig, data, reference)
    return fig
