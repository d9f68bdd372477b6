"""Figure of part 3's autotuning demo (:mod:`demos.topics.autotune`): what each mode launches per
call, what autotuning benchmarked for each GEMM, and the times (steady state; compile apart)."""
from __future__ import annotations

import re
from typing import Any

from matplotlib.patches import FancyBboxPatch

from demos.engine import plots
from demos.engine.figure_values import largest
from demos.engine.timing import fmt_seconds

KIND_COLORS = {"library GEMM": "#0072B2", "generated GEMM": "#009E73", "generated kernel": "#E69F00"}
SHOWN_CANDIDATES = 5  # per GEMM; a GPU benchmarks dozens of Triton configurations


def short(name: str) -> str:
    """A launch or a candidate as a slide names it: "MKL linear", "C++ micro-GEMM", "relu", "mm+relu"."""
    if "ynn_fusion" in name:
        return "YNNPACK"
    if "onednn" in name:
        return "oneDNN"
    m = re.match(r"^(?:broadcast_|loop_)*(?P<op>[a-z]+)_fusion(?:\.\d+)?$", name)
    if m:
        return {"maximum": "max"}.get(m.group("op"), m.group("op"))
    if name in ("mkl._mkl_linear", "_mkl_linear"):
        return "MKL linear"
    if name.startswith("mkldnn.") or name.startswith("_linear_pointwise"):
        return "oneDNN linear"
    if name in ("mm", "addmm", "bmm"):
        return f"library {name}"
    m = re.match(r"^cpp_CppMicroGemm(?P<isa>\w+?)_\d+$", name)
    if m:
        return f"C++ micro-GEMM ({m.group('isa')})"
    m = re.match(r"^triton_(?P<op>[a-z]+)_(?P<n>\d+)$", name)
    if m:
        return f"Triton {m.group('op')} #{m.group('n')}"
    m = re.match(r"^(?:cpp|triton)_(?:poi_|red_|per_|tem_)?fused_(?P<ops>.+?)_\d+$", name)
    if m:
        return m.group("ops").replace("_", "+")
    return name


def _launch_row(ax, y: float, launches: list[dict]) -> None:
    """One mode's launches as boxes, left to right, in the axes' own coordinates (0–1)."""
    x = 0.0
    for item in launches:
        w = 0.33 if item["kind"] != "generated kernel" else 0.2
        ax.add_patch(FancyBboxPatch((x, y - 0.07), w, 0.14, boxstyle="round,pad=0.005,rounding_size=0.02",
                                    transform=ax.transAxes, facecolor=KIND_COLORS[item["kind"]], edgecolor="none"))
        ax.text(x + w / 2, y, short(item["name"])[:12], transform=ax.transAxes, ha="center", va="center", fontsize=11.5,
                color="white", weight="bold")
        x += w + 0.03
    if not launches:
        ax.text(0, y, "no launches read", transform=ax.transAxes, va="center", fontsize=11.5, color="#666666")


def figure_gemms(data: dict[str, Any], reference: dict[str, Any] | None = None):
    # the launches' boxes need the width: a name of 12 bold characters is some 90 px (a box a third of the axes)
    fig, (lx, cx, tx) = plots.figure(1, 3, width_ratios=[1.7, 1.3, 0.85])
    rows = data["rows"]
    modes = [m for m in ("default", "max-autotune", "jax_jit") if m in rows]
    for i, mode in enumerate(modes):
        y = 0.8 - 0.29 * i
        _launch_row(lx, y, rows[mode]["launches"])
        tuned = rows[mode].get("autotuned", [])
        if tuned:  # compiled second, it shares the first compile's one-time work: its own cost is the choosing
            n = sum(len(t["candidates"]) for t in tuned)
            said = f"{mode}: tuning {fmt_seconds(sum(t.get('seconds') or 0.0 for t in tuned))}, {n} candidates"
        elif mode == "jax_jit":
            said = "jax.jit (XLA's optimized HLO)"
        else:
            said = f"{mode}: first call {fmt_seconds(rows[mode]['first_s'])}"
        lx.text(0, y + 0.085, said, transform=lx.transAxes, fontsize=11.5, va="bottom")
    for kind, color in KIND_COLORS.items():
        lx.scatter([], [], marker="s", s=80, color=color, label=kind)
    lx.legend(loc="upper left", bbox_to_anchor=(0, 0.06), ncol=2, fontsize=11.5, frameon=False, handletextpad=0.2,
              columnspacing=0.8)
    lx.axis("off")
    lx.set_title("launches per call (caches off)", loc="left", fontsize=13)

    tuned = rows.get("max-autotune", {}).get("autotuned", [])
    y, ticks, labels = 0.0, [], []
    for g, gemm in enumerate(tuned):
        cands = gemm["candidates"][:SHOWN_CANDIDATES]
        for j, c in enumerate(cands):
            winner = j == 0
            color = KIND_COLORS["library GEMM" if not re.search(r"triton|cpp|Micro|tem", c["name"]) else "generated GEMM"]
            cx.barh(y, c["ms"], height=0.7, color=color, alpha=1.0 if winner else 0.45)
            cx.text(c["ms"], y, f" {c['ms']:.3g} ms" + ("  ← chosen" if winner else ""), va="center", fontsize=11.5,
                    weight="bold" if winner else "normal")
            ticks.append(y)
            labels.append(short(c["name"])[:26])
            y += 1
        more = len(gemm["candidates"]) - len(cands)
        shape = " × ".join(str(s) for s in gemm["shapes"][0]) if gemm["shapes"] else "?"
        cx.text(0, y - len(cands) - 0.75, f"GEMM {g + 1} ({gemm['op']}, input {shape})"
                + (f", {more} more not shown" if more > 0 else ""), fontsize=11.5, color="#444444")
        y += 1.0
    if tuned:
        widest = max(c["ms"] for gemm in tuned for c in gemm["candidates"][:SHOWN_CANDIDATES])
        cx.set_xlim(0, widest * 1.9)
        cx.set_yticks(ticks, labels, fontsize=11.5)
        cx.set_ylim(y - 0.5, -1.2)
    else:
        cx.text(0.02, 0.5, "nothing was benchmarked:\nonly one GEMM candidate here", transform=cx.transAxes,
                fontsize=12, color="#666666")
        cx.set_yticks([])
    cx.set_xlabel("ms per call, as autotuning measured it")
    cx.set_title("what max-autotune benchmarked", loc="left", fontsize=13)
    cx.grid(axis="y", visible=False)

    forms = [f for f in ("torch_eager", "default", "max-autotune") if "steady" in rows.get(f, {})]
    ms = [rows[f]["steady"]["median_s"] * 1e3 for f in forms]
    yy = list(range(len(forms)))
    tx.barh(yy, ms, height=0.6, color=[plots.color("torch_eager")] + [plots.color("torch_compile")] * (len(forms) - 1),
            xerr=[[max(0.0, m - rows[f]["steady"]["p10_s"] * 1e3) for f, m in zip(forms, ms)],
                  [max(0.0, rows[f]["steady"]["p90_s"] * 1e3 - m) for f, m in zip(forms, ms)]], capsize=3)
    names = dict(zip(("torch_eager", "default", "max-autotune"), ("eager", "default", "max-autotune")))
    for y_, f, m in zip(yy, forms, ms):  # named above its bar: no tick labels to take the width
        tx.text(0, y_ - 0.42, f"{names[f]} · {fmt_seconds(m / 1e3)}", fontsize=11.5, va="bottom")
    if reference is not None:
        ref = [(reference.get("rows", {}).get(f, {}).get("steady") or {}).get("median_s") for f in forms]
        tx.scatter([r * 1e3 if r else float("nan") for r in ref], yy, marker="D", s=36, zorder=3,
                   color=plots.PALETTE["reference"], label=f"recorded: {reference.get('machine_short', '')}")
        tx.legend(loc="lower right", fontsize=11.5, frameon=False)
    tx.set_yticks(yy, [])
    tx.set_ylim(len(forms) - 0.4, -0.9)
    tx.set_xlim(0, largest(ms + [1e-3], 1e-3) * 1.4)
    tx.set_xlabel("ms (median)")
    tx.set_title("steady state", loc="left", fontsize=13)
    tx.grid(axis="y", visible=False)
    p = data["params"]
    fig.suptitle(f"relu(X @ A) @ B, X {p['B']}×{p['D']}, A {p['D']}×{p['H']}: the library's GEMM or one written for "
                 "this shape?", x=0.01, ha="left", fontsize=14)
    plots.stamp_figure(fig, data, reference)
    return fig
