"""What the host issued and what the device ran: torch-profiler timelines as data and figures.

Two functions, shared by every part that shows a timeline:

``profile_run(target, ...) -> dict``
    Runs one call of a torch workload under ``torch.profiler`` (after a warm-up call) and
    returns JSON-able data: two lanes of events in ``run["lanes"]["host"]`` and
    ``run["lanes"]["device"]`` (``name``, ``start_us``, ``dur_us``, relative to the first
    event) and counts.

    - ``host``: what the Python thread did inside the call — the direct children of the run:
      aten ops as dispatched (eager), the compiled region's wrapper (torch.compile), the
      final synchronisation (``cudaDeviceSynchronize`` on a GPU).
    - ``device``: on CUDA, the real kernel / memcpy / memset events on the GPU timeline. On a
      CPU there is no separate device: the host thread runs every op itself, synchronously, so
      the device lane holds the compute events *executed by the host* (top-level aten ops that
      do work, plus Inductor's C++ kernels when they are profiled). ``run["device_lane"]`` says
      which of the two it is, and :func:`timeline_figure` writes it on the figure.

    Counts (``run["counts"]``): ``ops`` — top-level aten ops that do work (allocation and view
    ops such as ``aten::empty``/``aten::view`` are left out and listed apart); ``kernels`` —
    device kernels on CUDA, host compute events on a CPU; ``launches`` — kernel-launch runtime
    calls (CUDA); ``host_events`` — entries of the host lane.

    Inductor's CPU kernels are invisible to the profiler unless
    ``torch._inductor.config.cpp.enable_kernel_profile`` was on when they were generated: call
    :func:`enable_cpu_kernel_events` *before* compiling (it is part of Inductor's cache key) so
    a compiled run shows its fused C++ kernel(s) in the device lane and in ``kernels``.

``timeline_figure(runs, titles=None) -> Figure``
    Pure: draws one or more runs (e.g. eager above compiled) as pairs of lanes on one shared
    time axis (µs), each pair titled with its op and kernel counts. Draws live or recorded
    runs alike.

The data shape (``SCHEMA``)::

    {"schema": "jit-deck/timeline@1", "label": str, "device": "cpu"|"cuda"|…,
     "device_lane": "cuda" | "host-executes",
     "lanes": {"host": [{"name", "full", "start_us", "dur_us", "kind"}], "device": [same]},
     "counts": {"ops", "kernels", "launches", "host_events", "memcpy"},
     "op_names": [...], "kernel_names": [...], "skipped_ops": [...],
     "span_us": float, "wall_us": float, "meta": {...}}
"""
from __future__ import annotations

import contextlib
import os
import re
import sys
from typing import Any, Callable, Sequence

from demos.engine.errors import DemoError

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
_CPU_KERNEL_RE = re.compile(r"cpp_fused|cpp_kernel|^kernel_cpp|^graph_\d+_cpp")
_FUNCTOR_GENERIC = {"AUnary", "BUnary", "Unary", "Binary", "Ternary", "Nullary", "Vectorized", "Compare"}

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


def short_name(name: str) -> str:
    """A readable label for an op or kernel name (``aten::sin`` → ``sin``;
    ``…at::native::sin_kernel_cuda…`` → ``sin``; ``…MulFunctor<float>…`` → ``mul``)."""
    if name.startswith("aten::"):
        return name[6:]
    if "<" in name or "(" in name or "::" in name:
        m = re.search(r"at::native::(?:[\w]+::)*?(\w+?)_kernel_cuda", name)
        if m:
            return m.group(1)
        functors = [f for f in re.findall(r"(\w+?)Functor", name) if f not in _FUNCTOR_GENERIC]
        if functors:
            return functors[-1].split("_")[-1].lower()
        m = re.search(r"(\w*gemm\w*|\w*sgemm\w*|cutlass\w*|ampere\w*|sm\d+_xmma\w*)", name)
        if m:
            return m.group(1)[:24]
        m = re.search(r"([A-Za-z_]\w{2,})", name.replace("void ", ""))
        if m:
            return m.group(1)[:24]
    m = re.search(r"graph_\d+_(cpp_fused\w*)", name)
    if m:
        return m.group(1)
    if name.startswith("## Call CompiledFxGraph"):
        return "CompiledFxGraph"
    return name[:48]


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


def _event(fe: Any, t0: float, kind: str) -> dict[str, Any]:
    return {
        "name": short_name(fe.name),
        "full": fe.name[:200],
        "start_us": round(fe.time_range.start - t0, 3),
        "dur_us": round(max(fe.time_range.end - fe.time_range.start, 0.0), 3),
        "kind": kind,
    }


def _top_aten(fe: Any) -> bool:
    """An aten op with no aten op above it (what the user's code dispatched)."""
    if not fe.name.startswith("aten::"):
        return False
    p = fe.cpu_parent
    while p is not None:
        if p.name.startswith("aten::"):
            return False
        p = p.cpu_parent
    return True


def _host_kind(name: str) -> str:
    low = name.lower()
    if "synchronize" in low or "streamsynchronize" in low or "eventsynchronize" in low:
        return "sync"
    if name.startswith("aten::"):
        return "bookkeeping" if name in BOOKKEEPING_OPS else "op"
    if low.startswith("cuda") or low.startswith("cu"):
        return "runtime"
    return "region"


def profile_run(
    target: Any,
    *,
    sync: Callable[[Any], None] | None = None,
    device: str | None = None,
    label: str = "",
    warmup: int = 1,
    passes: int = 1,
    meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Profile one call of ``target`` (a :class:`~demos.engine.workloads.Prepared` torch workload or a
    zero-argument callable) and return its two lanes and counts as JSON-able data.

    ``warmup`` calls run first (unprofiled: compiles, allocator warm-up); ``passes`` profiled
    calls run and the least disturbed one (smallest wall time) is kept: on a shared machine a
    single call can be stretched by other processes (an OpenMP thread descheduled for a time
    slice), which says nothing about the program.
    The call is synchronised inside the profiled region, so the device lane is complete.
    """
    from demos.engine.devices import require_torch

    torch = require_torch()
    from torch.profiler import ProfilerActivity, profile, record_function

    fn, sync, device, tmeta = _resolve_target(target, sync, device)
    tmeta.update(meta or {})
    for _ in range(max(0, warmup)):
        sync(fn())
    cuda = str(device).startswith("cuda")
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    best = None
    for _ in range(max(1, passes)):
        with quiet_native_stderr(), profile(activities=activities) as prof:
            with record_function(RUN_ANNOTATION):
                out = fn()
                sync(out)
        del out
        run = _lanes_from_events(list(prof.events()), cuda=cuda, device=str(device), label=label,
                                 meta=tmeta, torch_version=torch.__version__)
        if best is None or (run["wall_us"] or 0.0) < (best["wall_us"] or 0.0):
            best = run
    best["passes"] = max(1, passes)
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


def _lanes_from_events(events: list, *, cuda: bool, device: str, label: str, meta: dict,
                       torch_version: str = "") -> dict[str, Any]:
    """Turn profiler FunctionEvents into the lanes/counts dict (separated for tests)."""
    cpu_type = _device_type("CPU")
    runs = [e for e in events if e.name == RUN_ANNOTATION and _is_cpu(e, cpu_type)]
    root = runs[-1] if runs else None

    def inside_root(fe) -> bool:
        if root is None:
            return True
        p = fe.cpu_parent
        while p is not None:
            if p is root:
                return True
            p = p.cpu_parent
        return False

    cpu_events = [e for e in events if _is_cpu(e, cpu_type) and e.name != RUN_ANNOTATION
                  and not getattr(e, "is_async", False)]
    if root is not None:
        lo, hi = root.time_range.start, root.time_range.end
        # runtime calls (cudaDeviceSynchronize, launches) may come without a parent link on
        # some builds: a parentless event inside the run's time window belongs to the run too
        loose = [e for e in cpu_events if e.cpu_parent is None and e is not root
                 and lo <= e.time_range.start <= hi]
        host_fes = [e for e in cpu_events if e.cpu_parent is root] + loose
        scoped = [e for e in cpu_events if inside_root(e)] + loose
    else:
        host_fes = [e for e in cpu_events if e.cpu_parent is None]
        scoped = cpu_events
    host_fes.sort(key=lambda e: e.time_range.start)

    top_ops = sorted((e for e in scoped if _top_aten(e)), key=lambda e: e.time_range.start)
    work_ops = [e for e in top_ops if e.name not in BOOKKEEPING_OPS]
    skipped = [e.name for e in top_ops if e.name in BOOKKEEPING_OPS]
    cpu_kernels = [e for e in scoped if _CPU_KERNEL_RE.search(e.name)]
    launches = [e for e in scoped if "launchkernel" in e.name.lower().replace("_", "")
                or e.name.lower() in ("culaunchkernel", "cudalaunchkernelexc")]

    if cuda:
        dev_fes = [e for e in events if not _is_cpu(e, cpu_type)
                   and not getattr(e, "is_user_annotation", False)
                   and e.name != RUN_ANNOTATION
                   and "annotation" not in str(getattr(e, "activity_type", "")).lower()]
        if root is not None:  # keep the device work of this call only
            lo, hi = root.time_range.start, root.time_range.end
            dev_fes = [e for e in dev_fes if e.time_range.end >= lo and e.time_range.start <= hi + 1e5]
        dev_fes.sort(key=lambda e: e.time_range.start)
        device_lane = "cuda"
    else:
        dev_fes = sorted(work_ops + [k for k in cpu_kernels if k not in work_ops],
                         key=lambda e: e.time_range.start)
        # an Inductor kernel nested inside a counted aten op is part of that op, not another one
        device_lane = "host-executes"

    starts = [e.time_range.start for e in host_fes + dev_fes]
    t0 = min(starts) if starts else (root.time_range.start if root is not None else 0.0)
    host = [_event(e, t0, _host_kind(e.name)) for e in host_fes]
    dev = []
    memcpy = 0
    for e in dev_fes:
        low = e.name.lower()
        kind = "memcpy" if low.startswith(("memcpy", "memset")) else "kernel"
        memcpy += kind == "memcpy"
        dev.append(_event(e, t0, kind))
    ends = [ev["start_us"] + ev["dur_us"] for ev in host + dev]
    n_kernels = sum(1 for ev in dev if ev["kind"] == "kernel")
    return {
        "schema": SCHEMA,
        "label": label,
        "device": device,
        "device_lane": device_lane,
        "lanes": {"host": host, "device": dev},
        "counts": {
            "ops": len(work_ops),
            "kernels": n_kernels,
            "launches": len(launches),
            "host_events": len(host),
            "memcpy": memcpy,
        },
        "op_names": [short_name(e.name) for e in work_ops],
        "kernel_names": [ev["name"] for ev in dev if ev["kind"] == "kernel"],
        "skipped_ops": [short_name(n) for n in skipped],
        "span_us": round(max(ends) if ends else 0.0, 3),
        "wall_us": round(root.time_range.end - root.time_range.start, 3) if root is not None else None,
        "meta": dict(meta, torch=torch_version),
    }


def _device_type(name: str):
    try:
        from torch.autograd import DeviceType

        return getattr(DeviceType, name)
    except Exception:  # pragma: no cover
        return None


def _is_cpu(fe: Any, cpu_type: Any) -> bool:
    return getattr(fe, "device_type", cpu_type) == cpu_type
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


def summary(run: dict[str, Any]) -> str:
    """'6 ops → 6 kernels' (or '… on the host' for a CPU run)."""
    c = run["counts"]
    k = c["kernels"]
    where = "GPU kernels" if run.get("device_lane") == "cuda" else "compute events on the host"
    return f"{c['ops']} aten op{'s' * (c['ops'] != 1)} → {k} {where if k != 1 else where.replace('kernels', 'kernel').replace('events', 'event')}"


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
                if kind in ("op", "kernel"):
                    col = op_color(ev["name"])
                else:
                    col = _KIND_COLORS.get(kind, "#DDDDDD")
                x0, w = ev["start_us"] * scale, max(ev["dur_us"] * scale, span * scale * 0.002)
                ax.broken_barh([(x0, w)], (y - lane_h / 2, lane_h), facecolors=col, edgecolors="white",
                               linewidth=0.6, hatch="//" if kind == "sync" else None,
                               alpha=0.6 if lane == "host" else 1.0)
                if w > span * scale * 0.045:
                    text = "wait" if kind == "sync" else ev["name"]
                    ax.text(x0 + w / 2, y, text[: max(3, int(w / (span * scale) * 90))], ha="center",
                            va="center", fontsize=10, color="black" if kind not in ("op", "kernel") else "white",
                            clip_on=True)
            yticks.append(y)
            ylabels.append(ylab)
            y += 1.0
        y += 0.5
    ax.set_yticks(yticks)
    ax.set_yticklabels(ylabels, fontsize=10)
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
    ax.set_title("; ".join(notes), fontsize=10.5, loc="left", color="#555555")
    if stamp:
        plots.stamp(fig, stamp)
    return fig
