"""Part 5's figures: each draws a measurement of :mod:`demos.topics.recompilation`, live or
recorded (``figure(data, reference)``), from ``data`` alone; with the modes' names and colours
the lesson shares."""
from __future__ import annotations

import math
import statistics
import textwrap
from dataclasses import asdict
from typing import Any

from matplotlib.patches import Patch

from demos.engine import plots
from demos.engine.figure_values import fmt_ratio, largest, measured, ratio_of
from demos.engine.timing import compile_seconds, fmt_seconds

MODE_LABELS = {"static": "torch.compile(dynamic=False)", "auto": "torch.compile (default: automatic dynamic)",
               "mark_dynamic": "torch.compile + mark_dynamic",
               "bucket": "torch.compile(dynamic=False) + pad to buckets",
               "eager": "torch eager", "jax_jit": "jax.jit", "jax_bucket": "jax.jit + pad to buckets"}
MODE_SHORT = {"static": "dynamic=False", "auto": "auto dynamic", "mark_dynamic": "mark_dynamic",
              "bucket": "buckets", "eager": "eager", "jax_jit": "jax.jit", "jax_bucket": "jax buckets"}
MODE_COLOR = {"static": plots.PALETTE["torch_compile"], "auto": "#56B4E9", "mark_dynamic": "#332288",
              "bucket": "#117733", "eager": plots.PALETTE["torch_eager"], "jax_jit": plots.PALETTE["jax_jit"],
              "jax_bucket": "#44AA99"}
COMPILE_COLOR = plots.PALETTE["accent"]
FALLBACK_COLOR = plots.PALETTE["torch_eager"]


def mode_label(mode: str) -> str:
    return MODE_LABELS.get(mode, mode)


def summarize(events: list) -> dict[str, Any]:
    """A session's calls (``Event``s or their dicts) in numbers: calls, compiles, seconds.
    ``compile_s`` sums each compiling call less the steady call (``steady_s``, the median of the
    calls that did not compile; none yet: nothing is taken off)."""
    evs = [e if isinstance(e, dict) else asdict(e) for e in events]
    comp = [e["seconds"] for e in evs if e["compiled"]]
    steady = [e["seconds"] for e in evs if not e["compiled"]]
    steady_s = float(statistics.median(steady)) if steady else None
    return {"calls": len(evs), "distinct_lengths": len({e["S"] for e in evs}), "compiles": len(comp),
            "compile_s": float(sum(compile_seconds(s, steady_s or 0.0) for s in comp)), "steady_s": steady_s,
            "fallback_calls": sum(1 for e in evs if e["fallback"]), "total_s": float(sum(e["seconds"] for e in evs))}


def _fmt_calls(n: float) -> str:
    if math.isinf(n):
        return "never (no speedup)"
    n = max(1, round(n))
    return f"{n:,} call" + ("s" if n != 1 else "")


# the parts of a first call as a legend line names them (the measurement's names are longer)
PART_NAMES = {"Dynamo capture + guards": "Dynamo + guards", "AOT + Inductor codegen + build": "AOT + Inductor",
              "trace + lower to StableHLO": "trace + lower", "XLA compile (or cache load)": "XLA compile"}


def _wrap(text: str, width: int) -> str:
    return "\n    ".join(textwrap.wrap(text, width)[:3]) or "—"


def figure_live(session: dict[str, Any], reference: dict[str, Any] | None = None):
    """Per-call latency with compile spikes marked, the compile counter and the last reasons;
    a recorded run of the same mode as crosses over the bars."""
    evs = session["events"]
    fig, (ax, side) = plots.figure(1, 2, gridspec_kw={"width_ratios": [2.6, 1.0]})
    mode = session["mode"]
    base = MODE_COLOR.get(mode, plots.PALETTE["reference"])
    if not evs:
        ax.text(0.5, 0.5, "no calls yet — move the S slider or press Auto-sweep", ha="center",
                va="center", transform=ax.transAxes, fontsize=15)
    xs = [e["i"] + 1 for e in evs]
    ys = [max(e["seconds"], 1e-7) for e in evs]
    colors = [COMPILE_COLOR if e["compiled"] else FALLBACK_COLOR if e["fallback"] else base for e in evs]
    ax.bar(xs, ys, color=colors, width=0.8)
    ax.set_yscale("log")
    ax.set_xlabel("call")
    ax.xaxis.get_major_locator().set_params(integer=True)  # calls are whole numbers
    if evs:
        ax.set_xlim(0.4, max(xs) + 0.6)
    ax.set_ylabel("latency of the call (s, log)")
    for k, e in enumerate([c for c in evs if c["compiled"]]):  # S of each compile, staggered: neighbours don't touch
        ax.annotate(f"{e['run_S']}" + ("*" if e["symbolic"] else ""), (e["i"] + 1, e["seconds"]),
                    xytext=(0, 2 + 15 * (k % 2)), textcoords="offset points", ha="center", va="bottom", fontsize=11.5)
    if evs:
        lo, hi = ax.get_ylim()
        ax.set_ylim(lo, hi * 4)  # headroom for the staggered labels
    if session.get("limit_hit_at") is not None:
        x = session["limit_hit_at"] + 0.5
        ax.axvline(x, color=FALLBACK_COLOR, ls="--", lw=1.5)
        ax.text(x + 0.2, 0.97, f"recompile limit ({session['limit']}) hit:\nnew shapes run eager",
                transform=ax.get_xaxis_transform(), va="top", fontsize=12, color=FALLBACK_COLOR)
    handles = [Patch(color=COMPILE_COLOR, label="call that compiled"), Patch(color=base, label="cached code")]
    if any(e["fallback"] for e in evs):
        handles.append(Patch(color=FALLBACK_COLOR, label="eager fallback"))
    rev = (reference or {}).get("events") or []
    if rev:
        handles.append(ax.plot([e["i"] + 1 for e in rev], [max(e["seconds"], 1e-7) for e in rev], "x", ms=7,
                               color=plots.PALETTE["reference"],
                               label=f"recorded: {reference.get('machine_short', '')}")[0])
        xs = xs + [e["i"] + 1 for e in rev]
    ax.legend(handles=handles, loc="upper right", fontsize=12)
    ax.set_title(mode_label(mode), loc="left", fontsize=15)
    if xs:
        ax.set_xlim(0.3, max(xs) + 0.7)
    # side panel: the counter and the reasons
    side.axis("off")
    summ = summarize(evs)
    side.text(0.0, 1.0, f"{summ['compiles']}", fontsize=40, fontweight="bold", va="top",
              color=COMPILE_COLOR, transform=side.transAxes)
    side.text(0.0, 0.72, f"compile{'s' * (summ['compiles'] != 1)} in {summ['calls']} call{'s' * (summ['calls'] != 1)}\n"
              f"({summ['distinct_lengths']} distinct length{'s' * (summ['distinct_lengths'] != 1)})",
              fontsize=14, va="top", transform=side.transAxes)
    reasons = [(e["i"] + 1, e["reason"]) for e in evs if e["compiled"]][-2 if reference else -3:]
    falls = [e["i"] + 1 for e in evs if e["fallback"]]
    lines = ["why it compiled:"] + [f"#{i}: {_wrap(r, 30)}" for i, r in reasons]
    if falls:
        text = f"limit {session.get('limit')} hit: {len(falls)} calls ran eager"
        lines += [f"#{falls[0]}…: {_wrap(text, 30)}"]
    if rev:
        rs = summarize(rev)
        lines += ["", f"recorded: {rs['compiles']} compiles", f"in {rs['calls']} calls"]
    side.text(0.0, 0.52, "\n".join(lines), fontsize=11.5, va="top", family="monospace", transform=side.transAxes)
    plots.stamp_figure(fig, session, reference)
    return fig


def figure_modes(data: dict[str, Any], reference: dict[str, Any] | None = None):
    """Per mode over the same sweep: compiles (left) and total sweep time split compile/run (right)."""
    modes = list(data["modes"])
    fig, (a1, a2) = plots.figure(1, 2)
    y = list(range(len(modes)))[::-1]
    comp = [data["modes"][m]["summary"]["compiles"] for m in modes]
    cols = [MODE_COLOR.get(m, "#777") for m in modes]
    h = 0.38 if reference else 0.7
    a1.barh([v + (h / 2 if reference else 0) for v in y], comp, height=h, color=cols, label="this machine")
    for v, c in zip(y, comp):
        a1.text(c + 0.2, v + (h / 2 if reference else 0), str(c), va="center", fontsize=12.5)
    ref_modes = (reference or {}).get("modes", {})
    if reference:
        rc = [ref_modes.get(m, {}).get("summary", {}).get("compiles", 0) for m in modes]
        a1.barh([v - h / 2 for v in y], rc, height=h, color="none", edgecolor=plots.PALETTE["reference"],
                hatch="//", label=f"recorded: {reference.get('machine_short', '')}")
        a1.legend(loc="center right", fontsize=11.5)  # beside the short rows (auto … eager), clear of jax.jit's
    lim = data.get("limit")
    if lim:  # named in the x label: a note by the line met the top row's count, which reaches it
        a1.axvline(lim, color=FALLBACK_COLOR, ls="--", lw=1)
    a1.set_yticks(y, [MODE_SHORT.get(m, m) for m in modes])
    a1.set_xlabel("compiles over the sweep" + (f" (dashed: the limit, {lim})" if lim else ""))
    n_calls = len(data["lengths"])
    a1.set_title(f"{n_calls} calls, {len(set(data['lengths']))} distinct lengths", loc="left", fontsize=15)
    cs = [data["modes"][m]["summary"]["compile_s"] for m in modes]
    tot = [data["modes"][m]["summary"]["total_s"] for m in modes]
    run = [max(t - c, 0.0) for t, c in zip(tot, cs)]
    a2.barh(y, cs, color=COMPILE_COLOR, height=0.7, label="compiling")
    a2.barh(y, run, left=cs, color=cols, height=0.7, label="running")
    eager_total = data["modes"].get("eager", {}).get("summary", {}).get("total_s")
    for v, t, m in zip(y, tot, modes):  # one line a row: seven rows of two lines met each other
        summ = data["modes"][m]["summary"]
        ratio = f" ({fmt_ratio(ratio_of(t, eager_total))} eager)" if eager_total and m != "eager" else ""
        a2.text(t, v, f" {fmt_seconds(t)}{ratio} · call {fmt_seconds(summ['steady_s'])}", va="center", fontsize=11.5)
    a2.set_yticks(y, ["" for _ in modes])
    a2.set_xlabel("total time of the sweep (s)")
    a2.set_xlim(0, largest(tot + [1e-3], 1e-3) * 2.5)
    a2.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncols=2, fontsize=12, frameon=False,
              borderaxespad=0.1)  # above the bars: their notes fill the right
    plots.stamp_figure(fig, data, reference)
    return fig


def figure_compile_latency(data: dict[str, Any], reference: dict[str, Any] | None = None):
    """One axis per framework: the first call with a cold cache and with a warm cache (split
    where the framework exposes it) beside one steady-state call; then the break-even calls. A
    recorded run's first calls and break-even calls are grey diamonds on the same bars."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    backends = list(data["backends"].items())
    fig, axes = plots.figure(1, len(backends) + 1,
                             gridspec_kw={"width_ratios": [1.0] * len(backends) + [1.15]})
    part_colors = ["#56B4E9", "#E69F00", "#999999"]
    recorded = {b: e for b, e in (reference or {}).get("backends", {}).items() if "error" not in e}
    diamond = {"marker": "D", "s": 40, "color": plots.PALETTE["reference"], "zorder": 2.5}  # under the labels
    bes, parts = [], {}
    for ax, (b, e) in zip(axes, backends):
        ax.set_title(plots.label(b), loc="left", color=plots.color(b), fontsize=15)
        if "error" in e:
            ax.axis("off")
            ax.text(0.5, 0.5, _wrap(e["error"], 30), ha="center", va="center", transform=ax.transAxes, fontsize=12.5)
            continue
        scale, unit = (1.0, "s") if largest([e["cold"]["first_s"]], 0.0) >= 1 else (1e3, "ms")
        rec = recorded.get(b)
        for x, k in enumerate(("cold", "warm")):
            bottom = 0.0
            for (pname, secs), col in zip(e[k]["parts"].items(), part_colors):
                ax.bar(x, secs * scale, bottom=bottom, color=col, width=0.65, edgecolor=plots.color(b))
                if x == 0:
                    parts.setdefault(col, []).append(PART_NAMES.get(pname, pname))
                bottom += secs * scale
            ax.text(x, bottom if measured(bottom) else 0.0, fmt_seconds(e[k]["first_s"]), ha="center", va="bottom",
                    fontsize=12.5)
            if rec is not None:
                ax.scatter([x], [rec[k]["first_s"] * scale], **diamond)
            bes.append((f"{plots.label(b)}, {k}", e[k]["break_even_calls"], plots.color(b),
                        rec[k]["break_even_calls"] if rec is not None else None))
        ax.bar(2, e["steady_s"] * scale, color=plots.color(b), width=0.65)
        ax.text(2, largest([e["steady_s"]], 0.0) * scale, f"{fmt_seconds(e['steady_s'])}\n(eager\n{fmt_seconds(e['eager_s'])})",
                ha="center", va="bottom", fontsize=11.5)
        ax.set_xticks([0, 1, 2], ["cold\ncache", "warm\ncache", "one call,\ncompiled"])
        ax.set_ylabel(f"first call ({unit})")
        highest = largest([e["cold"]["first_s"], e["warm"]["first_s"], e["steady_s"]]
                                + [sum(e[k]["parts"].values()) for k in ("cold", "warm")]  # the stacks drawn
                                + ([rec["cold"]["first_s"], rec["warm"]["first_s"]] if rec is not None else []), 0.0)
        ax.set_ylim(0, (highest or 1e-3) * scale * 1.6)  # nothing measured above 0: a millisecond's axis
    a2 = axes[-1]
    vals = [v for _, v, _, _ in bes]
    finite = [v for v in vals + [r for *_, r in bes if r is not None] if not math.isinf(v)]
    top = max(finite + [10.0]) * 5
    a2.barh(range(len(bes)), [max(v, 1.0) if not math.isinf(v) else top for v in vals],
            color=[c for _, _, c, _ in bes], height=0.6)
    for i, (_n, v, _c, r) in enumerate(bes):
        a2.text(max(v, 1.0) if not math.isinf(v) else top, i, " " + _fmt_calls(v), va="center", fontsize=12)
        if r is not None:
            a2.scatter([max(r, 1.0) if not math.isinf(r) else top], [i], **diamond)
    # the parts (one colour, each framework's name for it) and the recorded run, in one row above the
    # panels: legends inside met the bars' labels, and a block of text under the axes took their height
    handles = [Patch(color=col) for col in parts]
    labels = [" / ".join(dict.fromkeys(names)) for names in parts.values()]
    if recorded:
        handles.append(Line2D([], [], ls="none", marker="D", ms=7, color=plots.PALETTE["reference"]))
        labels.append(f"recorded ({reference.get('machine_short', '')}), its sizes")
    if handles:
        fig.legend(handles, labels, loc="outside upper center", ncols=len(handles), fontsize=11.5, frameon=False,
                   handlelength=1.2, handletextpad=0.4, columnspacing=1.2)
    a2.set_xscale("log")
    a2.set_xlim(1, top * 100)
    a2.set_yticks(range(len(bes)), [n for n, *_ in bes], fontsize=12)
    a2.invert_yaxis()
    a2.set_xlabel("calls to break even (log)")
    a2.set_title("compile repaid after…", loc="left", fontsize=15)
    plots.stamp_figure(fig, data, reference)
    return fig
