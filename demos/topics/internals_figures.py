"""Part 4's figures (:mod:`demos.topics.internals`): each draws a measurement, live or recorded,
beside a recorded run's (``reference``). The stage names the pipeline's view-only controls offer
are defined here (the figure checks them) and imported by the lesson."""
from __future__ import annotations

import re
import textwrap
from typing import Any

from demos.engine import plots
from demos.engine.figure_values import largest, log_limits, measured, on_log
from demos.engine.errors import unknown_name
from demos.engine.timing import fmt_seconds

TORCH_STAGES = ("FX graph", "guards", "generated code")
JAX_STAGES = ("jaxpr", "StableHLO", "optimized HLO")


# =======================================================================================
# 1. The pipeline: both compilers, stage by stage
# =======================================================================================
def _counts_line(counts: dict[str, Any]) -> str:
    return " · ".join(f"{k} {v}" for k, v in counts.items())


def figure_pipeline(data: dict[str, Any], reference: dict[str, Any] | None = None):
    """Two columns: torch.compile's stage (left) and jax.jit's stage (right), with counts; the
    stages come from ``data["values"]`` (view-only controls)."""
    values = data.get("values", {})
    stages = (values.get("torch_stage", "generated code"), values.get("jax_stage", "optimized HLO"))
    for stage, valid in zip(stages, (TORCH_STAGES, JAX_STAGES)):
        if stage not in valid:
            raise unknown_name("stage", stage, valid)
    fig, ax = plots.figure()
    ax.axis("off")
    bottom = plots.stamp_figure(fig, data, reference) + 0.02  # the code ends above the footer
    for i, (name, side_key, stage) in enumerate((("torch.compile", "torch", stages[0]), ("jax.jit", "jax", stages[1]))):
        x0, side = 0.012 + i * 0.5, data.get(side_key, {})
        backend = "torch_compile" if i == 0 else "jax_jit"
        fig.text(x0, 0.975, f"{name} · {stage}", fontsize=16, fontweight="bold", color=plots.color(backend), va="top")
        if "error" in side:
            fig.text(x0, 0.86, "⚠ " + side["error"], fontsize=12.5, color="#b00020", va="top", wrap=True)
            continue
        fig.text(x0, 0.915, _counts_line(side.get("counts", {})), fontsize=12.5, color="#333333", va="top")
        ref_side, y_top = (reference or {}).get(side_key, {}), 0.86
        if ref_side.get("counts"):
            said = textwrap.wrap(f"recorded on {plots.where_measured(reference)}: " + _counts_line(ref_side["counts"]),
                                 plots.chars_per_line(fig, 11.5, 0.475))  # within its column
            fig.text(x0, 0.868, "\n".join(said), fontsize=11.5, color=plots.PALETTE["reference"], va="top")
            y_top = 0.82 - 0.035 * (len(said) - 1)
        plots.draw_code(fig, x0, y_top, 0.475, y_top - bottom, side.get("stages", {}).get(stage, []), fontsize=11.5)
    plots.two_columns(fig, bottom)
    return fig


# =======================================================================================
# 2. Guards
# =======================================================================================
def figure_guards(data: dict[str, Any], reference: dict[str, Any] | None = None):
    """Left: the guards in plain words. Right: three calls' latency (the recorded run's as
    grey diamonds). Bottom: the failed guard."""
    from matplotlib.ticker import NullFormatter

    fig, ax = plots.figure()
    ax.axis("off")
    # the bottom lines stand on the footer (two lines more with a recorded run beside), the rest above them
    note_y = plots.stamp_figure(fig, data, reference) + 0.02
    msg_y = note_y + 0.07
    fig.text(0.012, 0.975, f"Guards Dynamo recorded on the 1st call ({data['guard_count']} checks)", fontsize=15,
             fontweight="bold", color=plots.color("torch_compile"), va="top")
    plots.draw_code(fig, 0.012, 0.9, 0.5, 0.9 - msg_y - 0.08, [f"• {g}" for g in data["guards_plain"]],
                    fontsize=11.5)
    bottom = max(0.36, msg_y + 0.2)  # the x tick labels and label under it stay above the failed guard
    right = plots.add_axes(fig, (0.7, bottom, 0.17, 0.9 - bottom))
    calls = data["calls"]
    secs = [c["seconds"] for c in calls]
    ref_secs = [c["seconds"] for c in (reference or {}).get("calls", [])][:len(calls)]
    ys = list(range(len(calls)))[::-1]
    right.barh(ys, [on_log(v) for v in secs], height=0.6, color=[plots.PALETTE["accent"] if c["compiled"] else plots.color("torch_compile")
                                            for c in calls])
    if ref_secs:
        right.plot([on_log(v) for v in ref_secs], ys[:len(ref_secs)], "D", color=plots.PALETTE["reference"], ms=7)
    lo, hi = log_limits(secs + ref_secs, below=3, above=3)
    right.set_xscale("log")
    right.xaxis.set_minor_formatter(NullFormatter())  # labels on minor ticks overlap within a decade
    right.set_xlim(lo, hi)
    right.set_yticks(ys, [c["label"] if len(c["label"]) < 28 else c["label"][:27] + "…" for c in calls], fontsize=12)
    right.set_xlabel("seconds (log)", fontsize=12)
    right.tick_params(axis="x", labelsize=11.5)
    right.spines[["top", "right"]].set_visible(False)
    for i, (yv, c) in enumerate(zip(ys, calls)):
        note = [fmt_seconds(c["seconds"]), "compiled" if c["compiled"] else "cache hit"]
        if i < len(ref_secs):
            note.append(f"◆ rec. {fmt_seconds(ref_secs[i])}")
        right.text(hi * 1.1, yv, "\n".join(note), va="center", fontsize=12, clip_on=False)
    right.set_title("three calls, same compiled function", fontsize=13)
    if data["recompiled"]:
        msg, col = f"RECOMPILE · failed guard: {data['failed_guard'] or '(reason not logged)'}", "#b00020"
    else:
        msg, col = "no recompile: every guard still holds", "#1b7f3a"
    fig.text(0.012, msg_y, msg, fontsize=15, fontweight="bold", color=col, va="bottom")
    fig.text(0.012, note_y, "torch.compile(dynamic=False); backend: Dynamo capture only — guards are Dynamo's "
             "(Part 5 measures Inductor's compile cost)", fontsize=11.5, color="#555555", va="bottom")
    return fig


# =======================================================================================
# 3. Graph breaks: Dynamo's explanation next to jax.jit's answer
# =======================================================================================
def figure_breaks(data: dict[str, Any], reference: dict[str, Any] | None = None):
    """Left: Dynamo's explanation (graphs, breaks, reason, line). Right: what jax.jit does."""
    fig, ax = plots.figure()
    ax.axis("off")
    t, j = data["torch"], data["jax"]
    Y, L, R = 0.625, 0.012, 0.512  # the verdict line (under five lines of code), the two columns
    bottom = plots.stamp_figure(fig, data, reference) + 0.02  # the last line stands on the footer
    fig.text(L, 0.975, "torch.compile (Dynamo)", fontsize=16, fontweight="bold", color=plots.color("torch_compile"),
             va="top")
    if reference is not None:  # what the recorded run found, at the right of each column's heading
        rt, rj, who = reference["torch"], reference["jax"], plots.where_measured(reference).split(" ")[0]
        grey = {"fontsize": 11.5, "color": plots.PALETTE["reference"], "va": "top", "ha": "right"}
        fig.text(0.49, 0.965, f"{who} recorded: {rt['graphs']} graph{'s' * (rt['graphs'] != 1)} · "
                 f"{rt['breaks']} break{'s' * (rt['breaks'] != 1)}", **grey)
        fig.text(0.99, 0.965, f"{who} recorded: {'runs' if rj.get('ok') else rj.get('error_type', '?')}", **grey)
    src = data["torch_source"]
    needle = re.sub(r"\s+#.*$", "", t["reasons"][0]["source"]).strip() if t["reasons"] else ""
    plots.draw_code(fig, L, 0.9, 0.475, 0.27, src, fontsize=12,
                    mark={i for i, ln in enumerate(src) if needle and ln.strip() == needle})
    fig.text(L, Y, f"graphs: {t['graphs']} · graph breaks: {t['breaks']}", fontsize=16.5, fontweight="bold",
             color="#b00020" if t["breaks"] else "#1b7f3a", va="top")
    if t["reasons"]:
        r = t["reasons"][0]
        y = plots.text_lines(fig, L, Y - 0.095, textwrap.wrap("reason: " + r["plain"], 62)[:2], fontsize=13) - 0.01
        fig.text(L, y, f"line {r['line']}: {needle[:44]}", fontsize=12.5, family="DejaVu Sans Mono", color="#7a4f00",
                 va="top")
        fig.text(L, y - 0.065, f"Dynamo says: {r['reason'][:64]}", fontsize=11.5, color="#555555", va="top")
    else:
        fig.text(L, Y - 0.095, "the whole function is one graph", fontsize=13, va="top")
    fig.text(L, bottom, "compiled output matches eager: " + ("yes" if data["torch_matches"] else "NO"), fontsize=12.5,
             va="bottom", color="#333333")
    fig.text(R, 0.975, "jax.jit", fontsize=16, fontweight="bold", color=plots.color("jax_jit"), va="top")
    jsrc = data.get("jax_source") or []
    plots.draw_code(fig, R, 0.9, 0.475, 0.27, jsrc, fontsize=12,
                    mark={i for i, ln in enumerate(jsrc) if ln.strip().startswith(("if ", "print("))})
    if j.get("ok"):
        fig.text(R, Y, "runs under jit: one program", fontsize=16.5, fontweight="bold", color="#1b7f3a", va="top")
        if j.get("printed"):
            plots.text_lines(fig, R, Y - 0.095, [f"print ran {len(j['printed'])}× in 3 calls (at trace time):"],
                             fontsize=13)
            fig.text(R, Y - 0.165, j["printed"][0][:52], fontsize=12.5, family="DejaVu Sans Mono", color="#7a4f00",
                     va="top")
            fig.text(R, Y - 0.235, "a tracer, not numbers — jax.debug.print runs every call", fontsize=12.5,
                     va="top", color="#555555")
        elif data.get("fixed"):
            fig.text(R, Y - 0.095, "the branch is data now: no Python bool needed", fontsize=13, va="top")
        if "matches" in j:
            fig.text(R, bottom, "output matches torch eager: " + ("yes" if j["matches"] else "NO"), fontsize=12.5,
                     va="bottom", color="#333333")
    else:
        fig.text(R, Y, f"expected error: {j['error_type']}", fontsize=16, fontweight="bold", color="#b00020", va="top")
        plots.text_lines(fig, R, Y - 0.095, textwrap.wrap(j.get("error", ""), 58)[:3], fontsize=12.5, color="#333333")
        fig.text(R, bottom, "jit needs the branch as data: jnp.where or lax.cond", fontsize=12.5, va="bottom",
                 color="#333333")
    plots.two_columns(fig, bottom)
    return fig


# =======================================================================================
# 4. What capture costs
# =======================================================================================
def figure_capture_cost(data: dict[str, Any], reference: dict[str, Any] | None = None):
    """One bar per row (median, p10–p90), graph count and first-call time beside it; the
    recorded run's medians as grey bars under each."""
    fig, ax = plots.figure()
    rows = data["rows"]
    ref_rows = {r["key"]: r for r in (reference or {}).get("rows", []) if measured(r.get("median_s"))}
    ys = list(range(len(rows)))[::-1]
    h = 0.38 if reference else 0.7
    off = h / 2 if reference else 0
    for yv, r in zip(ys, rows):
        if not measured(r.get("median_s")):
            ax.text(0, yv, f"  {r.get('error', 'not measured')}", va="center", fontsize=12, color="#b00020")
            continue
        med = r["median_s"] * 1e3
        ax.barh(yv + off, med, height=h, color=plots.color(r["backend"]))
        if measured(r.get("p10_s")) and measured(r.get("p90_s")):
            ax.errorbar(med, yv + off, xerr=[[max(0.0, r["median_s"] - r["p10_s"]) * 1e3],
                                             [max(0.0, r["p90_s"] - r["median_s"]) * 1e3]],
                        fmt="none", ecolor="#333333", capsize=3, lw=1)
        g = r.get("graphs")
        note = (f"  {fmt_seconds(r['median_s'])}" if r["backend"] == "torch_eager" else
                f"  {fmt_seconds(r['median_s'])} · {g} graph{'s' if g != 1 else ''} · 1st call "
                f"{fmt_seconds(r.get('first_s'))}")
        ax.text(largest([r.get("p90_s"), r["median_s"]], 0.0) * 1e3, yv + off, note, va="center", fontsize=12)
        rr = ref_rows.get(r["key"])
        if rr:
            ax.barh(yv - h / 2, rr["median_s"] * 1e3, height=h, color=plots.PALETTE["reference"], alpha=0.8)
            ax.text(rr["median_s"] * 1e3, yv - h / 2, f"  {fmt_seconds(rr['median_s'])} (recorded)", va="center",
                    fontsize=11.5, color="#555555")
    if reference is not None:
        from matplotlib.patches import Patch

        ax.legend(handles=[Patch(color=plots.PALETTE["reference"],
                                 label=f"recorded on {plots.where_measured(reference)}")], loc="lower right", fontsize=11.5)
    ax.set_yticks(ys, [r["label"] for r in rows])
    ax.set_xlabel("milliseconds per call (median, p10–p90 whiskers)")
    top = largest([r.get("p90_s") for r in rows if measured(r.get("median_s"))]
                        + [r["median_s"] for r in rows] + [r["median_s"] for r in ref_rows.values()] + [1e-6], 1e-6)
    ax.set_xlim(0, top * 1e3 * 1.9)
    where = f" — {plots.where_measured(data)}" if data.get("recorded") else ""
    ax.set_title(f"the same function, broken vs fixed: steady state after compiling{where}", fontsize=15)
    plots.stamp_figure(fig, data, reference)
    return fig
