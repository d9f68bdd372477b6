"""Timelines from the trace format torch.profiler exports: Kineto's Chrome-trace JSON.

:mod:`demos.introspection.trace_events` reads the file and places its events (the format's fields
are described there); :mod:`demos.introspection.kernel_names` names ops and kernels readably.
This module builds the timeline from them.

One parser serves CPU-only and CUDA traces, live (``profiling.profile_run`` exports its trace
to a temporary file and reads it back here) and recorded ones (``python -m demos trace FILE``);
``trace_events.read_trace(path) -> dict`` reads the file (the JSON object, or DemoError naming
what is wrong):

``timeline_from_trace(trace, ...) -> dict``  the timeline schema below
``load_timeline(path, ...) -> dict``    read_trace, then timeline_from_trace
``summary_line(run, name) -> str``      one line of a timeline's counts

The timeline schema (``SCHEMA``), shared with :mod:`demos.introspection.profiling`::

    {"schema": "jit-deck/timeline@1", "label": str, "device": "cpu"|"cuda"|…,
     "device_lane": "cuda" | "host-executes",
     "lanes": {"host": [{"name", "full", "start_us", "dur_us", "kind"}],
               "device": [same, plus "op", "launch_us", "corr" when a launch is linked]},
     "counts": {"ops", "kernels", "launches", "host_events", "memcpy", "linked", "refused"},
     "refused_events": [str, ...],   # up to 5 events whose times cannot be placed (NaN, inf, < 0)
     "op_names": [...], "kernel_names": [...], "skipped_ops": [...],
     "span_us": float, "wall_us": float | None, "meta": {...}}

Which part of the trace is "the run": the shortest ``demos::run`` annotation (what
``profile_run`` wraps around each recorded call: the least disturbed of its steps), else the
last ``ProfilerStep#N`` (what ``torch.profiler.schedule`` writes), else the whole trace.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from demos.engine.errors import DemoError
from demos.introspection.kernel_names import short_name
from demos.introspection.trace_events import (
    MAX_TS_US,
    RUNTIME_CATS,
    Event,
    link_flows,
    nest,
    read_trace,
    timed_events,
)

SCHEMA = "jit-deck/timeline@1"
RUN_ANNOTATION = "demos::run"

# aten ops that allocate or re-view memory without computing: not counted as ops/kernels.
BOOKKEEPING_OPS = frozenset(
    "aten::" + n
    for n in (
        "empty", "empty_strided", "empty_like", "view", "reshape", "_reshape_alias", "as_strided",
        "resize_", "detach", "detach_", "alias", "t", "transpose", "expand", "unsqueeze", "squeeze",
        "select", "slice", "permute", "lift_fresh", "result_type", "_unsafe_view", "set_",
        "zeros", "zero_", "fill_", "contiguous", "numpy_T", "unbind", "split", "chunk",
    )
)
CPU_KERNEL_RE = re.compile(r"cpp_fused|cpp_kernel|^kernel_cpp|^graph_\d+_cpp")


def load_timeline(path: str | Path, *, label: str | None = None, device: str | None = None,
                  meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """``timeline_from_trace(read_trace(path))``, labelled with the file name by default."""
    p = Path(path)
    trace = read_trace(p)
    m = {"trace": p.name, **(meta or {})}
    try:
        return timeline_from_trace(trace, label=p.name if label is None else label, device=device, meta=m)
    except DemoError as exc:
        raise DemoError(f"{p}: {exc}") from None


# ---------------------------------------------------------------------------------------
# Which events are what
# ---------------------------------------------------------------------------------------
def _is_launch(e: Event) -> bool:
    low = e.name.lower().replace("_", "")
    return "launchkernel" in low or low in ("culaunchkernel", "cudalaunchkernelexc", "cudagraphlaunch",
                                           "culaunchkernelex", "cudalaunchcooperativekernel")


def _host_kind(name: str, cat: str = "") -> str:
    low = name.lower()
    if "synchronize" in low:
        return "sync"
    if name.startswith("aten::"):
        return "bookkeeping" if name in BOOKKEEPING_OPS else "op"
    if cat in RUNTIME_CATS or low.startswith("cuda") or low.startswith("cu"):
        return "runtime"
    return "region"


def _top_aten(e: Event) -> bool:
    """An aten op with no aten op above it (what the user's code dispatched)."""
    return e.name.startswith("aten::") and not any(p.name.startswith("aten::") for p in e.ancestors())


def _pick_root(host: list[Event]) -> Event | None:
    runs = [e for e in host if e.name == RUN_ANNOTATION]
    if runs:  # one per recorded step of profile_run's session: the least disturbed call
        return min(runs, key=lambda e: (e.dur, -e.ts))
    runs = [e for e in host if e.cat == "user_annotation" and e.name.startswith("ProfilerStep#")]
    return max(runs, key=lambda e: e.ts) if runs else None


# ---------------------------------------------------------------------------------------
# The timeline
# ---------------------------------------------------------------------------------------
def timeline_from_trace(trace: dict[str, Any], *, label: str = "", device: str | None = None,
                        meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """Host and device lanes plus counts (``SCHEMA``) from a trace's JSON object.

    ``device`` defaults to ``"cuda"`` when the trace holds device activity (kernels, copies),
    else ``"cpu"``. On a CPU the device lane is the compute the host ran itself
    (``device_lane == "host-executes"``): top-level aten ops that do work plus Inductor's C++
    kernels when they were profiled.
    """
    host, dev, flows, refused = timed_events(trace)
    if not host and not dev:
        why = (f"; all {len(refused)} were refused, their times cannot be placed on a timeline "
               f"(first: {refused[0]})" if refused else "")
        raise DemoError(f"no timed events (ph 'X' with a host or device category) in 'traceEvents'{why}")
    nest(host)
    link_flows(host, dev, flows)
    root = _pick_root(host)
    if device is None:
        device = "cuda" if dev else "cpu"
    cuda = bool(dev) or str(device).startswith("cuda")

    if root is not None:
        lo, hi = root.ts, root.end
        in_root = {id(e) for e in host if any(p is root for p in e.ancestors())}
        # a runtime call recorded on another thread inside the run's window belongs to it too
        loose = [e for e in host if e.parent is None and e is not root and e.thread != root.thread
                 and e.cat in RUNTIME_CATS and lo <= e.ts <= hi]
        host_evs = [e for e in host if e.parent is root] + loose
        scoped = [e for e in host if id(e) in in_root] + loose
    else:
        lo = hi = None
        main = _main_thread(host)
        host_evs = [e for e in host if e.parent is None and e.thread == main]
        scoped = list(host)
    host_evs.sort(key=lambda e: e.ts)
    scoped.sort(key=lambda e: e.ts)

    top_ops = [e for e in scoped if _top_aten(e)]
    work_ops = [e for e in top_ops if e.name not in BOOKKEEPING_OPS]
    skipped = [e.name for e in top_ops if e.name in BOOKKEEPING_OPS]
    cpu_kernels = [e for e in scoped if CPU_KERNEL_RE.search(e.name)]
    launch_evs = [e for e in scoped if e.cat in RUNTIME_CATS or _is_launch(e)]
    launches = [e for e in launch_evs if _is_launch(e)]
    by_corr = {e.corr(): e for e in launch_evs if e.corr() is not None}

    links: dict[int, Event] = {}  # id(device event) → its launch
    if cuda:
        dev_evs = []
        for e in dev:
            launch = by_corr.get(e.corr())
            if launch is not None:
                links[id(e)] = launch
                dev_evs.append(e)
            elif root is None or (e.end >= lo and e.ts <= hi):  # unlinked: keep what ran in the window
                dev_evs.append(e)
        dev_evs.sort(key=lambda e: e.ts)
        device_lane = "cuda"
    else:
        # an Inductor kernel nested inside a counted aten op is part of that op, not another one
        dev_evs = sorted(work_ops + [k for k in cpu_kernels if not any(p in work_ops for p in k.ancestors())],
                         key=lambda e: e.ts)
        device_lane = "host-executes"

    starts = [e.ts for e in host_evs + dev_evs]
    t0 = min(starts) if starts else (lo or 0.0)
    host_lane = [_lane_event(e, t0, _host_kind(e.name, e.cat)) for e in host_evs]
    dev_lane = []
    memcpy = 0
    for e in dev_evs:
        is_copy = e.cat in ("gpu_memcpy", "gpu_memset", "memcpy", "memset") or \
            e.name.lower().startswith(("memcpy", "memset"))
        kind = "memcpy" if (cuda and is_copy) else "kernel"
        memcpy += kind == "memcpy"
        ev = _lane_event(e, t0, kind)
        launch = links.get(id(e))
        if launch is not None:
            op = next((p for p in reversed([launch, *launch.ancestors()]) if _top_aten(p)), None)
            ev.update(corr=launch.corr(), launch_us=round(launch.ts - t0, 3),
                      op=short_name(op.name) if op is not None else None)
        dev_lane.append(ev)
    ends = [ev["start_us"] + ev["dur_us"] for ev in host_lane + dev_lane]
    kernels = [ev for ev in dev_lane if ev["kind"] == "kernel"]
    out_meta = dict(_trace_meta(trace), **(meta or {}))
    if root is not None and root.name != RUN_ANNOTATION:
        out_meta["root"] = root.name
    steps = sorted(e.ts for e in host if e.name == RUN_ANNOTATION)
    if len(steps) > 1:  # which recorded step is drawn (0-based), of how many
        out_meta.update(step=steps.index(root.ts), steps=len(steps))
    return {
        "schema": SCHEMA,
        "label": label,
        "device": device,
        "device_lane": device_lane,
        "lanes": {"host": host_lane, "device": dev_lane},
        "counts": {
            "ops": len(work_ops),
            "kernels": len(kernels),
            "launches": len(launches),
            "graph_launches": sum(e.name.lower().replace("_", "") == "cudagraphlaunch" for e in launches),
            "host_events": len(host_lane),
            "memcpy": memcpy,
            "linked": len(links),
            "refused": len(refused),
        },
        "refused_events": refused[:5],
        "op_names": [short_name(e.name) for e in work_ops],
        "kernel_names": [ev["name"] for ev in kernels],
        "skipped_ops": [short_name(n) for n in skipped],
        "span_us": round(max(ends) if ends else 0.0, 3),
        "wall_us": round(root.dur, 3) if root is not None else None,
        "meta": out_meta,
    }


def _main_thread(host: list[Event]) -> tuple | None:
    counts: dict[tuple, int] = {}
    for e in host:
        if e.cat in ("cpu_op", "operator"):
            counts[e.thread] = counts.get(e.thread, 0) + 1
    if not counts:
        for e in host:
            counts[e.thread] = counts.get(e.thread, 0) + 1
    return max(counts, key=counts.get) if counts else None


def _lane_event(e: Event, t0: float, kind: str) -> dict[str, Any]:
    return {
        "name": short_name(e.name),
        "full": e.name[:200],
        "start_us": round(e.ts - t0, 3),
        "dur_us": round(e.dur, 3),
        "kind": kind,
    }


def _trace_meta(trace: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    props = trace.get("deviceProperties")
    if isinstance(props, list) and props and isinstance(props[0], dict) and props[0].get("name"):
        out["gpu"] = str(props[0]["name"])
    for key in ("schemaVersion", "_source"):
        if key in trace and isinstance(trace[key], (str, int, float)):
            out["source" if key == "_source" else "trace_schema"] = trace[key]
    return out


def summary_line(run: dict[str, Any], name: str = "") -> str:
    """One line: device lane, kernels, launches, ops, span (what ``python -m demos trace`` prints)."""
    c = run["counts"]
    lane = "cuda" if run.get("device_lane") == "cuda" else "host-executes (CPU: no separate device)"
    gpu = run.get("meta", {}).get("gpu")
    parts = [f"device lane {lane}" + (f" [{gpu}]" if gpu else ""),
             f"{c['kernels']} kernel{'s' * (c['kernels'] != 1)}",
             f"{c['launches']} launch{'es' * (c['launches'] != 1)}",
             f"{c['ops']} aten op{'s' * (c['ops'] != 1)}",
             f"span {run['span_us']:.1f} µs"]
    refused = c.get("refused", 0)
    if refused:
        parts.append(f"{refused} event{'s' * (refused != 1)} refused (time missing, NaN, infinite, negative "
                     f"or beyond {MAX_TS_US:.0e} µs: not placeable on a timeline)")
    return (f"{name}: " if name else "") + " · ".join(parts)
