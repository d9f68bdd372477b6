"""Every environment setting the deck reads, declared once and parsed in one place.

A setting that is unset, or set to an empty string (``make pdf RESULTS=`` passes one), takes its
default. A value that does not parse raises :class:`SettingError`: one line naming the setting, the
value and what is allowed, e.g. ``DEMOS_THREADS='abc': a whole number from 1 to 1024``. Every
command calls :func:`check_all` before any work (exit code 2); a live cell meets the same line in
its panel when the measurement reads the setting.

This is the one module of ``demos/`` that reads the environment (``tests/test_structure.py``
fails on a raw read anywhere else); writing it for children, or copying it into a child's, is
done where the child starts. It sits at the bottom of the engine, above only
:mod:`demos.engine.errors` and :mod:`demos.engine.hardware` (which devices exist, for
``DEMOS_DEVICE``), so every module may read a setting without an import circle.
"""
from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from demos.engine.errors import DemoError
from demos.engine.hardware import missing_device, present_devices

# The checkout: slides/, .cache/ and build/ are under it.
PROJECT_ROOT = Path(__file__).resolve().parents[2]
TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off")


class SettingError(DemoError):
    """A malformed setting: the message names it, the value and what is allowed."""


@dataclass(frozen=True)
class Setting:
    name: str
    allowed: str                       # what is allowed, in words (the error's second half)
    parse: Callable[[str], Any]        # raw text -> value; raises ValueError when it is not allowed
    default: Any = None
    help: str = ""
    empty_is_unset: bool = True        # False: an empty value is a value (JUPYTER_TOKEN='' is refused, not unset)


def _whole(lo: int, hi: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        n = int(text.strip(), 10)
        if not lo <= n <= hi:
            raise ValueError
        return n
    return parse


def _flag(text: str) -> bool:
    low = text.strip().lower()
    if low in TRUE:
        return True
    if low in FALSE:
        return False
    raise ValueError


def _choice(*options: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        low = text.strip().lower()
        if low not in options:
            raise ValueError
        return low
    return parse


def _folder(text: str) -> Path:
    p = Path(text.strip()).expanduser()
    if p.exists() and not p.is_dir():
        raise ValueError
    return p


def _file(text: str) -> Path:
    p = Path(text).expanduser()
    if not p.is_file():
        raise ValueError
    return p


def _file_or_folder(text: str) -> Path:
    p = Path(text).expanduser()
    if not (p.is_file() or p.is_dir()):
        raise ValueError
    return p


def _program(text: str) -> Path:
    p = Path(text.strip()).expanduser()
    if not (p.is_file() and os.access(p, os.X_OK)):
        raise ValueError
    return p


def _device(text: str) -> str:
    low = text.strip().lower()
    if low not in ("cpu", "cuda", "mps"):
        raise ValueError
    missing = missing_device(low)
    if missing:
        raise SettingError(f"DEMOS_DEVICE={text!r}: {missing}; this machine has {', '.join(present_devices())}")
    return low


def _index(text: str) -> str:
    """'pypi', or the URL of a pip index."""
    text = text.strip()
    if text.lower() == "pypi":
        return "pypi"
    if not re.fullmatch(r"(https?|file)://\S+", text):
        raise ValueError
    return text.rstrip("/")


def _text(text: str) -> str:
    """Any text, as it is (a variable another program reads the same way)."""
    return text


def _part(text: str) -> str:
    """A part number that exists in slides/, or a notebook path (checked by the presenter)."""
    text = text.strip()
    if text.endswith(".ipynb"):
        return text
    n = int(text, 10)
    if not list((PROJECT_ROOT / "slides").glob(f"{n:02d}_*.ipynb")):
        raise ValueError
    return str(n)


def _part_numbers() -> str:
    nums = sorted(int(p.name[:2]) for p in (PROJECT_ROOT / "slides").glob("[0-9][0-9]_*.ipynb"))
    return ", ".join(map(str, nums)) or "none yet"


SETTINGS: dict[str, Setting] = {s.name: s for s in (
    Setting("DEMOS_THREADS", "a whole number of torch threads from 1 to 1024", _whole(1, 1024),
            help="fix torch's thread count instead of choosing it from the load"),
    Setting("DEMOS_MODEL_THREADS", "a whole number from 1 to 1024", _whole(1, 1024), 1,
            help="torch threads for part 6's model on a CPU"),
    Setting("DEMOS_ALLOCATOR", "'steady' or 'default'", _choice("steady", "default"), "steady",
            help="'default' leaves glibc's allocator as it is"),
    Setting("DEMOS_DEVICE", "cpu, cuda or mps (one this machine has)", _device,
            help="the torch device the demos run on (default: cuda > mps > cpu)"),
    Setting("DEMOS_STATIC", "1/0, true/false, yes/no", _flag, False,
            help="live cells draw one static figure (headless execution, exports)"),
    Setting("DEMOS_DEBUG", "1/0, true/false, yes/no", _flag, False, help="print tracebacks behind one-line errors"),
    Setting("DEMOS_PRESENT_QUIET", "1/0, true/false, yes/no", _flag, False, help="no server log from make present"),
    Setting("DEMOS_CACHE_DIR", "a folder (not a file)", _folder, help="where compile caches live (.cache/)"),
    Setting("DEMOS_USER_CACHE_DIR", "a folder (not a file)", _folder,
            help="this user's own compile caches where the shared .cache/ is read-only (a hub's image): "
                 "default $XDG_CACHE_HOME/jit-deck, else ~/.cache/jit-deck"),
    Setting("DEMOS_CACHES_FOR", "a machine fingerprint", _text,
            help="set by the deck: whose compile caches TORCHINDUCTOR_CACHE_DIR and DEMOS_JAX_CACHE_DIR name"),
    Setting("DEMOS_WARMED_DIR", "a folder (not a file)", _folder, help="where `make warm` stores the results the warmed panels open on"),
    Setting("DEMOS_JAX_CACHE_DIR", "a folder (not a file)", _folder, help="JAX's persistent compile cache"),
    Setting("DEMOS_BUILD_DIR", "a folder (not a file)", _folder, help="where exports are written (build/)"),
    Setting("DEMOS_CHROMIUM", "the path of an executable chromium", _program, help="the browser for PDF and walk"),
    Setting("DEMOS_USER_PYTHONSTARTUP", "an existing Python file", _file, help="your PYTHONSTARTUP, kept"),
    Setting("DEMOS_RESULTS", "an existing results file (assets/results/<file>.json) or a folder of them",
            _file_or_folder, help="the recorded run figures draw (a folder: each from the newest that holds it)"),
    Setting("RESULTS", "an existing results file (assets/results/<file>.json) or a folder of them",
            _file_or_folder, help="make pdf/html: draw this recorded run (a folder: each figure from the newest "
                                  "that holds it)"),
    Setting("DEMOS_TORCH_INDEX", "'pypi' or a pip index URL (http:// or https://)", _index,
            help="make setup: where torch comes from (default: chosen by make plan)"),
    Setting("DEMOS_JAX_BUILD", "cpu, cuda12 or cuda13", _choice("cpu", "cuda12", "cuda13"),
            help="make setup: which JAX build (default: chosen by make plan from the NVIDIA driver)"),
    Setting("PORT", "a port number from 1 to 65535", _whole(1, 65535), 8888, help="make present's port"),
    Setting("PART", "a part number in slides/ or a .ipynb path", _part, "1", help="make present's part"),
    # Other programs' variables the deck reads: any text (each is checked where it is used, e.g. a CXX
    # that is not on PATH is a backend problem `python -m demos info` reports, not a malformed setting)
    Setting("CXX", "a C++ compiler command", _text,
            help="the compiler Inductor runs as is (default g++, clang++ on macOS)"),
    Setting("JUPYTER_TOKEN", "a token", _text, empty_is_unset=False,
            help="make present's server token (unset: a random one; empty or short: refused by make present)"),
    Setting("XLA_FLAGS", "XLA's command-line flags", _text,
            help="XLA's own flags; the sharding demo's fresh process gets them with its host device count added"),
    Setting("XLA_PYTHON_CLIENT_PREALLOCATE", "a JAX flag", _text,
            help="JAX's GPU preallocation; demos sets it to false (make check says when it is not)"),
    Setting("ATEN_CPU_CAPABILITY", "default, avx2, avx512 (or another ISA torch knows)", _text,
            help="caps the vector ISA of torch's CPU kernels; part of the compile caches' fingerprint"),
    Setting("ONEDNN_MAX_CPU_ISA", "a oneDNN ISA name, e.g. AVX2", _text,
            help="caps oneDNN's ISA; part of the compile caches' fingerprint"),
    Setting("MKL_ENABLE_INSTRUCTIONS", "an MKL ISA name, e.g. AVX2", _text,
            help="caps MKL's ISA; part of the compile caches' fingerprint"),
    Setting("TORCHINDUCTOR_CPP_MARCH", "a -march value, e.g. haswell", _text,
            help="the -march Inductor compiles its C++ with (default native); part of the caches' fingerprint"),
    Setting("XDG_CACHE_HOME", "a folder", _text, help="where a user's caches go (default ~/.cache)"),
    Setting("DISPLAY", "an X display", _text, help="make present opens a browser only with a display"),
    Setting("WAYLAND_DISPLAY", "a Wayland display", _text, help="make present opens a browser only with a display"),
)}


def raw(name: str) -> str | None:
    """The setting's text, or None when unset or empty (empty is a value for a setting declared
    ``empty_is_unset=False``). Only a declared setting is read: declare a new one in SETTINGS."""
    s = SETTINGS[name]
    text = os.environ.get(name)
    if text is None or (s.empty_is_unset and not text.strip()):
        return None
    return text


def parse(name: str, text: str) -> Any:
    """``text`` parsed as setting ``name``; SettingError (one line) when it is not allowed."""
    s = SETTINGS[name]
    try:
        return s.parse(text)
    except SettingError:
        raise
    except (ValueError, TypeError, OSError):
        extra = f" (parts: {_part_numbers()})" if name == "PART" else ""
        raise SettingError(f"{name}={text!r}: must be {s.allowed}{extra}") from None


def get(name: str) -> Any:
    """The setting's value: parsed when set, its default when unset or empty."""
    text = raw(name)
    return SETTINGS[name].default if text is None else parse(name, text)


@contextlib.contextmanager
def temporarily(values: dict[str, str]) -> Iterator[None]:
    """Within the block, the environment has ``values`` (for this process and the children it
    starts); afterwards each variable is as it was, set or unset."""
    before = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def at_import(name: str) -> Any:
    """The setting's value for a module that reads it as it is imported, which must not fail:
    parsed, or its default when unset; a malformed value is taken as written, stripped (a
    command's first step, :func:`check_all`, names it in one line before any work)."""
    try:
        return get(name)
    except SettingError:
        return raw(name).strip()


def check_all(names: tuple[str, ...] | None = None) -> None:
    """Parse every setting that is set (or those named); raises SettingError for the first bad one.
    Commands call it before any work."""
    for name in names or tuple(SETTINGS):
        get(name)


def problems() -> list[str]:
    """One line per setting that does not parse (for `make check`)."""
    out = []
    for name in SETTINGS:
        try:
            get(name)
        except SettingError as exc:
            out.append(str(exc))
    return out
