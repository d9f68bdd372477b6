"""Authoring and executing the RISE notebooks in slides/ (Jupyter packages imported lazily).

The notebooks in slides/ are the one source of the slides: lecturers edit them in JupyterLab.
:func:`clean` is their stored form (no outputs, no session metadata, the deck's RISE
settings), applied on every save by :func:`pre_save_hook` while presenting and by
`make clean-slides`; :func:`problems` checks a part against docs/authoring.md. Executing: :func:`execute` runs a notebook headless the way
exports and tests do (DEMOS_STATIC=1: live cells render their default figure as PNG).
"""
from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from demos.engine.settings import PROJECT_ROOT

SLIDES_DIR = PROJECT_ROOT / "slides"

# One place for the slideshow settings every part shares (theme: assets/theme.css via
# slides/rise.css; 'white' fetches no web fonts).
RISE_SETTINGS: dict[str, Any] = {
    "theme": "white",
    "transition": "none",
    # the slide is the window, as RISE's own default: with a pixel size (1280×720) reveal.js scales
    # the slide up on a larger window while RISE's page keeps the slides' box at the window's size,
    # so on a 1920×1080 projector the content was drawn 1.44× and cut off at every edge. The exported
    # HTML and PDF lay out a 1280×720 slide (plots.SLIDE_PX, this margin) and scale it.
    "width": "100%",
    "height": "100%",
    "margin": 0.04,
    "scroll": False,
    "enable_chalkboard": False,
    "slideNumber": "c/t",
    "progress": True,
    "center": False,
    # False: jupyterlab_rise's autolaunch acts only in JupyterLab, where opening a part saves it
    # first (a "File Save Error" on a hub's read-only repository), opens a preview beside it and
    # asks for full screen; the slideshow page (rise/<path>, `make present`) opens as a slideshow
    # either way
    "autolaunch": False,
}


# Cell metadata a slide keeps; everything else (execution timings, collapsed/scrolled state,
# trust) is session state that JupyterLab writes and git must not see.
CELL_METADATA = ("slideshow", "tags")
NOTEBOOK_METADATA = {
    "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
    "language_info": {"name": "python"},
}


def clean(nb) -> Any:
    """The stored form of a slide notebook: no outputs or execution counts, no session metadata
    (kernel versions, widget state), the deck's RISE settings. Idempotent."""
    for c in nb["cells"]:
        if c["cell_type"] == "code":
            c["outputs"] = []
            c["execution_count"] = None
        meta = c.get("metadata", {})
        c["metadata"] = {k: meta[k] for k in CELL_METADATA if k in meta}
    meta = nb.setdefault("metadata", {})
    for k in list(meta):
        if k not in ("rise", "title"):
            del meta[k]
    meta.update({k: dict(v) for k, v in NOTEBOOK_METADATA.items()})
    meta["rise"] = dict(RISE_SETTINGS)
    return nb


def pre_save_hook(model: dict, path: str = "", **_kw: Any) -> None:
    """Jupyter's ContentsManager.pre_save_hook (set by `make present`): a slide saved from
    JupyterLab or by autosave while presenting is stored clean, so presenting leaves git clean
    and a lecturer's edits keep `make test` green."""
    if model.get("type") == "notebook" and isinstance(model.get("content"), dict) \
            and Path(path).parts[:1] == ("slides",):
        clean(model["content"])


def write(nb, path: str | Path) -> Path:
    """Store a notebook in its clean form (what `make test` checks)."""
    import nbformat

    path = Path(path)
    nbformat.write(nbformat.from_dict(clean(nb)), str(path))
    return path


def _slide_type(cell) -> str:
    return cell.get("metadata", {}).get("slideshow", {}).get("slide_type", "-")


def slide_groups(nb) -> list[list]:
    """The cells of each slide or sub-slide, in order."""
    groups, current = [], []
    for c in nb["cells"]:
        if _slide_type(c) in ("slide", "subslide") and current:
            groups.append(current)
            current = []
        current.append(c)
    if current:
        groups.append(current)
    return groups


_IMPORT = re.compile(r"^from demos\.topics import (\w+)$")
_CALL = re.compile(r"^(\w+)\.\w+\(.*\)$")


def live_call(source: str) -> tuple[str, dict[str, Any]] | None:
    """A live cell's call (``from demos.topics import X`` then ``X.name(...)``): ``topic.name`` and
    the keyword values it starts the panel at (written as literals); None for any other cell."""
    import ast

    lines = [ln.strip() for ln in source.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    if len(lines) != 2 or not _IMPORT.match(lines[0]) or not _CALL.match(lines[1]):
        return None
    try:
        call = ast.parse(lines[1]).body[0].value
        values = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    except (SyntaxError, ValueError, AttributeError):
        values = {}
    return lines[1].split("(", 1)[0], values


def live_cells(nb) -> list[tuple[str, dict[str, Any]]]:
    """:func:`live_call` of each live cell, in order."""
    return [call for c in nb["cells"] if c["cell_type"] == "code" and (call := live_call(c["source"]))]


def live_calls(nb) -> list[str]:
    """``topic.name`` of each live cell's call."""
    return [key for key, _ in live_cells(nb)]


def problems(nb, name: str = "") -> list[str]:
    """What a part breaks of docs/authoring.md, as readable lines (empty: fine). The lint that lets
    the notebook itself be the one source of its slides."""
    out = []
    where = f"{name}: " if name else ""
    cells = nb["cells"]
    if nb.get("metadata", {}).get("rise") != RISE_SETTINGS:
        out.append(where + "RISE settings differ from the deck's (demos.deck.nbtools.RISE_SETTINGS)")
    if not cells or cells[0]["cell_type"] != "markdown" or not cells[0]["source"].lstrip().startswith("#"):
        out.append(where + "the first cell must be the title slide (a markdown heading)")
    for i, c in enumerate(cells):
        src = c["source"]
        if c["cell_type"] == "code":
            if c.get("outputs") or c.get("execution_count") is not None:
                out.append(where + f"cell {i} is stored with outputs (`make clean-slides` strips them)")
            lines = [ln.strip() for ln in src.splitlines() if ln.strip() and not ln.strip().startswith("#")]
            if _slide_type(c) in ("skip", "notes"):
                out.append(where + f"cell {i}: a code cell the slideshow skips (RISE never runs it): {src[:60]!r}")
            elif len(lines) != 2 or not _IMPORT.match(lines[0]) or not _CALL.match(lines[1]) \
                    or _CALL.match(lines[1]).group(1) != _IMPORT.match(lines[0]).group(1):
                out.append(where + f"cell {i}: a live cell is `from demos.topics import X` then one call "
                           f"`X.demo(...)`, not {src[:80]!r}")
    for g in slide_groups(nb):
        live = [c for c in g if c["cell_type"] == "code"]
        if live and not any(_slide_type(c) == "notes" for c in g):
            out.append(where + f"a live slide without speaker notes ({live[0]['source'].splitlines()[-1]})")
    text = "\n".join(c["source"] for c in cells if c["cell_type"] == "markdown").lower()
    for word, what in (("agenda", "an agenda slide"), ("remember", "a 'what to remember' slide")):
        if word not in text:
            out.append(where + f"no {what}")
    return out


def parts() -> list[Path]:
    """The deck's parts in presenting order."""
    return sorted(SLIDES_DIR.glob("[0-9][0-9]_*.ipynb"))


POLL_SLICE_S = 0.5


def _sliced(get_msg, slice_s: float = POLL_SLICE_S):
    """A channel's ``get_msg`` that polls in short slices up to its timeout.

    Headless execution with live widgets stalled: a message the kernel had sent sat unseen until
    the cell's whole timeout ran out (or forever on the iopub channel, which nbclient polls with
    no timeout), then arrived. pyzmq's asyncio poll on the edge-triggered zmq FD can miss a
    wake-up and only find the message when its timeout fires (pyzmq #1558, #2173); the many
    comm messages of a widget cell make that likely. Polling in slices re-checks the socket every
    ``slice_s`` seconds, so a missed wake-up costs half a second, not the cell's timeout."""
    from queue import Empty

    async def get(timeout: float | None = None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            wait = slice_s if deadline is None else max(0.0, min(slice_s, deadline - time.monotonic()))
            try:
                return await get_msg(timeout=wait)
            except Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise

    return get


def kernel_env(static: bool, env: dict[str, str] | None) -> dict[str, str]:
    """The environment a headless kernel starts with: static figures (DEMOS_STATIC) and ``env``."""
    return {**({"DEMOS_STATIC": "1"} if static else {}), **(env or {})}


class OneKernel:
    """One kernel that executes several notebooks in turn (``execute(..., kernel=k)``), as
    ``make pdf`` executes the parts: the kernel's start, the imports and the compiler's warm-up
    are paid once, not once per part. Each notebook after the first starts from an empty
    namespace (``%reset -f``, its prompts from 1 again), so a cell still has to import what it
    calls. What stays is what imports and compiles leave in the process (modules, compiled code);
    a demo measures from its declared state whatever ran before it (tests/test_ordering.py).
    Use it as a context manager: the kernel is shut down at the end."""

    def __init__(self, static: bool = True, env: dict[str, str] | None = None):
        self.env = kernel_env(static, env)
        self.km: Any = None
        self.kc: Any = None

    def __enter__(self) -> "OneKernel":
        return self

    def __exit__(self, *_exc) -> None:
        self.close()

    def alive(self) -> bool:
        from jupyter_core.utils import run_sync

        return self.km is not None and bool(run_sync(self.km.is_alive)())

    def close(self) -> None:
        from jupyter_core.utils import run_sync

        if self.kc is not None:
            self.kc.stop_channels()
        if self.km is not None and self.km.has_kernel:
            run_sync(self.km.shutdown_kernel)(now=True)
        self.km = self.kc = None


_RESET = "get_ipython().run_line_magic('reset', '-f'); get_ipython().execution_count = 1"


def execute(path: str | Path, timeout: int = 900, static: bool = True, cwd: str | Path | None = None,
            env: dict[str, str] | None = None, store_widget_state: bool = True, kernel: OneKernel | None = None):
    """Execute a notebook headless; returns (notebook, seconds). Raises on cell errors. With
    ``kernel``, in that kernel (started by the first notebook, with the kernel's environment)."""
    import nbformat
    from jupyter_core.utils import run_sync
    from nbclient import NotebookClient

    from demos.engine.settings import temporarily

    nb = nbformat.read(str(path), as_version=4)
    t0 = time.perf_counter()
    wanted = kernel_env(static, env)
    if kernel is not None and wanted != kernel.env:
        raise ValueError(f"this kernel runs with {kernel.env}, not {wanted}")
    if kernel is not None and kernel.km is not None and not kernel.alive():
        kernel.close()  # it died in an earlier notebook: this one starts a new one
    reuse = kernel is not None and kernel.km is not None
    with temporarily(wanted):
        client = NotebookClient(nb, timeout=timeout, kernel_name="python3", km=kernel.km if reuse else None,
                                resources={"metadata": {"path": str(cwd or Path(path).parent)}},
                                store_widget_state=store_widget_state)

        def patch_channels(**_kw) -> None:  # once per kernel client
            for channel in (client.kc.shell_channel, client.kc.iopub_channel):
                channel.get_msg = _sliced(channel.get_msg)

        client.on_notebook_start = patch_channels
        if reuse:
            client.kc = kernel.kc

            async def fresh_namespace() -> None:
                await client.async_wait_for_reply(client.kc.execute(_RESET, silent=True, store_history=False))

            run_sync(fresh_namespace)()
        try:
            client.execute(**({"cleanup_kc": False} if kernel is not None else {}))
        finally:
            if kernel is not None:
                kernel.km, kernel.kc = client.km, client.kc
    return nb, time.perf_counter() - t0


# What a script asks the kernel after a part's cells: wait for the panels' turns, then how each ended.
_TURNS_DONE = "from demos.deck.turns import TURNS as _t; print(_t.wait(timeout_s={s}))"
_PANELS = ("import json as _j; from demos.deck.turns import TURNS as _t; print(_j.dumps([{'demo': p.demo.key, "
           "'renders': p.renders, 'error': p.last_error} for p in _t.panels]))")


def live_run(path: str | Path, cell_timeout_s: int = 30, wait_s: float | None = 600.0) -> dict[str, Any]:
    """Execute a part live (widgets on, no DEMOS_STATIC) with plain nbclient, as a student's other
    client runs it (``jupyter execute``, VS Code, a grader), with no front end and none of
    :func:`execute`'s care (its channels polled as nbclient polls them). Returns the seconds each
    code cell took to return (a cell past ``cell_timeout_s`` is recorded as None); then, unless
    ``wait_s`` is None, waits up to ``wait_s`` for the panels' turns (in 5 s cells) and reads how
    each panel ended (``renders``, ``error``)."""
    import json

    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError

    from demos.engine.settings import temporarily

    nb = nbformat.read(str(path), as_version=4)
    cells: list[dict[str, Any]] = []
    out: dict[str, Any] = {"cells": cells, "panels": None, "done_s": None}
    t0 = time.perf_counter()
    with temporarily(kernel_env(False, None)):
        client = NotebookClient(nb, timeout=cell_timeout_s, kernel_name="python3",
                                resources={"metadata": {"path": str(Path(path).parent)}})
        with client.setup_kernel():
            for i, cell in enumerate(nb.cells):
                if cell.cell_type != "code":
                    continue
                t = time.perf_counter()
                try:
                    client.execute_cell(cell, i)
                    seconds = time.perf_counter() - t
                except CellTimeoutError:
                    seconds = None
                cells.append({"cell": cell.source.strip().splitlines()[-1], "seconds": seconds})
            if wait_s is None:
                return out

            def ask(code: str) -> str:
                probe = nbformat.v4.new_code_cell(code)
                client.execute_cell(probe, 0)
                return "".join(o.get("text", "") for o in probe.outputs).strip()

            while time.perf_counter() - t0 < wait_s and ask(_TURNS_DONE.format(s=5)) != "True":
                pass
            out["done_s"] = time.perf_counter() - t0
            out["panels"] = json.loads(ask(_PANELS) or "[]")
    return out


def slide_count(nb) -> int:
    """Pages a slide-per-page export has: slides plus sub-slides (the first cell opens one)."""
    n = 0
    for i, c in enumerate(nb.cells):
        st = c.get("metadata", {}).get("slideshow", {}).get("slide_type", "-")
        if st in ("slide", "subslide") or (i == 0 and st not in ("skip", "notes")):
            n += 1
    return n


def main(argv: list[str] | None = None) -> int:
    """``python -m demos.deck.nbtools clean|lint``: store every part clean, or list what breaks docs/authoring.md."""
    from demos.engine.entry import Parser, guarded

    ap = Parser(prog="python -m demos.deck.nbtools")
    ap.add_argument("action", choices=["clean", "lint"])
    args = ap.parse_args(argv)
    return guarded("slides", lambda: _tidy(args.action))


def _tidy(action: str) -> int:
    import nbformat

    from demos.deck import glossary

    found, read = [], []
    for path in parts():
        nb = nbformat.read(str(path), as_version=4)
        if action == "clean":
            before = path.read_bytes()
            write(nb, path)
            if path.read_bytes() != before:
                print(f"cleaned {path.relative_to(PROJECT_ROOT)}")
        else:
            found += problems(nb, path.name)
            read.append((path.name, nb))
    if action == "lint":
        found += glossary.problems(read)  # every term defined on the first slide that uses it
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
