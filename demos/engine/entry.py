"""How every command starts and ends: one line for bad input (exit 2), never a traceback.

Each command-line entry point (``python -m demos …``, the export, the presenter, the walk, the
slide tools) builds its arguments with :class:`Parser` and runs its body through :func:`guarded`:

- the environment settings are parsed first (:func:`demos.engine.settings.check_all`), before
  any slow work;
- a :class:`~demos.engine.errors.DemoError` (bad input: a value, a path, a setting) prints
  ``prog: message`` and exits 2;
- Ctrl-C prints ``prog: interrupted`` and exits 130;
- anything else prints ``prog: unexpected error: …`` in one line and exits 1 (``DEMOS_DEBUG=1``
  prints the traceback too).
"""
from __future__ import annotations

import argparse
import sys
import traceback
from typing import Callable

from demos.engine.errors import DemoError, one_line

BAD_INPUT = 2
INTERRUPTED = 130


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (and exit 2) instead of the usage block."""

    def error(self, message: str):  # noqa: D401 - argparse's hook
        print(f"{self.prog}: {message} (see --help)", file=sys.stderr)
        raise SystemExit(BAD_INPUT)


def guarded(prog: str, body: Callable[[], int], settings: bool = True) -> int:
    """Run a command's body: see the module docstring."""
    try:
        if settings:
            from demos.engine.settings import check_all

            check_all()
        return int(body() or 0)
    except DemoError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return BAD_INPUT
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return INTERRUPTED
    except Exception as exc:
        if _debug():
            traceback.print_exc()
        print(f"{prog}: unexpected error: {one_line(exc)} (DEMOS_DEBUG=1 shows the traceback)", file=sys.stderr)
        return 1


def parts_command(argv: list[str] | None, prog: str, doc: str | None, name: str, default_out: str,
                  what: str, body: Callable[[argparse.Namespace], int]) -> int:
    """The command line of a tool that works through the deck's parts (the walk, the JupyterLab
    run, the hub sizing): ``--parts`` (comma-separated numbers; default all) and ``--out`` (where
    ``what`` goes), then ``body(args)`` under :func:`guarded`."""
    ap = Parser(prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parts", help="comma-separated part numbers (default: all)")
    ap.add_argument("--out", default=default_out, help=f"where {what} go (default {default_out})")
    args = ap.parse_args(argv)
    return guarded(name, lambda: body(args))


def _debug() -> bool:
    from demos.engine.settings import SettingError, get

    try:
        return bool(get("DEMOS_DEBUG"))
    except SettingError:  # a malformed value shows no traceback (the setting is named before any work)
        return False


def number_list(text: str, what: str) -> list[int]:
    """``"1,3"`` → [1, 3]; anything else one line naming ``what``."""
    items = [t.strip() for t in str(text).split(",")]
    if not any(items):
        raise DemoError(f"{what} {text!r}: give comma-separated numbers, e.g. 1,3")
    out = []
    for t in items:
        if not t:
            continue
        try:
            out.append(int(t, 10))
        except ValueError:
            raise DemoError(f"{what} {text!r}: {t!r} is not a number; give comma-separated numbers, e.g. 1,3") from None
    return out


def name_list(text: str | None, valid, what: str) -> list[str] | None:
    """``"a,b"`` → ['a', 'b'], each checked against ``valid``; None when not given. An empty or
    all-comma list is refused (it never means "all")."""
    if text is None:
        return None
    from demos.engine.errors import unknown_name

    items = [t.strip() for t in str(text).split(",") if t.strip()]
    if not items:
        raise DemoError(f"{what} {text!r}: an empty list; name at least one ({', '.join(valid)})")
    for t in items:
        if t not in valid:
            raise unknown_name(what, t, valid)
    return items
