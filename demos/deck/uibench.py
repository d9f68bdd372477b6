"""Warm interaction latency of every declared demo: a control moved, the figure redrawn.

``python -m demos ui-bench`` builds each demo's panel, renders it once (the first render may
compile: reported apart as ``first``), then moves each control between its default and a
neighbouring value, timing the redraw (a Run-button panel: the control set, then Run).
Target: median under 0.5 s on a 2-core CPU at default sizes; Run-button sweeps within 5 s.
"""
from __future__ import annotations

import contextlib
import io
import statistics
import time
from typing import Any, Sequence

# The interaction targets, declared once (benchmarks reported, not timed tests)
MOVE_S, RUN_S = 0.5, 5.0              # median of a control move; of a Run-button sweep
DRAW_MEDIAN_S, DRAW_MAX_S = 0.06, 0.1  # drawing + encoding a figure
VIEW_S = 0.15                          # a view-only control (no measuring)


def bench_panel(panel, repeats: int = 6) -> list[dict[str, Any]]:
    """Time redraws after moving each control of ``panel`` (one row per control)."""
    rows = []
    panel._build()
    for spec in panel.specs:
        ctl = panel.controls[spec.name]
        a = ctl.value
        b = spec.neighbour(a)
        if b == a:
            continue
        times, measures, draws = [], [], []
        layouts = _layouts(panel)
        for i in range(repeats + 2):
            panel.last_encode_s = None
            t0 = time.perf_counter()
            ctl.value = b if i % 2 == 0 else a  # an observed panel queues its redraw (its turn comes at once here)
            if panel.run_button:
                panel.update()
            else:
                panel.join(300)
            if i >= 2:  # the first move of each value may still compile: a warm-up
                times.append(time.perf_counter() - t0)
                split = panel.last_split
                if split is not None and panel.last_encode_s is not None:  # a panel of its own draws unsplit
                    measures.append(split["measure_s"])
                    draws.append(split["figure_s"] + panel.last_encode_s)
            if i == 1:
                layouts = _layouts(panel)
        rows.append({"control": spec.name, "values": [a, b], "median_s": statistics.median(times),
                     "max_s": max(times), "n": len(times), "error": panel.last_error, "view": spec.view,
                     "measure_s": statistics.median(measures) if measures else None,
                     "draw_s": statistics.median(draws) if draws else None,
                     "draw_max_s": max(draws) if draws else None,
                     "layouts": _layouts(panel) - layouts})  # of the timed redraws, how many laid the figure out
    return rows


def _layouts(panel) -> int:
    """How many times the panel's reused figures have been laid out (`figure_slots.SlotLayout`)."""
    slot = getattr(panel, "slot", None)
    figures = slot.figures.values() if slot is not None else ()
    return sum(getattr(fig.get_layout_engine(), "runs", 0) for fig, _axes in figures)


def bench_demos(demos: Sequence, repeats: int = 6, verbose: bool = True) -> list[dict[str, Any]]:
    rows = []
    for demo in demos:
        panel = demo.open_panel()
        # nothing a panel prints (IPython display objects outside a kernel) enters the report
        with contextlib.redirect_stdout(io.StringIO()):
            t0 = time.perf_counter()
            panel._build()
            panel.update()  # first render: may compile (cold), reported apart
            first = time.perf_counter() - t0
            results = bench_panel(panel, repeats)
        for res in results:
            res.update(demo=demo.key, first_s=first, run_button=demo.button, cold=demo.pacing == "cold")
            rows.append(res)
            if verbose:
                print(_line(res), flush=True)
    return rows


def _line(r: dict[str, Any]) -> str:
    kind = "Run" if r["run_button"] else "move"
    err = f"  ERROR {r['error']}" if r["error"] else ""
    split = ("   measure    –    draw    –" if r.get("draw_s") is None else
             f"   measure {r['measure_s']:.3f} draw {r['draw_s']:.3f} (laid out {r.get('layouts', 0)} of {r['n']})")
    return (f"{r['demo']:<30} {r['control']:<12} {kind:<4} first {r['first_s']:6.2f} s   "
            f"median {r['median_s']:.3f} s (max {r['max_s']:.3f} s, n={r['n']}){split}{err}")


def report(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "no panels measured"
    meds = [r["median_s"] for r in rows]
    slow = [r for r in rows if r["median_s"] > (RUN_S if r["run_button"] else MOVE_S) and not r.get("cold")]
    cold = sorted({r["demo"] for r in rows if r.get("cold")})
    text = (f"\n{len(rows)} controls over {len({r['demo'] for r in rows})} demos · median of medians "
            f"{statistics.median(meds):.3f} s · worst {max(meds):.3f} s")
    if slow:
        text += f"\nover target ({MOVE_S:g} s a move, {RUN_S:g} s a Run): " + ", ".join(f"{r['demo']}:{r['control']}" for r in slow)
    draws = [r["draw_s"] for r in rows if r.get("draw_s") is not None]
    if draws:
        text += (f"\ndrawing + encoding: median {statistics.median(draws):.3f} s over {len(draws)} controls, "
                 f"worst {max(draws):.3f} s (target {DRAW_MEDIAN_S:g} s median, never over {DRAW_MAX_S:g} s)")
        slow_draw = [r for r in rows if r.get("draw_max_s") is not None and r["draw_max_s"] > DRAW_MAX_S]
        if slow_draw:
            text += f"\ndrawing over {DRAW_MAX_S:g} s: " + ", ".join(f"{r['demo']}:{r['control']}" for r in slow_draw)
    slow_view = [r for r in rows if r.get("view") and r["median_s"] > VIEW_S]
    if slow_view:
        text += f"\nview-only controls over {VIEW_S:g} s: " + ", ".join(f"{r['demo']}:{r['control']}" for r in slow_view)
    if cold:
        text += "\nexempt (the lesson is a cold compile; the slide opens on `make warm`'s result): " + ", ".join(cold)
    return text
