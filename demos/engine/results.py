"""A stamped, versioned JSON record of measurements that can be drawn later.

A record says where it was measured (machine, versions, date) and holds ``rows`` (one per
workload × backend × sizes × dtype) plus free-form ``sections`` that topic modules fill
(timelines, roofline peaks, recompilation sweeps...). Figures draw records, so a laptop can
show an H200 run recorded last month, and exports can draw without measuring.
"""
from __future__ import annotations

import copy
import datetime as _dt
import json
import re
import sys
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable

from demos.engine.settings import PROJECT_ROOT
from demos.engine.errors import DemoError

# @2: sections are {topic: {demo name: data}}; @3: one timing schema; @4: compile_s has one meaning
SCHEMA = "jit-deck/record@4"
KNOWN_SCHEMAS = (SCHEMA, "jit-deck/record@3", "jit-deck/record@2")  # older ones are upgraded on reading
RESULTS_DIR = PROJECT_ROOT / "assets" / "results"


@dataclass
class Row:
    workload: str
    backend: str
    params: dict[str, int]
    dtype: str
    device: str
    median_s: float | None = None
    p10_s: float | None = None
    p90_s: float | None = None
    n: int | None = None
    compile_s: float | None = None
    kernels: int | None = None
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple:
        return (self.workload, self.backend, tuple(sorted(self.params.items())), self.dtype, self.device)

    @property
    def ok(self) -> bool:
        return self.error is None and self.median_s is not None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Row":
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


@dataclass
class Record:
    machine: dict[str, Any]
    created: str = field(default_factory=now_iso)
    rows: list[Row] = field(default_factory=list)
    sections: dict[str, Any] = field(default_factory=dict)
    label: str = ""
    schema: str = SCHEMA

    # -- building ---------------------------------------------------------------------
    @classmethod
    def new(cls, label: str = "") -> "Record":
        from demos.engine.devices import machine_info

        return cls(machine=machine_info(), label=label)

    def add(self, row: Row) -> Row:
        self.rows = [r for r in self.rows if r.key != row.key] + [row]
        return row

    def merge(self, other: "Record") -> "Record":
        """A new record with ``other``'s rows and sections laid over this one's."""
        merged = Record(machine=dict(self.machine), created=self.created, rows=list(self.rows),
                        sections=dict(self.sections), label=self.label or other.label)
        for row in other.rows:
            merged.add(row)
        merged.sections.update(other.sections)
        return merged

    # -- reading ----------------------------------------------------------------------
    def find(self, **match: Any) -> list[Row]:
        return [r for r in self.rows if all(getattr(r, k) == v for k, v in match.items())]

    def get(self, **match: Any) -> Row | None:
        found = self.find(**match)
        return found[-1] if found else None

    @property
    def stamp(self) -> str:
        """One line saying where and when: for figure footers."""
        m = self.machine
        vers = ", ".join(f"{k} {m[k]}" for k in ("torch", "jax") if m.get(k))
        date = self.created[:10]
        return f"{m.get('device_name', '?')} · {vers} · {date}"

    @property
    def is_gpu(self) -> bool:
        return self.machine.get("device") == "cuda"

    # -- storage ----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": self.schema,
            "label": self.label,
            "created": self.created,
            "machine": self.machine,
            "rows": [asdict(r) for r in self.rows],
            "sections": self.sections,
        }

    @classmethod
    def from_dict(cls, d: Any, source: str = "record") -> "Record":
        """A record from its JSON form; anything else raises DemoError naming what is wrong."""
        if not isinstance(d, dict):
            raise DemoError(f"{source}: not a jit-deck results record (a JSON {type(d).__name__}, not an object)")
        schema = d.get("schema", "")
        if not str(schema).startswith("jit-deck/record@"):
            raise DemoError(f"{source}: not a jit-deck results record (schema={schema!r})")
        if schema not in KNOWN_SCHEMAS:
            raise DemoError(f"{source}: results record version {schema!r} is not one this deck reads "
                            f"({', '.join(KNOWN_SCHEMAS)})")
        for key, kind in (("machine", dict), ("rows", list), ("sections", dict)):
            if not isinstance(d.get(key, kind()), kind):
                raise DemoError(f"{source}: '{key}' is a {type(d[key]).__name__}, not a {kind.__name__}")
        if schema == "jit-deck/record@2":
            d = upgrade_timings(d)
        if schema != SCHEMA:
            d = upgrade_compile_s(d)
        try:
            rows = [Row.from_dict(r) for r in d.get("rows", [])]
        except (TypeError, AttributeError) as exc:
            raise DemoError(f"{source}: a row is malformed ({exc})") from None
        return cls(machine=d.get("machine", {}), created=str(d.get("created", "")), rows=rows,
                   sections=d.get("sections", {}), label=str(d.get("label", "")))

    def save(self, path: str | Path | None = None) -> Path:
        """Write atomically (a temporary file renamed over the target). Without ``path``: a new
        file in assets/results named for the device, date and time (:func:`default_path`).
        A command checks a given path first (:func:`demos.engine.outputs.output_file`)."""
        from demos.engine.outputs import write_atomic

        path = Path(path) if path else default_path(self)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(self.to_dict(), indent=1, sort_keys=False, default=jsonable) + "\n"
        return write_atomic(path, text)

    @classmethod
    def load(cls, path: str | Path) -> "Record":
        """Read a record; a missing, empty, truncated or foreign file raises DemoError, one line."""
        path = Path(path)
        try:
            text = path.read_text()
        except FileNotFoundError:
            raise DemoError(f"{path}: no such file") from None
        except IsADirectoryError:
            raise DemoError(f"{path}: is a directory, not a results file") from None
        except UnicodeDecodeError:
            raise DemoError(f"{path}: not a text file, so not a results record") from None
        except OSError as exc:
            raise DemoError(f"{path}: cannot read ({exc.strerror or exc})") from None
        if not text.strip():
            raise DemoError(f"{path}: empty file, not a results record")
        try:
            d = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DemoError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg}); truncated?") from None
        return cls.from_dict(d, source=str(path))


_OLD_TIMING_KEYS = {"median": "median_s", "p10": "p10_s", "p90": "p90_s"}


def upgrade_timings(o: Any) -> Any:
    """A record@2's timings in the one schema (``Timing.to_dict``): a timing written as
    ``median``/``p10``/``p90`` gains the ``_s`` its unit asks for, and ``first_call_s`` becomes
    ``first_s``. Nothing else changes."""
    if isinstance(o, list):
        return [upgrade_timings(v) for v in o]
    if not isinstance(o, dict):
        return o
    is_timing = all(k in o for k in _OLD_TIMING_KEYS)
    return {(_OLD_TIMING_KEYS.get(k, k) if is_timing else "first_s" if k == "first_call_s" else k): upgrade_timings(v)
            for k, v in o.items()}


# Where a record before @4 stored a whole first call as ``compile_s``: (topic, demo, the path to
# the dict in the demo's data, "*" for each key, and the path in that dict to its steady call)
_FIRST_CALLS_AS_COMPILE_S = (
    ("model", "speed", (), ("rows", "torch_compile", "median_s")),
    ("yourfn", "inspector", ("report", "torch"), ("compiled", "median_s")),
    ("autotune", "gemms", ("rows", "*"), ("steady", "median_s")),
)
# Where it stored a session's compiling calls summed whole: a dict with ``events`` and ``summary``
_SESSIONS = (("recompilation", "recompile_live", ()), ("recompilation", "compare_modes", ("modes", "*")))


def _at(o: Any, path: tuple[str, ...]) -> list[Any]:
    """The values at ``path`` in nested dicts ("*": every key), leaving out what is missing."""
    if not path:
        return [o]
    if not isinstance(o, dict):
        return []
    keys = list(o) if path[0] == "*" else [path[0]] if path[0] in o else []
    return [v for k in keys for v in _at(o[k], path[1:])]


def _pays_after_again(o: dict[str, Any]) -> None:
    """The inspector's calls-to-break-even from the upgraded ``compile_s``, where ``o`` holds one."""
    from demos.engine.timing import pays_after

    eager, compiled = (o.get(k) for k in ("eager", "compiled"))
    if "pays_after" not in o or not (isinstance(eager, dict) and isinstance(compiled, dict)):
        return
    e, c = eager.get("median_s"), compiled.get("median_s")
    if all(isinstance(x, (int, float)) for x in (e, c)):
        o["pays_after"] = pays_after(o["compile_s"], e, c)


def upgrade_compile_s(d: dict[str, Any]) -> dict[str, Any]:
    """A record before @4 with ``compile_s`` in its one meaning (``timing.first_call``): where it
    held a whole first call, that call becomes ``first_s`` and ``compile_s`` that call less its
    steady call (left out where the record has none), and the inspector's ``pays_after`` follows
    it; a session's summed compiling calls each lose the session's steady call. A copy; nothing
    else changes."""
    from demos.engine.timing import compile_seconds

    d = {**d, "sections": copy.deepcopy(d.get("sections", {}))}
    sections = d["sections"]
    for topic, demo, path, steady_path in _FIRST_CALLS_AS_COMPILE_S:
        for o in _at(sections.get(topic, {}).get(demo), path):
            if isinstance(o, dict) and "compile_s" in o and "first_s" not in o:
                o["first_s"] = first = o.pop("compile_s")
                steady = _at(o, steady_path)
                if isinstance(first, (int, float)) and steady and isinstance(steady[0], (int, float)):
                    o["compile_s"] = compile_seconds(first, steady[0])
                    _pays_after_again(o)
    for topic, demo, path in _SESSIONS:
        for o in _at(sections.get(topic, {}).get(demo), path):
            summary, events = (o.get("summary"), o.get("events")) if isinstance(o, dict) else (None, None)
            if isinstance(summary, dict) and "compile_s" in summary and isinstance(events, list):
                steady = summary.get("steady_s") or 0.0
                summary["compile_s"] = float(sum(compile_seconds(e["seconds"], steady) for e in events
                                                 if isinstance(e, dict) and e.get("compiled")))
    return d


def jsonable(o: Any) -> Any:
    """What ``json.dumps`` cannot write itself, as JSON: arrays and tensors as lists, numpy
    scalars as numbers, sets and tuples as lists, anything else as its text."""
    if hasattr(o, "tolist"):
        return o.tolist()
    if hasattr(o, "item"):
        return o.item()
    if isinstance(o, (set, tuple)):
        return list(o)
    return str(o)


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:48] or "device"


def default_filename(record: Record) -> str:
    """``<device>-<date>-<hhmmss>.json`` (UTC, from when the record was made): a second record the
    same day gets a name of its own."""
    m = record.machine
    name = m.get("gpu_name") or m.get("device_name") or "device"
    name = name.replace("NVIDIA ", "").split("(")[0]
    when = re.sub(r"[^0-9]", "", record.created[11:19]) or "000000"
    return f"{slug(name)}-{record.created[:10]}-{when}.json"


def default_path(record: Record, folder: Path | None = None) -> Path:
    """Where a record goes when no path is given: a file in ``folder`` (assets/results) that
    collides with none already there."""
    from demos.engine.outputs import unique_file

    name = default_filename(record)
    return unique_file(folder or RESULTS_DIR, name[:-len(".json")], ".json")


_WARNED: set[str] = set()


def recorded(paths: Iterable[Path] | None = None, gpu_only: bool = True) -> list[Record]:
    """Recorded runs shipped in assets/results (newest first). A file there that is not a
    record is skipped with one line on stderr (once), so it cannot break any figure."""
    out = []
    for p in paths if paths is not None else sorted(RESULTS_DIR.glob("*.json")):
        try:
            rec = Record.load(p)
        except DemoError as exc:
            if str(p) not in _WARNED:
                _WARNED.add(str(p))
                print(f"skipped: {exc}", file=sys.stderr)
            continue
        if gpu_only and not rec.is_gpu:
            continue
        out.append(rec)
    return sorted(out, key=lambda r: r.created, reverse=True)


def records_at(path: str | Path) -> list[Record]:
    """The records a path names, newest first: one file, or every record in a folder, its GPU
    records only where it holds any (assets/results' CPU records are for the notes to quote, and
    would otherwise stand, being newer, in front of the H100's figures); DemoError for a missing,
    truncated or foreign file, or a folder that holds no record."""
    path = Path(path)
    if path.is_dir():
        recs = recorded(sorted(path.glob("*.json")), gpu_only=False)
        if not recs:
            raise DemoError(f"{path}: a folder with no results record in it")
        return [r for r in recs if r.is_gpu] or recs
    return [Record.load(path)]


def reference(path: str | Path | None = None) -> Record | None:
    """The recorded run a figure shows beside the live one.

    ``path`` (or the environment variable DEMOS_RESULTS) names a record, which must be valid
    (DemoError otherwise), or a folder of them (its newest); otherwise the newest GPU record in
    assets/results, or None.
    """
    if not path:
        from demos.engine.settings import get

        path = get("DEMOS_RESULTS")
    if path:
        return records_at(path)[0]
    recs = recorded()
    return recs[0] if recs else None


def reference_for(topic: str, name: str) -> Record | None:
    """The record a demo's figure shows beside the live one: the newest that holds this demo,
    among the records DEMOS_RESULTS names (a file or a folder) or else the GPU records in
    assets/results. A record cut short by its lease, or one that withdrew a demo, so leaves that
    demo to the record before it; each figure is stamped with its own record's machine and date.
    None holds it: the newest."""
    from demos.engine.settings import get

    named = get("DEMOS_RESULTS")
    return newest_holding(records_at(named) if named else recorded(), topic, name)


def newest_holding(recs: list[Record], topic: str, name: str) -> Record | None:
    """The first of ``recs`` (newest first) that holds the demo ``topic.name``; else the first."""
    return next((r for r in recs if isinstance(r.sections.get(topic, {}).get(name), dict)), recs[0] if recs else None)
