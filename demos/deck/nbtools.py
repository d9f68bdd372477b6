"""Authoring and executing the RISE notebooks in slides/ (Jupyter packages imported lazily).

Authoring: a part is written as a list of cells built with :func:`slide`, :func:`sub`,
:func:`fragment`, :func:`code`, :func:`notes`, then :func:`write` stores it without outputs and
with the deck's RISE settings. Executing: :func:`execute` runs a notebook headless the way
exports and tests do (DEMOS_STATIC=1: live cells render their default figure as PNG).
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from demos.engine.env import PROJECT_ROOT

SLIDES_DIR = PROJECT_ROOT / "slides"

# One place for the slideshow settings every part shares (theme: assets/theme.css via
# slides/rise.css; 'white' fetches no web fonts).
RISE_SETTINGS: dict[str, Any] = {
    "theme": "white",
    "transition": "none",
    "width": 1280,
    "height": 720,
    "margin": 0.04,
    "scroll": False,
    "enable_chalkboard": False,
    "slideNumber": "c/t",
    "progress": True,
    "center": False,
    "autolaunch": True,
}


def _cell(kind: str, source: str, slide_type: str | None, **meta: Any):
    import nbformat.v4 as v4

    source = source.strip("\n")
    cell = v4.new_markdown_cell(source) if kind == "markdown" else v4.new_code_cell(source)
    if slide_type:
        cell.metadata["slideshow"] = {"slide_type": slide_type}
    cell.metadata.update(meta)
    return cell


def slide(markdown: str, **meta: Any):
    """A new horizontal slide (markdown)."""
    return _cell("markdown", markdown, "slide", **meta)


def sub(markdown: str, **meta: Any):
    """A new vertical sub-slide (markdown)."""
    return _cell("markdown", markdown, "subslide", **meta)


def fragment(markdown: str, **meta: Any):
    return _cell("markdown", markdown, "fragment", **meta)


def md(markdown: str, **meta: Any):
    """Markdown that continues the current slide."""
    return _cell("markdown", markdown, "-", **meta)


def code(source: str, slide_type: str = "-", **meta: Any):
    """A code cell on the current slide (use slide_type='slide' to start a new one)."""
    return _cell("code", source, slide_type, **meta)


def setup(source: str):
    """A code cell skipped by the slideshow (imports), but executed."""
    return _cell("code", source, "skip")


def notes(markdown: str):
    """Speaker notes for the current slide."""
    return _cell("markdown", markdown, "notes")


def write(path: str | Path, cells: list, title: str) -> Path:
    import nbformat
    import nbformat.v4 as v4

    nb = v4.new_notebook()
    nb.cells = cells
    nb.metadata.update({
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
        "rise": dict(RISE_SETTINGS),
        "title": title,
    })
    strip_outputs(nb)
    path = Path(path)
    nbformat.write(nb, path)
    return path


def strip_outputs(nb) -> Any:
    for c in nb.cells:
        if c.cell_type == "code":
            c.outputs = []
            c.execution_count = None
        c.metadata.pop("execution", None)
    return nb


def parts() -> list[Path]:
    """The deck's parts in presenting order."""
    return sorted(SLIDES_DIR.glob("[0-9][0-9]_*.ipynb"))


def execute(path: str | Path, timeout: int = 900, static: bool = True, cwd: str | Path | None = None,
            env: dict[str, str] | None = None, store_widget_state: bool = True):
    """Execute a notebook headless; returns (notebook, seconds). Raises on cell errors."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(str(path), as_version=4)
    old = {k: os.environ.get(k) for k in ("DEMOS_STATIC", *(env or {}))}
    if static:
        os.environ["DEMOS_STATIC"] = "1"
    for k, v in (env or {}).items():
        os.environ[k] = v
    t0 = time.perf_counter()
    try:
        client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                                resources={"metadata": {"path": str(cwd or Path(path).parent)}},
                                store_widget_state=store_widget_state)
        client.execute()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return nb, time.perf_counter() - t0


def slide_count(nb) -> int:
    """Pages a slide-per-page export has: slides plus sub-slides (the first cell opens one)."""
    n = 0
    for i, c in enumerate(nb.cells):
        st = c.get("metadata", {}).get("slideshow", {}).get("slide_type", "-")
        if st in ("slide", "subslide") or (i == 0 and st not in ("skip", "notes")):
            n += 1
    return n
