"""Warm interaction latency of every live panel: a control moved, the figure redrawn.

``python -m demos ui-bench`` builds each topic's panels, warms them (both values of the
control it will toggle, so compiles are out of the way), then toggles the first control and
times the panel's redraw. Target: median under 0.5 s on a 2-core CPU at default sizes.
"""
from __future__ import annotations

import importlib
import statistics
import time
from typing import Any

from .cli import TOPICS


def _other_value(widget) -> Any:
    """A neighbouring valid value of a control (so the change stays a small, realistic move)."""
    options = getattr(widget, "options", None)
    if options:
        values = [o[1] if isinstance(o, tuple) else o for o in options]
        i = values.index(widget.value)
        return values[i - 1] if i > 0 else values[min(1, len(values) - 1)]
    step = getattr(widget, "step", 1) or 1
    lo, hi = getattr(widget, "min", None), getattr(widget, "max", None)
    v = widget.value - step
    if lo is not None and v < lo:
        v = widget.value + step
    if hi is not None and v > hi:
        v = widget.value
    return v


def bench_panel(panel, repeats: int = 6) -> dict[str, Any]:
    panel._build()
    name, ctl = next(iter(panel.controls.items()))
    a = ctl.value
    b = _other_value(ctl)
    times = []
    for i in range(repeats + 2):
        t0 = time.perf_counter()
        ctl.value = b if i % 2 == 0 else a  # an observed panel redraws inside this assignment
        if panel.run_button:
            panel.update()
        dt = time.perf_counter() - t0
        if i >= 2:
            times.append(dt)
    return {"control": name, "values": [a, b], "median_s": statistics.median(times),
            "max_s": max(times), "n": len(times), "error": panel.last_error}


def run(topics=TOPICS, repeats: int = 6) -> list[dict[str, Any]]:
    rows = []
    for topic in topics:
        try:
            mod = importlib.import_module(f"demos.{topic}")
        except ModuleNotFoundError:
            continue
        for pname, builder in getattr(mod, "panels", lambda: {})().items():
            panel = builder()
            t0 = time.perf_counter()
            panel._build()
            panel.update()  # first render: may compile (cold) — reported apart
            first = time.perf_counter() - t0
            res = bench_panel(panel, repeats)
            res.update(topic=topic, panel=pname, first_s=first)
            rows.append(res)
            print(f"{topic:<14} {pname:<22} first {first:6.2f} s   warm median {res['median_s']:.3f} s "
                  f"(max {res['max_s']:.3f} s, n={res['n']}, toggling {res['control']})"
                  + (f"  ERROR {res['error']}" if res["error"] else ""), flush=True)
    return rows
