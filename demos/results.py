"""A stamped, versioned JSON record of measurements that can be drawn later.

A record says where it was measured (machine, versions, date) and holds ``rows`` (one per
workload × backend × sizes × dtype) plus free-form ``sections`` that topic modules fill
(timelines, roofline peaks, recompilation sweeps...). Figures draw records, so a laptop can
show an H200 run recorded last month, and exports can draw without measuring.
"""
from __future__ import annotations

import datetime as _dt
import json
import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable

from ._env import PROJECT_ROOT

SCHEMA = "jit-deck/record@1"
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
        from .devices import machine_info

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
    def from_dict(cls, d: dict[str, Any]) -> "Record":
        schema = d.get("schema", "")
        if not str(schema).startswith("jit-deck/record@"):
            raise ValueError(f"not a jit-deck results record (schema={schema!r})")
        return cls(
            machine=d.get("machine", {}),
            created=d.get("created", ""),
            rows=[Row.from_dict(r) for r in d.get("rows", [])],
            sections=d.get("sections", {}),
            label=d.get("label", ""),
            schema=schema,
        )

    def save(self, path: str | Path | None = None) -> Path:
        path = Path(path) if path else RESULTS_DIR / default_filename(self)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=1, sort_keys=False, default=_jsonable) + "\n")
        return path

    @classmethod
    def load(cls, path: str | Path) -> "Record":
        return cls.from_dict(json.loads(Path(path).read_text()))


def _jsonable(o: Any) -> Any:
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
    m = record.machine
    name = m.get("gpu_name") or m.get("device_name") or "device"
    name = name.replace("NVIDIA ", "").split("(")[0]
    return f"{slug(name)}-{record.created[:10]}.json"


def recorded(paths: Iterable[Path] | None = None, gpu_only: bool = True) -> list[Record]:
    """Recorded runs shipped in assets/results (newest first)."""
    out = []
    for p in paths if paths is not None else sorted(RESULTS_DIR.glob("*.json")):
        try:
            rec = Record.load(p)
        except (ValueError, OSError, json.JSONDecodeError):
            continue
        if gpu_only and not rec.is_gpu:
            continue
        out.append(rec)
    return sorted(out, key=lambda r: r.created, reverse=True)


def reference(path: str | Path | None = None) -> Record | None:
    """The recorded run a figure shows beside the live one.

    ``path`` (or the environment variable DEMOS_RESULTS) names a file; otherwise the newest GPU
    record in assets/results, or None when none exists.
    """
    import os

    path = path or os.environ.get("DEMOS_RESULTS")
    if path:
        return Record.load(path)
    recs = recorded()
    return recs[0] if recs else None
