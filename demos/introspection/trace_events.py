"""Reading a torch.profiler trace file and placing its events: Kineto's Chrome-trace JSON.

``prof.export_chrome_trace(path)`` writes one JSON object (``.json``, or gzip-compressed
``.json.gz``) whose ``traceEvents`` list holds every event of the profiled window. The
fields read here (libkineto's ``output_json.cpp`` and ``CuptiActivity.cpp``)::

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

:func:`read_trace` reads the file (plain or gzip JSON) and refuses, in one line naming the file,
whatever is not a trace. :func:`timed_events` sorts a trace's timed events into host events,
device events and flow events as :class:`Event` records, refusing those whose times cannot be
placed on a timeline (missing, NaN, infinite, negative or absurd). :func:`nest` gives host
events their parents by time containment; :func:`link_flows` gives launches and kernels without
an ``args.correlation`` the id of their ``ac2g`` flow. :mod:`demos.introspection.trace` builds
the timeline from these.
"""
from __future__ import annotations

import gzip
import json
import math
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from demos.engine.errors import DemoError

HOST_CATS = frozenset({"cpu_op", "user_annotation", "cuda_runtime", "cuda_driver", "python_function",
                       "xpu_runtime", "privateuse1_runtime", "privateuse1_driver", "mtia_runtime",
                       "operator", "runtime"})  # the last two: pre-2022 Kineto spellings
RUNTIME_CATS = frozenset({"cuda_runtime", "cuda_driver", "xpu_runtime", "privateuse1_runtime",
                          "privateuse1_driver", "mtia_runtime", "runtime"})
DEVICE_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"})
_HOST_RANK = {"user_annotation": 0, "cpu_op": 1, "operator": 1, "python_function": 2}
_EPS_US = 0.005  # 5 ns: ts/dur carry ns precision, and ~4e12 µs floats lose the last digit


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


# ---------------------------------------------------------------------------------------
# Events
# ---------------------------------------------------------------------------------------
@dataclass(eq=False)
class Event:
    """One timed (``ph`` "X") event of a trace: times in µs; ``parent`` and ``children`` are set
    by :func:`nest` (host events only)."""

    name: str
    cat: str
    pid: Any
    tid: Any
    ts: float
    dur: float
    args: dict
    parent: "Event | None" = None
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

    def ancestors(self) -> Iterable["Event"]:
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


def timed_events(trace: dict[str, Any]) -> tuple[list[Event], list[Event], list[dict], list[str]]:
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
        ev = Event(str(raw.get("name", "")), cat, raw.get("pid"), raw.get("tid"), ts, dur or 0.0, args)
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


def nest(host: list[Event]) -> None:
    """Parent links on each host thread from time containment (the file has none)."""
    threads: dict[tuple, list[Event]] = {}
    for e in host:
        threads.setdefault(e.thread, []).append(e)
    for evs in threads.values():
        evs.sort(key=lambda e: (e.ts, -e.dur, _HOST_RANK.get(e.cat, 3)))
        stack: list[Event] = []
        for e in evs:
            while stack and not (e.ts >= stack[-1].ts - _EPS_US and e.end <= stack[-1].end + _EPS_US):
                stack.pop()
            if stack:
                e.parent = stack[-1]
                stack[-1].children.append(e)
            stack.append(e)


def link_flows(host: list[Event], dev: list[Event], flows: list[dict]) -> None:
    """Give events without an ``args.correlation`` the id of their ``ac2g`` flow (the flow's
    ``s`` sits at the launch's start on its thread, its ``f`` at the kernel's start)."""
    if not flows:
        return
    # candidates: launches (runtime calls) for an "s", device activity for an "f"
    cands: dict[tuple, list[Event]] = {}
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
