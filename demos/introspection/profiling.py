"""What the host issued and what the device ran: torch-profiler timelines as data and figures.

Two functions, shared by every part that shows a timeline:

``profile_run(target, ...) -> dict``
    Runs calls of a torch workload in one ``torch.profiler`` session (a warm-up step, then
    recorded steps; the least disturbed recorded call is the run), exports
    the profiler's trace (Kineto's Chrome-trace JSON, the same file ``prof.export_chrome_trace``
    writes) to a temporary file and reads it back with :mod:`demos.introspection.trace` — one
    code path for live runs and recorded trace files (``python -m demos trace FILE``). It
    returns JSON-able data: two lanes of events in ``run["lanes"]["host"]`` and
    ``run["lanes"]["device"]`` (``name``, ``start_us``, ``dur_us``, relative to the first
    event) and counts.

    - ``host``: what the Python thread did inside the call — the direct children of the run:
      aten ops as dispatched (eager), the compiled region's wrapper (torch.compile), the
      final synchronisation (``cudaDeviceSynchronize`` on a GPU).
    - ``device``: on CUDA, the real kernel / memcpy / memset events on the GPU timeline, each
      linked to the launch that started it through the trace's correlation ids (``op``: the
      aten op that launched it, ``launch_us``: when). On a CPU there is no separate device:
      the host thread runs every op itself, synchronously, so the device lane holds the compute
      events *executed by the host* (top-level aten ops that do work, plus Inductor's C++
      kernels when they are profiled). ``run["device_lane"]`` says which of the two it is, and
      :func:`timeline_figure` writes it on the figure.

    Counts (``run["counts"]``): ``ops`` — top-level aten ops that do work (allocation and view
    ops such as ``aten::empty``/``aten::view`` are left out and listed apart); ``kernels`` —
    device kernels on CUDA, host compute events on a CPU; ``launches`` — kernel-launch runtime
    calls (CUDA); ``linked`` — device events whose launch the trace links to; ``host_events`` —
    entries of the host lane.

    Inductor's CPU kernels are invisible to the profiler unless
    ``torch._inductor.config.cpp.enable_kernel_profile`` was on when they were generated: call
    :func:`enable_cpu_kernel_events` *before* compiling (it is part of Inductor's cache key) so
    a compiled run shows its fused C++ kernel(s) in the device lane and in ``kernels``.

``timeline_figure(runs, titles=None) -> Figure``
    Pure: draws one or more runs (e.g. eager above compiled) as pairs of lanes on one shared
    time axis (µs), each pair titled with its op and kernel counts. Draws live or recorded
    runs alike.

``peak_memory(fn, sync, device) -> dict`` (part 2's buffer-reuse slide) is the memory view of
one call: its peak bytes above what existed before, and each allocation the profiler saw.

The data shape (``SCHEMA``) is documented in :mod:`demos.introspection.trace`.
"""
from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Sequence

from demos.engine.errors import DemoError
from demos.introspection.trace import RUN_ANNOTATION, timeline_from_trace
from demos.introspection.trace_events import read_trace

DEVICE_LANE_TEXT = {
    "cuda": "device lane: CUDA kernels on the GPU timeline",
    "host-executes": "CPU: no separate device — the 'device' lane is the host thread running each "
                     "op itself (the lanes coincide)",
}


# ---------------------------------------------------------------------------------------
# Measuring
# ---------------------------------------------------------------------------------------
def enable_cpu_kernel_events(on: bool = True) -> bool:
    """Make Inductor's generated C++ kernels emit profiler events (set before compiling).

    Returns the previous value. It changes Inductor's cache key, so code compiled before the
    call keeps its old behaviour; ``torch._dynamo.reset()`` and recompile to apply it.
    """
    import torch._inductor.config as ic

    old = bool(ic.cpp.enable_kernel_profile)
    ic.cpp.enable_kernel_profile = bool(on)
    return old


def _is_jax(target: Any) -> bool:
    backend = getattr(target, "backend", "")
    return isinstance(backend, str) and backend.startswith("jax")


def _resolve_target(target: Any, sync: Callable | None, device: str | None):
    """(fn, sync, device, meta) from a Prepared workload or a zero-argument callable."""
    if hasattr(target, "fn") and hasattr(target, "sync"):
        if _is_jax(target):
            raise DemoError("the torch profiler sees torch work only; profile a torch_eager or "
                            "torch_compile workload (JAX's XLA work is invisible to it)")
        meta = {
            "workload": target.workload.name,
            "backend": target.backend,
            "params": dict(target.params),
            "dtype": target.dtype,
        }
        return target.fn, sync or target.sync, device or target.device, meta
    if not callable(target):
        raise DemoError(f"profile_run needs a Prepared workload or a zero-argument callable, not {type(target).__name__}")
    if device is None:
        from demos.engine.devices import torch_device

        device = torch_device()
    if sync is None:
        from demos.engine.timing import sync_torch

        sync = sync_torch(device)
    return target, sync, device, {}


_TRACE_SINK: list[tuple[Path, Path | None]] = []  # where `make record` keeps raw traces


@contextlib.contextmanager
def keeping_traces(folder: str | Path, relative_to: str | Path | None = None):
    """Inside the block, every profiled run also keeps its raw trace (gzipped Kineto JSON) in
    ``folder`` and names the file in its data (``trace_file``, relative to ``relative_to``):
    `make record` keeps a GPU box's real traces beside the record, for `python -m demos trace`
    or Perfetto on a laptop."""
    _TRACE_SINK.append((Path(folder), Path(relative_to) if relative_to else None))
    try:
        yield Path(folder)
    finally:
        _TRACE_SINK.pop()


def _sink_trace(text: bytes, label: str) -> str | None:
    if not _TRACE_SINK:
        return None
    import gzip
    import re

    folder, base = _TRACE_SINK[-1]
    folder.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", label).strip("-") or "trace"
    n = 1
    while (folder / f"{stem}-{n}.json.gz").exists():
        n += 1
    path = folder / f"{stem}-{n}.json.gz"
    path.write_bytes(gzip.compress(text))
    return (path.relative_to(base) if base else path).as_posix()


def profile_run(
    target: Any,
    *,
    sync: Callable[[Any], None] | None = None,
    device: str | None = None,
    label: str = "",
    warmup: int = 1,
    passes: int = 1,
    meta: dict[str, Any] | None = None,
    keep_trace: str | Path | None = None,
) -> dict[str, Any]:
    """Profile one call of ``target`` (a :class:`~demos.engine.workloads.Prepared` torch workload or a
    zero-argument callable) and return its two lanes and counts as JSON-able data.

    ``warmup`` calls run first (unprofiled: compiles, allocator warm-up). Then ONE profiler
    session runs ``1 + passes`` calls as steps of ``torch.profiler.schedule(wait=0, warmup=1,
    active=passes)``: the profiler's warm-up step runs while the session starts (its events are
    discarded), so the first op of a recorded step does not carry the session's start-up, which
    a session opened around a single call charges to that call's first op. Of the ``passes``
    recorded steps the least disturbed one (shortest ``demos::run``) is the run: on a shared
    machine a single call can be stretched by other processes (an OpenMP thread descheduled for
    a time slice), which says nothing about the program (:func:`~demos.introspection.trace.
    timeline_from_trace` picks it, so a kept trace file reads back the same).
    The call is synchronised inside the profiled region, so the device lane is complete.
    The session's trace is exported once and parsed like any recorded trace; ``keep_trace``
    also copies that trace file there (all ``passes`` recorded steps).
    """
    from demos.engine.devices import require_torch

    torch = require_torch()
    from torch.profiler import ProfilerActivity, profile, record_function, schedule

    fn, sync, device, tmeta = _resolve_target(target, sync, device)
    tmeta.update(meta or {})
    tmeta["torch"] = torch.__version__
    for _ in range(max(0, warmup)):
        sync(fn())
    cuda = str(device).startswith("cuda")
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    active = max(1, passes)
    with tempfile.TemporaryDirectory(prefix="demos-trace-") as tmp:
        path = Path(tmp) / "trace.json"
        exported: list[bool] = []

        def export(prof) -> None:  # on_trace_ready: once, after the last recorded step
            with quiet_native_stderr():
                prof.export_chrome_trace(str(path))
            exported.append(True)

        with quiet_native_stderr(), profile(activities=activities, on_trace_ready=export,
                                            schedule=schedule(wait=0, warmup=1, active=active, repeat=1)) as prof:
            for _ in range(1 + active):  # the profiler's warm-up step, then the recorded ones
                with record_function(RUN_ANNOTATION):
                    out = fn()
                    sync(out)
                del out
                prof.step()
        if not exported:
            raise DemoError("the profiler session ended without a trace (no recorded step)")
        text = path.read_bytes() if (keep_trace or _TRACE_SINK) else None
        best = timeline_from_trace(read_trace(path), label=label, device=str(device), meta=tmeta)
    if keep_trace and text is not None:
        Path(keep_trace).write_bytes(text)
    if text is not None:
        kept = _sink_trace(text, label or "trace")
        if kept:
            best["trace_file"] = kept
    best["passes"] = active
    return best


@contextlib.contextmanager
def quiet_native_stderr():
    """Silence the profiler's native start/stop lines (libkineto writes 'USDT: … profiler_start'
    to file descriptor 2, which a Jupyter kernel would show as cell output). Python-level
    warnings go through ``sys.stderr`` and are unaffected."""
    try:
        sys.stderr.flush()
    except Exception:
        pass
    try:
        saved = os.dup(2)
        devnull = os.open(os.devnull, os.O_WRONLY)
    except OSError:  # no fd 2 (embedded interpreters): nothing to silence
        yield
        return
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def peak_memory(fn: Callable[[], Any], sync, device: str) -> dict[str, Any]:
    """Peak bytes allocated during one call of ``fn`` above what existed before (``peak_bytes``), and
    the allocations (``buffers``: op, bytes) in the order the profiler saw them."""
    from demos.engine.devices import require_torch

    torch = require_torch()
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        out = fn()
        sync(out)
        peak = torch.cuda.max_memory_allocated() - base
        del out
        how = "torch.cuda.max_memory_allocated"  # the allocator gives the peak; names: the profiler
    else:
        peak, how = None, "profiler memory events"
    from torch.profiler import ProfilerActivity, profile

    with quiet_native_stderr(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        out = fn()
        sync(out)
        del out
    allocs, cur, top = [], 0, 0
    for e in sorted(prof.events(), key=lambda e: e.time_range.start):
        d = getattr(e, "self_device_memory_usage" if device.startswith("cuda") else "self_cpu_memory_usage", 0)
        if not d:
            continue
        cur += d
        top = max(top, cur)
        if d > 0:
            allocs.append({"op": e.name.replace("aten::", ""), "bytes": int(d)})
    return {"peak_bytes": int(top if peak is None else peak), "buffers": allocs, "how": how}


# ---------------------------------------------------------------------------------------
# Drawing
# ---------------------------------------------------------------------------------------
# Okabe–Ito-compatible categorical colours for op names (the same op, the same colour).
OP_COLORS = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
             "#999933", "#882255", "#44AA99"]
_KIND_COLORS = {"sync": "#BBBBBB", "region": "#DDDDDD", "bookkeeping": "#E8E8E8", "runtime": "#CCCCCC",
                "memcpy": "#AAAAAA"}


_FIXED_OP_COLORS = {"sin": 0, "cos": 1, "mul": 2, "add": 3, "relu": 5, "clamp_min": 5, "tanh": 4,
                    "sigmoid": 6, "exp": 7, "neg": 8, "sum": 9, "mm": 0, "addmm": 0, "gelu": 3}


def op_color(name: str) -> str:
    """The same op name gets the same colour in every timeline (fused kernels: blue)."""
    if name in _FIXED_OP_COLORS:
        return OP_COLORS[_FIXED_OP_COLORS[name]]
    if "fused" in name:
        return "#0072B2"
    import zlib

    return OP_COLORS[zlib.crc32(name.encode()) % len(OP_COLORS)]


def kernel_seconds(run: dict[str, Any]) -> float | None:
    """The device's busy time in one profiled call: its GPU kernels' durations summed (None for a
    CPU run, whose "device" lane is the host thread running each op: no separate kernel time)."""
    if run.get("device_lane") != "cuda":
        return None
    kernels = [ev["dur_us"] for ev in run["lanes"]["device"] if ev["kind"] == "kernel"]
    return sum(kernels) * 1e-6 if kernels else None


def busy_seconds(run: dict[str, Any]) -> float:
    """The device lane's events summed: on CUDA its kernels' durations (:func:`kernel_seconds`);
    on a CPU the compute events the host ran itself (ops, Inductor's C++ kernels). Unlike the
    span, it leaves out launch gaps, the host's issue time and the final synchronisation."""
    return sum(ev["dur_us"] for ev in run["lanes"]["device"] if ev["kind"] == "kernel") * 1e-6


def summary(run: dict[str, Any]) -> str:
    """'6 ops → 6 kernels' (or '… on the host' for a CPU run)."""
    c = run["counts"]
    k = c["kernels"]
    where = "GPU kernels" if run.get("device_lane") == "cuda" else "compute events on the host"
    return f"{c['ops']} aten op{'s' * (c['ops'] != 1)} → {k} {where if k != 1 else where.replace('kernels', 'kernel').replace('events', 'event')}"


def _draw_launch_links(ax, device_events: list[dict], y_dev: float, lane_h: float, scale: float,
                       limit: int = 64) -> None:
    """Thin lines from each launch on the host lane (drawn at ``y_dev + 1``) to the start of
    the kernel it started: how far the GPU runs behind the host (asynchronous launches)."""
    linked = [ev for ev in device_events if ev.get("launch_us") is not None]
    if not linked or len(linked) > limit:
        return
    for ev in linked:
        ax.plot([ev["launch_us"] * scale, ev["start_us"] * scale], [y_dev + 1 - lane_h / 2, y_dev + lane_h / 2],
                color="#777777", linewidth=0.7, alpha=0.7, zorder=0.5)


def timeline_figure(
    runs: Sequence[dict[str, Any]],
    titles: Sequence[str] | None = None,
    *,
    title: str | None = None,
    stamp: str | None = None,
    size: tuple[float, float] | None = None,
):
    """Draw runs from :func:`profile_run` as host/device lane pairs on one time axis.

    ``titles`` name each run (default: its ``label``); ``title`` replaces the figure title
    (default: the counts of every run); ``stamp`` is written as the 'Measured on' footer.
    """
    from demos.engine import plots

    runs = list(runs)
    if not runs:
        raise DemoError("timeline_figure needs at least one profiled run")
    titles = list(titles) if titles is not None else [r.get("label") or f"run {i + 1}" for i, r in enumerate(runs)]
    if len(titles) != len(runs):
        raise DemoError(f"timeline_figure: {len(runs)} runs but {len(titles)} titles")
    fig, ax = plots.figure(size=size or plots.SLIDE_SIZE)
    span = max([r.get("span_us") or 0.0 for r in runs] + [1e-3])
    unit, scale = ("ms", 1e-3) if span > 5000 else ("µs", 1.0)
    yticks, ylabels = [], []
    lane_h = 0.8
    y = 0.0
    for run, name in zip(reversed(runs), reversed(titles)):
        lanes = run.get("lanes", {})
        dev_label = "GPU" if run.get("device_lane") == "cuda" else "CPU runs op"
        for lane, ylab in (("device", f"{name}\n{dev_label}"), ("host", f"{name}\nhost")):
            events = lanes.get(lane, [])
            for ev in events:
                kind = ev.get("kind", "op")
                if kind in ("op", "kernel"):  # a kernel takes the colour of the op that launched it
                    col = op_color(ev.get("op") or ev["name"])
                else:
                    col = _KIND_COLORS.get(kind, "#DDDDDD")
                x0, w = ev["start_us"] * scale, max(ev["dur_us"] * scale, span * scale * 0.002)
                ax.broken_barh([(x0, w)], (y - lane_h / 2, lane_h), facecolors=col, edgecolors="white",
                               linewidth=0.6, hatch="//" if kind == "sync" else None,
                               alpha=0.6 if lane == "host" else 1.0)
                if w > span * scale * 0.045:
                    text = "wait" if kind == "sync" else ev["name"]
                    ax.text(x0 + w / 2, y, text[: max(3, int(w / (span * scale) * 90))], ha="center",
                            va="center", fontsize=12.5, color="black" if kind not in ("op", "kernel") else "white",
                            clip_on=True)
            if lane == "device":
                _draw_launch_links(ax, events, y, lane_h, scale)
            yticks.append(y)
            ylabels.append(ylab)
            y += 1.0
        y += 0.5
    ax.set_yticks(yticks)
    ax.set_yticklabels(ylabels, fontsize=11.5)  # two lines a lane, a lane apart: room for a long footer
    ax.set_ylim(-0.6, y - 0.9)
    ax.set_xlim(0, span * scale * 1.02)
    ax.set_xlabel(f"time since the first event ({unit})")
    ax.grid(axis="y", visible=False)
    if title is None:
        if len(runs) == 1:
            title = f"{titles[0]}: {summary(runs[0])}"
        else:
            title = " · ".join(f"{t}: {r['counts']['kernels']} kernel{'s' * (r['counts']['kernels'] != 1)}"
                               for t, r in zip(titles, runs))
    fig.suptitle(title, fontsize=15)
    notes = sorted({DEVICE_LANE_TEXT.get(r.get("device_lane"), "") for r in runs} - {""})
    if any(r.get("device_lane") == "host-executes" for r in runs):
        notes = [DEVICE_LANE_TEXT["host-executes"] + ";\ngaps between bars = Python + dispatch"]
    ax.set_title("; ".join(notes), fontsize=12.5, loc="left", color="#555555")
    if stamp:
        plots.stamp(fig, stamp)
    return fig
