"""Figure of part 4's sharding demo (:mod:`demos.topics.collectives`): per split, the collectives
XLA's partitioner inserted (bytes of each one's result, stacked, coloured by kind, and named in
words beside them) and the time
one call took on the (simulated) devices."""
from __future__ import annotations

from collections import Counter
from typing import Any

from demos.engine import plots
from demos.engine.figure_values import largest, measured
from demos.engine.timing import fmt_seconds

KIND_COLORS = {"all-reduce": "#0072B2", "all-gather": "#009E73", "reduce-scatter": "#CC79A7",
               "all-to-all": "#E69F00", "collective-permute": "#7F7F7F"}
_SPLITS = {  # the row labels: how x, w1 and w2 are split
    "data parallel: batch split, weights copied": "data parallel\nx by rows · w1, w2 copied",
    "tensor parallel: hidden split (Megatron)": "tensor parallel (Megatron)\nw1 by columns · w2 by rows",
    "w1 split on its rows, x and w2 copied": "w1 by rows (its input dim)\nx, w2 copied",
    "batch and weights split (FSDP-like)": "FSDP-like\nx, w1, w2 by rows",
}


def _mib(nbytes: float) -> float:
    return nbytes / 2**20


def _counted(found: list[dict], key: str) -> dict[str, int]:
    """How many of each ``found[i][key]``, in order of first appearance."""
    return dict(Counter(c[key] for c in found))


def _said(found: list[dict]) -> str:
    """'1 all-reduce (2 values) · 2 all-gathers', in program order of first appearance."""
    if not found:
        return "none"
    counts = _counted(found, "kind")
    parts = []
    for kind, n in counts.items():
        combined = kind == "all-reduce" and any(c["kind"] == kind and c["values"] > 1 for c in found)
        parts.append(f"{n} {kind}{'s' if n > 1 else ''}" + (" (several arrays in one)" if combined else ""))
    overlap = [c for c in found if c["async"]]
    if overlap:
        parts.append(f"{len(overlap)} async, {sum(c['between'] for c in overlap)} ops between start and done")
    return " · ".join(parts)


def figure_sharding(data: dict[str, Any], reference: dict | None = None):
    fig, (ax, tx) = plots.figure(1, 2, width_ratios=[2.3, 1.0])
    names = list(data["rows"])
    y = list(range(len(names)))[::-1]
    widest = max([sum(_mib(c["bytes"]) for c in r["collectives"]) for r in data["rows"].values()] + [0.5])
    for yi, name in zip(y, names):
        left = 0.0
        found = data["rows"][name]["collectives"]
        for c in found:
            w = _mib(c["bytes"])
            ax.barh(yi - 0.12, w, left=left, height=0.45, color=KIND_COLORS.get(c["kind"], "#444444"),
                    edgecolor="white")
            left += w
        ax.text(0, yi + 0.14, _said(found), va="bottom", fontsize=11.5)  # above its bar: any length fits
    ax.set_yticks([yi - 0.12 for yi in y])
    ax.set_yticklabels([_SPLITS.get(n, n) for n in names], fontsize=11.5)
    ax.set_xlim(0, widest * 1.15)
    ax.set_ylim(-0.6, len(names) - 0.4)
    ax.set_xlabel("MiB the collectives' results hold (per device)")
    ax.grid(axis="y", visible=False)
    where = (f"{data['devices']} simulated CPU devices" if data.get("simulated") else
             f"{data['devices']} × {data.get('device_kind', '?')}")
    ax.set_title(f"Collectives XLA inserted · {data['step']} · {where}", fontsize=14)

    times = [data["rows"][n]["steady"] for n in names]
    tx.barh([yi - 0.12 for yi in y], [t["median_s"] * 1e3 for t in times], height=0.45, color=plots.color("jax_jit"),
            xerr=[[max(0.0, (t["median_s"] - t["p10_s"]) * 1e3) if measured(t["p10_s"] - t["median_s"]) else 0.0
                   for t in times],
                  [max(0.0, (t["p90_s"] - t["median_s"]) * 1e3) if measured(t["p90_s"] - t["median_s"]) else 0.0
                   for t in times]], capsize=3)
    if reference is not None and reference.get("rows"):
        ref = [reference["rows"].get(n, {}).get("steady") for n in names]
        tx.scatter([r["median_s"] * 1e3 if r else float("nan") for r in ref], [yi - 0.12 for yi in y], marker="D", s=36,
                   color=plots.PALETTE["reference"], zorder=3, label="recorded run")
        tx.legend(loc="lower right", fontsize=11.5, frameon=False)
    for yi, t in zip(y, times):
        tx.text(0, yi + 0.14, fmt_seconds(t["median_s"]), fontsize=11.5, va="bottom")
    tx.set_yticks(y)
    tx.set_yticklabels([])
    tx.set_ylim(-0.6, len(names) - 0.4)
    tx.set_xlim(0, largest([t[k] for t in times for k in ("p90_s", "median_s")], 1e-6) * 1e3 * 1.35)
    tx.set_xlabel("ms per call (median, p10–p90)", fontsize=11.5)
    tx.grid(axis="y", visible=False)
    tx.set_title("one call, on the host's cores" if data.get("simulated") else "one call", fontsize=12)
    plots.stamp_figure(fig, data, reference)
    return fig


_TRACED_TITLES = {"megatron": "Megatron: w1 by columns, w2 by rows", "fsdp": "FSDP-like: weights by rows, gathered"}


def _collectives_said(found: list[dict]) -> str:
    if not found:
        return "no collectives"
    counts = _counted(found, "op")
    waits = "each waited at once" if all(c["waited"] and not c["between"] for c in found) else \
        ", ".join(f"{c['between']} launches before its wait" for c in found)
    return " · ".join(f"{n} {op}" for op, n in counts.items()) + f" · {waits}"


def figure_traced(data: dict[str, Any], reference: dict | None = None):
    """Rank 0's generated ``call`` for each split, its collectives highlighted."""
    fig, _ = plots.figure(size=(plots.SLIDE_SIZE[0], 4.3))
    fig.axes[0].axis("off")
    note = plots.stamp_figure(fig, data, reference) + 0.01  # the note stands on the footer, the code above it
    for i, (name, split) in enumerate(data["splits"].items()):
        x0 = 0.01 + 0.5 * i
        lines = [ln.replace("torch.ops._c10d_functional.", "c10d.").replace(".default(", "(") for ln in split["code"]]
        mark = {j for j, ln in enumerate(lines) if "c10d." in ln}
        fig.text(x0, 0.97, _TRACED_TITLES.get(name, name), fontsize=13.5, va="top", weight="bold")
        fig.text(x0, 0.89, f"{split['graphs']} graph · {_collectives_said(split['collectives'])}", fontsize=11.5,
                 va="top", color="#333333")
        plots.draw_code(fig, x0, 0.81, 0.48, 0.81 - note - 0.06, lines, fontsize=11.5, mark=mark)
    fig.text(0.99, note, "c10d. = torch.ops._c10d_functional.  ·  rank 0's generated call()", ha="right",
             va="bottom", fontsize=11.5, color="#555555")
    return fig
