"""Timelines from the trace format torch.profiler exports: Kineto's Chrome-trace JSON.

``prof.export_chrome_trace(path)`` writes one JSON object (``.json``, or gzip-compressed
``.json.gz``) whose ``traceEvents`` list holds every event of the profiled window. The
fields this module reads (libkineto's ``output_json.cpp`` and ``CuptiActivity.cpp``)::

    {"ph": "X", "cat": "cpu_op", "name": "aten::sin", "pid": 4242, "tid": 4242,
     "ts": 123.456, "dur": 7.125, "args": {"External id": 12, ...}}       # µs, ns precision
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4242, "tid": 4242,
     "ts": …, "dur": …, "args": {"External id": 12, "cbid": 211, "correlation": 77}}
    {"ph": "X", "cat": "kernel", "name": "void at::native::…", "pid": 0, "tid": 7,
     "ts": …, "dur": …, "args": {"device": 0, "stream": 7, "correlation": 77, "grid": […], …}}
    {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 77, "pid": 4242, "tid": 4242, "ts": …}
    {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 77, "pid": 0, "tid": 7, "ts": …, "bp": "e"}

Host-side categories: ``cpu_op`` (aten ops), ``user_annotation`` (``record_function``),
``cuda_runtime`` / ``cuda_driver`` (launches, synchronisation), ``python_function``.
Device-side categories, on ``pid`` = GPU index and ``tid`` = stream: ``kernel``,
``gpu_memcpy``, ``gpu_memset`` (and ``gpu_user_annotation``, a GPU-side copy of an annotation,
which is not work). A launch and the kernel it started share a ``correlation`` id, in their
``args`` and in the ``ac2g`` flow pair (``s`` at the launch, ``f`` at the kernel). The file has
no parent links: nesting on a host thread is time containment.

One parser serves CPU-only and CUDA traces, live (``profiling.profile_run`` exports its trace
to a temporary file and reads it back here) and recorded ones (``python -m demos trace FILE``):

``read_trace(path) -> dict``            the JSON object, or DemoError naming what is wrong
``timeline_from_trace(trace, ...) -> dict``  the timeline schema below
``load_timeline(path, ...) -> dict``    both

The timeline schema (``SCHEMA``), shared with :mod:`demos.introspection.profiling`::

    {"schema": "jit-deck/timeline@1", "label": str, "device": "cpu"|"cuda"|…,
     "device_lane": "cuda" | "host-executes",
     "lanes": {"host": [{"name", "full", "start_us", "dur_us", "kind"}],
               "device": [same, plus "op", "launch_us", "corr" when a launch is linked]},
     "counts": {"ops", "kernels", "launches", "host_events", "memcpy", "linked", "refused"},
     "refused_events": [str, ...],   # up to 5 events whose times cannot be placed (NaN, inf, < 0)
     "op_names": [...], "kernel_names": [...], "skipped_ops": [...],
     "span_us": float, "wall_us": float | None, "meta": {...}}

Which part of the trace is "the run": the last ``demos::run`` annotation (what
``profile_run`` wraps around the call), else the last ``ProfilerStep#N`` (what
``torch.profiler.schedule`` writes), else the whole trace.
"""
from __future__ import annotations

import gzip
import json
import math
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

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
CPU_KERNEL_RE = re.compile(r"cpp_fused|cpp_kernel|^kernel_cpp|^graph_\d+_cpp")

HOST_CATS = frozenset({"cpu_op", "user_annotation", "cuda_runtime", "cuda_driver", "python_function",
                       "xpu_runtime", "privateuse1_runtime", "privateuse1_driver", "mtia_runtime",
                       "operator", "runtime"})  # the last two: pre-2022 Kineto spellings
RUNTIME_CATS = frozenset({"cuda_runtime", "cuda_driver", "xpu_runtime", "privateuse1_runtime",
                          "privateuse1_driver", "mtia_runtime", "runtime"})
DEVICE_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"})
_HOST_RANK = {"user_annotation": 0, "cpu_op": 1, "operator": 1, "python_function": 2}
_EPS_US = 0.005  # 5 ns: ts/dur carry ns precision, and ~4e12 µs floats lose the last digit


# ---------------------------------------------------------------------------------------
# Names
# ---------------------------------------------------------------------------------------
_FUNCTOR_GENERIC = {"AUnary", "BUnary", "Unary", "Binary", "Ternary", "Nullary", "Vectorized", "Compare",
                    "func_wrapper", "Reduce", "Welford", "CUDA"}
# ATen's generic launchers: the op is named inside their template arguments
_ATEN_LAUNCHERS = {"vectorized_elementwise_kernel", "unrolled_elementwise_kernel", "elementwise_kernel",
                   "elementwise_kernel_with_index", "reduce_kernel", "index_elementwise_kernel",
                   "distribution_elementwise_grid_stride_kernel", "Kernel", "Kernel2", "device_kernel",
                   "kernel", "launch_kernel"}
_LIB_KEYWORDS = re.compile(r"gemm|gemv|fprop|dgrad|wgrad|conv|matmul|nvjet|splitKreduce|softmax|attention|fmha",
                           re.I)
_TILE = re.compile(r"(?<![\d])(\d+x\d+(?:x\d+)?)(?![\d])")


def short_name(name: str) -> str:
    """A readable label for an op or kernel name.

    ``aten::sin`` → ``sin``; ``void at::native::vectorized_elementwise_kernel<4,
    at::native::sin_kernel_cuda(…)…>`` → ``sin``; ``…binary_internal::MulFunctor<float>…`` →
    ``mul``; ``…CUDAFunctor_add<float>…`` → ``add``; ``…sum_functor<…>…`` → ``sum``;
    ``sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_…_cublas`` →
    ``sm90_xmma_gemm 128x128x64``; ``void cudnn::cnn::conv2d_grouped_direct_kernel<…>(…)`` →
    ``conv2d_grouped_direct``; ``Memcpy HtoD (Pageable -> Device)`` → ``memcpy HtoD``.
    Triton and Inductor C++ kernel names are kept whole (they already name the fused ops).
    """
    name = name.strip()
    if name.startswith("aten::"):
        return name[6:]
    m = re.match(r"^(Memcpy|Memset)\s*(\w+)?", name)
    if m:
        return m.group(1).lower() + (f" {m.group(2)}" if m.group(2) and m.group(1) == "Memcpy" else "")
    m = re.search(r"graph_\d+_(cpp_fused\w*)", name)
    if m:
        return m.group(1)
    if name.startswith("## Call CompiledFxGraph"):
        return "CompiledFxGraph"
    if re.match(r"^(triton_|cpp_fused|cpp_kernel)\w*$", name):
        return name
    if "<" in name or "(" in name or "::" in name:
        return _short_templated(name)
    if re.fullmatch(r"[\w$.]+", name) and len(name) > 32:
        return _short_library(name)
    return name if len(name) <= 48 else name[:47] + "…"


def _short_templated(name: str) -> str:
    # ATen elementwise kernels: the op's own kernel function is named inside the template
    m = re.search(r"at::native::(?:\(anonymous namespace\)::)?(?:\w+::)*?(\w+?)_kernel_cuda\b", name)
    if m:
        return m.group(1)
    m = re.search(r"\bCUDAFunctor(?:OnSelf|OnOther)?_(\w+?)<", name)
    if m:
        return m.group(1)
    m = re.search(r"\blaunch_(\w+?)_(?:scalar|tensor|kernel)\b", name)
    if m:
        return m.group(1)
    m = re.search(r"\b(\w+?)CUDAKernelImpl\b", name)
    if m:
        return m.group(1).lower()
    functors = [f for f in re.findall(r"(\w+?)Functor(?:_\w+)?<", name) if f not in _FUNCTOR_GENERIC]
    if functors:
        return functors[-1].split("_")[-1].lower()
    m = re.search(r"\b(\w+?)_functor<", name)
    if m and m.group(1) not in _FUNCTOR_GENERIC:
        return m.group(1)
    m = re.search(r"\b(Max|Min|Mean|Norm|Sum|Prod|Argmax|Argmin)Ops<", name)
    if m:
        return m.group(1).lower()
    # the function's own name: the last component of the qualified name before "<" or "("
    head = re.sub(r"^\s*(?:void|static|__global__)\s+", "", name)
    base_m = re.match(r"([\w:\s()]*?)(?:<|\(|$)", head.replace("(anonymous namespace)", "anon"))
    base = (base_m.group(1) if base_m else head).strip().split("::")[-1].strip()
    if base in _ATEN_LAUNCHERS:
        # a generic launcher (cutlass::Kernel2<cutlass_80_…gemm…>): the first named argument
        inner = re.findall(r"([A-Za-z_]\w{3,})", head[len(base_m.group(0)) if base_m else 0:])
        inner = [w for w in inner if w not in ("float", "half", "char", "const", "int", "long", "unsigned",
                                               "bool", "double", "cutlass", "Params", "at", "native", "detail",
                                               "Array", "anon", "lambda", "operator", "void")]
        if inner:
            return _short_library(inner[0]) if len(inner[0]) > 32 else inner[0]
    if base:
        base = re.sub(r"(?i)_?kernel(?:_\w*)?$", "", base) or base
        return _short_library(base) if len(base) > 32 else base
    m = re.search(r"([A-Za-z_]\w{2,})", name.replace("void ", ""))
    return m.group(1)[:32] if m else name[:32]


def _short_library(name: str) -> str:
    """Library kernel names (cuBLAS, cuDNN, CUTLASS): keep the family and the tile size."""
    tokens = name.split("_")
    tile = _TILE.search(name)
    key = next((i for i, t in enumerate(tokens) if _LIB_KEYWORDS.search(t)), None)
    if key is None:
        out = "_".join(tokens[:2])
    else:
        out = "_".join(tokens[: key + 1])
        if len(out) > 24:
            out = f"{tokens[0]} {tokens[key]}"
    if tile and tile.group(1) not in out:
        out += f" {tile.group(1)}"
    return out if len(out) <= 40 else out[:39] + "…"


# ---------------------------------------------------------------------------------------
# Reading the file
# ---------------------------------------------------------------------------------------
def read_trace(path: str | Path) -> dict[str, Any]:
    """The trace's JSON object (``traceEvents`` plus metadata), from plain or gzip JSON.

    Raises DemoError with one line naming the file and what is wrong with it."""
    p = Path(path)
    if not p.exists():
        raise DemoError(f"{p}: no such file")
    if p.is_dir():
        raise DemoError(f"{p}: is a directory, not a trace file")
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise DemoError(f"{p}: cannot read it ({exc.strerror or exc})") from None
    if not raw.strip():
        raise DemoError(f"{p}: empty file, not a trace")
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (EOFError, OSError, zlib.error) as exc:
            raise DemoError(f"{p}: truncated or corrupt gzip ({exc})") from None
        if not raw.strip():
            raise DemoError(f"{p}: empty once decompressed, not a trace")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise DemoError(f"{p}: binary data, not a JSON trace (torch.profiler writes JSON, "
                        "optionally .gz)") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        hint = " — truncated?" if exc.pos >= len(text.rstrip()) - 1 else ""
        raise DemoError(f"{p}: not valid JSON ({exc.msg} at {where}{hint})") from None
    if isinstance(data, list):  # the Chrome format's bare-array form
        data = {"traceEvents": data}
    if not isinstance(data, dict) or "traceEvents" not in data:
        kind = type(data).__name__ if not isinstance(data, dict) else "an object"
        raise DemoError(f"{p}: JSON {kind} without 'traceEvents' — not a Chrome/Kineto trace "
                        "(write one with prof.export_chrome_trace(path))")
    if not isinstance(data["traceEvents"], list):
        raise DemoError(f"{p}: 'traceEvents' is not a list of events")
    return data


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
# Events
# ---------------------------------------------------------------------------------------
@dataclass(eq=False)
class _Ev:
    name: str
    cat: str
    pid: Any
    tid: Any
    ts: float
    dur: float
    args: dict
    parent: "_Ev | None" = None
    children: list = field(default_factory=list)

    @property
    def end(self) -> float:
        return self.ts + self.dur

    @property
    def thread(self) -> tuple:
        return (self.pid, self.tid)

    def corr(self) -> int | None:
        c = self.args.get("correlation")
        return c if isinstance(c, int) and not isinstance(c, bool) else None

    def ancestors(self) -> Iterable["_Ev"]:
        p = self.parent
        while p is not None:
            yield p
            p = p.parent


def _num(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return None
    return None


def _events(trace: dict[str, Any]) -> tuple[list[_Ev], list[_Ev], list[dict], list[str]]:
    """(host events, device events, flow events, refused) of a trace's ``traceEvents``: a timed
    event whose start or duration is missing, NaN, infinite, negative or absurd cannot be placed on
    a timeline, so it is refused (``refused`` describes each) instead of drawn."""
    host, dev, flows = [], [], []
    bad: list[str] = []
    for raw in trace.get("traceEvents", []):
        if not isinstance(raw, dict):
            continue
        ph = raw.get("ph")
        cat = str(raw.get("cat", "")).lower()
        if ph in ("s", "f") and cat == "ac2g":
            flows.append(raw)
            continue
        if ph != "X":
            continue
        if cat not in DEVICE_CATS and cat not in HOST_CATS:
            continue
        ts, dur = _num(raw.get("ts")), _num(raw.get("dur", 0.0))
        if not _placeable(ts, dur):
            bad.append(f"{str(raw.get('name', '?'))[:40]!r} ts={raw.get('ts')!r} dur={raw.get('dur')!r}")
            continue
        args = raw.get("args") if isinstance(raw.get("args"), dict) else {}
        ev = _Ev(str(raw.get("name", "")), cat, raw.get("pid"), raw.get("tid"), ts, dur or 0.0, args)
        if cat in DEVICE_CATS:
            dev.append(ev)
        else:
            host.append(ev)
    return host, dev, flows, bad


# Beyond these a time is not a profiler's: Kineto's ts are µs since the epoch or boot (~1e15 at
# most), and no profiled window lasts a day.
MAX_TS_US = 1e17
MAX_DUR_US = 86_400e6


def _placeable(ts: float | None, dur: float | None) -> bool:
    """Can an event with this start and duration go on a timeline?"""
    return (ts is not None and dur is not None and math.isfinite(ts) and math.isfinite(dur)
            and 0.0 <= ts <= MAX_TS_US and 0.0 <= dur <= MAX_DUR_US)


def _nest(host: list[_Ev]) -> None:
    """Parent links on each host thread from time containment (the file has none)."""
    threads: dict[tuple, list[_Ev]] = {}
    for e in host:
        threads.setdefault(e.thread, []).append(e)
    for evs in threads.values():
        evs.sort(key=lambda e: (e.ts, -e.dur, _HOST_RANK.get(e.cat, 3)))
        stack: list[_Ev] = []
        for e in evs:
            while stack and not (e.ts >= stack[-1].ts - _EPS_US and e.end <= stack[-1].end + _EPS_US):
                stack.pop()
            if stack:
                e.parent = stack[-1]
                stack[-1].children.append(e)
            stack.append(e)


def _link_flows(host: list[_Ev], dev: list[_Ev], flows: list[dict]) -> None:
    """Give events without an ``args.correlation`` the id of their ``ac2g`` flow (the flow's
    ``s`` sits at the launch's start on its thread, its ``f`` at the kernel's start)."""
    if not flows:
        return
    # candidates: launches (runtime calls) for an "s", device activity for an "f"
    cands: dict[tuple, list[_Ev]] = {}
    for e in host + dev:
        if e.corr() is None and (e.cat in DEVICE_CATS or e.cat in RUNTIME_CATS):
            cands.setdefault(("f" if e.cat in DEVICE_CATS else "s", e.pid, e.tid), []).append(e)
    if not cands:
        return
    for f in flows:
        fid, ts = f.get("id"), _num(f.get("ts"))
        if not isinstance(fid, int) or ts is None:
            continue
        for e in cands.get((f.get("ph"), f.get("pid"), f.get("tid")), []):
            if abs(e.ts - ts) <= _EPS_US or (e.cat in RUNTIME_CATS and e.ts <= ts <= e.end):
                e.args = dict(e.args, correlation=fid)
                break


def _is_launch(e: _Ev) -> bool:
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


def _top_aten(e: _Ev) -> bool:
    """An aten op with no aten op above it (what the user's code dispatched)."""
    return e.name.startswith("aten::") and not any(p.name.startswith("aten::") for p in e.ancestors())


def _pick_root(host: list[_Ev]) -> _Ev | None:
    runs = [e for e in host if e.name == RUN_ANNOTATION]
    if not runs:
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
    host, dev, flows, refused = _events(trace)
    if not host and not dev:
        why = (f"; all {len(refused)} were refused, their times cannot be placed on a timeline "
               f"(first: {refused[0]})" if refused else "")
        raise DemoError(f"no timed events (ph 'X' with a host or device category) in 'traceEvents'{why}")
    _nest(host)
    _link_flows(host, dev, flows)
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

    links: dict[int, _Ev] = {}  # id(device event) → its launch
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


def _main_thread(host: list[_Ev]) -> tuple | None:
    counts: dict[tuple, int] = {}
    for e in host:
        if e.cat in ("cpu_op", "operator"):
            counts[e.thread] = counts.get(e.thread, 0) + 1
    if not counts:
        for e in host:
            counts[e.thread] = counts.get(e.thread, 0) + 1
    return max(counts, key=counts.get) if counts else None


def _lane_event(e: _Ev, t0: float, kind: str) -> dict[str, Any]:
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
