"""Figure of part 3's precision demo (:mod:`demos.topics.precision`): each precision's eager and
compiled time as a speedup over float32 eager (the compiling factor beside each precision), and
each form's distance from float64."""
from __future__ import annotations

import textwrap
from typing import Any

from demos.engine import plots
from demos.engine.figure_values import measured, ratio_of
from demos.engine.timing import fmt_seconds

LABELS = {"float32": "float32", "tf32": "TF32 matmuls", "autocast": "autocast → bf16", "bfloat16": "bfloat16"}
FORMS = ("torch_eager", "torch_compile")
OFFSET = {"torch_eager": -0.22, "torch_compile": 0.22}  # a pair's two labels apart over a long footer


def _speedups(d: dict[str, Any]) -> dict[tuple[str, str], float]:
    rows = d.get("rows", {})
    base = rows.get("float32", {}).get("torch_eager", {}).get("median_s")
    ups = {(r, f): ratio_of(base, v[f]["median_s"]) for r, v in rows.items() for f in FORMS if "median_s" in v.get(f, {})}
    return {k: s for k, s in ups.items() if measured(s)}  # a time not measured (or read as 0): no speedup


def _compile_factor(forms: dict) -> str:
    if all("median_s" in forms.get(f, {}) for f in FORMS):
        r = ratio_of(forms["torch_eager"]["median_s"], forms["torch_compile"]["median_s"])
        return f"compiling ×{r:.2f}" if measured(r) else "compiling ×—"
    return ""


def figure_lever(data: dict[str, Any], reference: dict[str, Any] | None = None):
    fig, (ax, ex) = plots.figure(1, 2, width_ratios=[2.3, 1.0])
    rows = data["rows"]
    names = [r for r in LABELS if r in rows]
    ys = {r: i for i, r in enumerate(names)}
    ups = _speedups(data)
    ref_ups = _speedups(reference) if reference else {}
    widest = max(list(ups.values()) + list(ref_ups.values()) + [1.0])
    for r in names:
        forms = rows[r]
        if "error" in forms:
            ax.text(0.03 * widest, ys[r], "\n".join(textwrap.wrap("not here: " + forms["error"], 60)), va="center",
                    fontsize=11.5, color="#666666", style="italic",
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 1}, zorder=4)
            continue
        for f in FORMS:
            y = ys[r] + OFFSET[f]
            if (r, f) not in ups:  # this form failed here: its one line where its bar would be
                why = forms.get(f, {}).get("error", "no speedup: a time was not measured")
                ax.text(0.03 * widest, y, textwrap.shorten(f"{plots.label(f)}: {why}", 95),
                        va="center", fontsize=11.5, color="#666666", style="italic")
                continue
            s = ups[(r, f)]
            ax.barh(y, s, height=0.4, color=plots.color(f), label=plots.label(f) if r == names[0] else None)
            ax.text(s, y, f" ×{s:.2f} · {fmt_seconds(forms[f]['median_s'])}", va="center", fontsize=11.5)
    if ref_ups:
        label = "recorded" if not reference.get("seed") else "reported"
        for (r, f), s in ref_ups.items():
            if r in ys:
                ax.scatter([s], [ys[r] + OFFSET[f]], marker="D", s=40, color=plots.PALETTE["reference"], zorder=3,
                           label=f"{label}: {reference.get('machine_short', '').split(' ')[0]}"  # the footer names it
                           if (r, f) == next(iter(ref_ups)) else None)
    seed_said = []
    if reference and not ref_ups:  # the seed's figures have no float32 row to divide by: its times, in words,
        for r, forms in reference.get("rows", {}).items():  # under the title (in its row they met the bars' labels)
            if r in ys and all(f in forms for f in FORMS):
                seed_said.append(f"seed ({LABELS[r]}): "  # the footer says where it was reported
                                 f"{fmt_seconds(forms['torch_eager']['median_s'])} → "
                                 f"{fmt_seconds(forms['torch_compile']['median_s'])} ({_compile_factor(forms)})")
    ax.axvline(1.0, color="#555555", lw=1, ls="--")
    ax.set_yticks(range(len(names)), [f"{LABELS[r]}\n{_compile_factor(rows[r])}".strip() for r in names],
                  fontsize=11.5)  # two lines a row: four rows over a footer of verdicts
    ax.set_ylim(len(names) - 0.5, -0.5)
    ax.set_xlim(0, widest * 2.0)  # the widest bar's time ends left of the legend, whichever row it is in
    ax.set_xlabel("speedup over float32 eager (median; the bar's time beside it)")
    if ax.get_legend_handles_labels()[0]:  # no row measured, no reference: nothing to name
        ax.legend(loc="upper right", fontsize=11.5, frameon=False)
    ax.grid(axis="y", visible=False)
    p = data["params"]
    ax.set_title("\n".join([f"The seed's MLP block, B·S = {p['B']}×{p['S']}, D = {p['D']}, H = {p['H']}", *seed_said]),
                 loc="left", fontsize=14)

    errs = []
    for r in names:
        for f in FORMS:
            e = rows[r].get(f, {}).get("distance")
            if e is not None:
                y = ys[r] + OFFSET[f]
                ex.scatter([max(e, 1e-12)], [y], color=plots.color(f), s=45, zorder=3)
                short = {"float32": "fp32", "bfloat16": "bf16"}.get(rows[r][f].get("out_dtype"), "")
                ex.text(max(e, 1e-12), y, f"  {e:.1e}" + (f" · {short} out" if short else ""), va="center", fontsize=11.5)
                errs.append(max(e, 1e-12))
    ex.set_xscale("log")
    if errs:
        lo, hi = min(errs) / 4, max(errs) * 60
        ex.set_xlim(lo, hi)
        ex.set_xticks([10.0 ** k for k in range(-12, 1, 2) if lo <= 10.0 ** k <= hi])
    ex.set_yticks(range(len(names)), [])
    ex.set_ylim(len(names) - 0.5, -0.5)
    ex.set_xlabel("max |Δ| ÷ max |float64|")
    ex.set_title(f"distance from float64 ({data.get('reference_tokens', '?')} tokens)", loc="left", fontsize=12)
    ex.grid(axis="y", visible=False)
    plots.no_minor_ticks(ex)
    plots.stamp_figure(fig, data, reference)
    return fig
