"""Part 5's numerics figure (:mod:`demos.topics.numerics` holds the lesson): compiled vs eager
as a share of the stated tolerance, and every form's distance from float64."""
from __future__ import annotations

from typing import Any

from demos.engine import plots


def _pair_label(key: str) -> str:
    a, b = key.split("|")
    return f"{plots.label(a)} vs {plots.label(b)}"


def figure_numerics(data: dict[str, Any], reference: dict[str, Any] | None = None):
    """Left: compiled vs eager, as a share of the stated tolerance. Right: every form's error
    against float64 (who is closer to the exact answer)."""
    fig, (a1, a2) = plots.figure(1, 2, size=(plots.SLIDE_SIZE[0], 4.1))  # shorter: its slide has a long title and two control rows
    pairs = list(data["pairs"].items())
    ys = list(range(len(pairs)))
    floor = 1e-6  # the left edge of the log axis; a zero difference draws no bar
    used = [s["tol_used"] for _, s in pairs]
    a1.barh(ys, [max(u, floor) for u in used], color=[plots.color(k.split("|")[0]) for k, _ in pairs], height=0.4)
    for y, (k, s) in zip(ys, pairs):
        txt = ("  identical, bit for bit" if s["max_abs"] == 0 else
               f"  max |Δ| {s['max_abs']:.2g}, max rel {s['max_rel']:.2g}\n  {100 * s['differ_frac']:.0f}% of elements differ")
        a1.text(floor * 1.3, y + 0.26, txt.replace("\n  ", "\n").strip(), va="top", fontsize=12)  # 2 lines: left of the tolerance line
    a1.invert_yaxis()
    if reference:
        rp = reference.get("pairs", {})
        for y, (k, _) in zip(ys, pairs):
            if k in rp:
                a1.plot([max(rp[k]["tol_used"], floor)], [y - 0.35], marker="v", color=plots.PALETTE["reference"],
                        ms=9, ls="none", label="recorded" if y == 0 else None)
        a1.legend(loc="lower right", fontsize=11.5, title=plots.where_measured(reference), title_fontsize=11.5)
    tol = data["tolerance"]
    a1.axvline(1.0, color="#b00020", ls="--", lw=1.5)
    a1.text(1.0, -0.45, f" tolerance\n rtol={tol['rtol']:g}\n atol={tol['atol']:g}",
            color="#b00020", fontsize=12, va="top")
    a1.set_xscale("log")
    a1.set_xlim(floor, 30)
    a1.set_xticks([1e-6, 1e-4, 1e-2, 1])  # every decade labelled was 8 crowded labels
    a1.set_ylim(len(pairs) - 0.4, -0.6)
    a1.set_yticks(ys, [_pair_label(k) for k, _ in pairs], fontsize=12)
    a1.set_xlabel("max |Δ| / (atol + rtol·|eager|)   (≤ 1 passes)")
    a1.set_title("compiled vs eager", loc="left", fontsize=15)
    vs = list(data["vs_float64"].items())
    y2 = list(range(len(vs)))
    errs = [max(s["max_abs"], 1e-12) for _, s in vs]
    a2.barh(y2, errs, color=[plots.color(b) for b, _ in vs], height=0.55)
    a2.set_yticks(y2, [plots.label(b) for b, _ in vs], fontsize=12)
    a2.invert_yaxis()
    a2.set_xscale("log")
    a2.set_xlabel("max |output − float64 result|")
    a2.set_title("distance from the exact answer", loc="left", fontsize=15)
    vals = data.get("scalars")
    for y, (b, s) in zip(y2, vs):
        txt = f" {s['max_abs']:.2g}"
        if vals:
            txt += f"  (= {vals[b]:,.6g})"
        a2.text(max(s["max_abs"], 1e-12), y, txt, va="center", fontsize=12)
    if vals:
        a2.set_title(f"distance from float64 = {vals['float64']:,.8g}", loc="left", fontsize=15)
    a2.set_xlim(min(errs) / 3, max(errs) * 30)
    plots.stamp_figure(fig, data, reference)
    return fig
