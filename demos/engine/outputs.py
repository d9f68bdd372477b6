"""One way to name and write an output file, so that no command destroys a file or loses its work.

:func:`output_file` is called by every command that writes a file, before any slow work:

- an empty name is refused (``--json ""`` never silently writes nothing);
- a directory, or a place where no file can be created, is refused;
- an existing file is replaced only when it is the deck's own output of the same kind (a results
  record, a timeline, a PNG) or empty; anything else needs ``--force``;
- the command's own input is never written over, ``--force`` or not.

:func:`write_atomic` then writes through a temporary file renamed over the target, so an
interrupted write leaves the old file whole. :func:`unique_file` names a new file that collides
with none (records: device, date and time).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable

from demos.engine.errors import DemoError

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
# What each kind is, in words, and how to recognise one (JSON kinds by their "schema" prefix).
KINDS = {
    "record": ("a jit-deck results record", "jit-deck/record@"),
    "timeline": ("a jit-deck timeline (python -m demos trace --json)", "jit-deck/timeline@"),
    "inspection": ("a jit-deck inspection report (python -m demos inspect --json)", "jit-deck/inspection@"),
    "png": ("a PNG image", None),
    "pdf": ("a PDF", None),
}
_JSON_READ_LIMIT = 64 * 2**20


def kind_of(path: str | Path) -> str | None:
    """Which of :data:`KINDS` an existing file is (None: something else)."""
    path = Path(path)
    try:
        with path.open("rb") as f:
            head = f.read(8)
            if head.startswith(PNG_MAGIC):
                return "png"
            if head.startswith(b"%PDF-"):
                return "pdf"
            if path.stat().st_size > _JSON_READ_LIMIT:
                return None
            f.seek(0)
            d = json.loads(f.read().decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    schema = str(d.get("schema", "")) if isinstance(d, dict) else ""
    for kind, (_words, prefix) in KINDS.items():
        if prefix and schema.startswith(prefix):
            return kind
    return None


def _same(a: Path, b: Path) -> bool:
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return a.resolve() == b.resolve()


def output_file(path: str | Path | None, kind: str, option: str = "output", inputs: Iterable[str | Path] = (),
                force: bool = False) -> Path:
    """The checked path of an output file of ``kind`` (see the module docstring); DemoError, one
    line naming ``option`` (e.g. ``--json``), otherwise."""
    if kind not in KINDS:
        raise ValueError(f"unknown output kind {kind!r}")
    if path is None or not str(path).strip():
        raise DemoError(f"{option} {str(path or '')!r}: an empty file name; give a file name")
    p = Path(str(path)).expanduser()
    for inp in inputs:
        if inp is not None and _same(p, Path(inp)):
            raise DemoError(f"{option} {p}: is this command's input; refusing to write over it")
    if p.is_dir():
        raise DemoError(f"{option} {p}: is a directory; give a file name")
    if p.exists() and not p.is_file():
        raise DemoError(f"{option} {p}: is not a regular file")
    if p.exists() and not force and p.stat().st_size > 0 and kind_of(p) != kind:
        raise DemoError(f"{option} {p}: exists and is not {KINDS[kind][0]}; refusing to overwrite it "
                        "(pass --force to replace it)")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DemoError(f"{option} {p}: cannot create the folder {p.parent} ({exc.strerror or exc})") from None
    probe = p.with_name(f".{p.name}.probe-{os.getpid()}")
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise DemoError(f"{option} {p}: cannot write there ({exc.strerror or exc})") from None
    if p.exists() and not os.access(p, os.W_OK):
        raise DemoError(f"{option} {p}: the file is read-only")
    return p


def output_folder(path: str | Path | None, option: str = "--out") -> Path:
    """A folder a command writes several files into: refused when empty, an existing file, or not
    creatable/writable."""
    if path is None or not str(path).strip():
        raise DemoError(f"{option} {str(path or '')!r}: an empty folder name; give a folder")
    p = Path(str(path)).expanduser()
    if p.exists() and not p.is_dir():
        raise DemoError(f"{option} {p}: is a file, not a folder")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DemoError(f"{option} {p}: cannot create the folder ({exc.strerror or exc})") from None
    probe = p / f".probe-{os.getpid()}"
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise DemoError(f"{option} {p}: cannot write there ({exc.strerror or exc})") from None
    return p


def write_atomic(path: str | Path, data: bytes | str) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same folder, renamed over it."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with tmp.open("wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise DemoError(f"{path}: cannot write ({exc.strerror or exc})") from None
    return path


def unique_file(folder: str | Path, stem: str, suffix: str) -> Path:
    """``folder/stem+suffix``, or ``stem-2``, ``stem-3``… when that exists: never an existing file."""
    folder = Path(folder)
    p = folder / f"{stem}{suffix}"
    n = 2
    while p.exists():
        p = folder / f"{stem}-{n}{suffix}"
        n += 1
    return p
