"""The lecturer's notes: each slide's speaker notes rendered, for the notes window and the handout.

A part's speaker notes are its ``notes`` cells (docs/authoring.md). :func:`slides` lists a part's
slides the way RISE builds them (``slide`` starts a new one, ``subslide`` a vertical one under
it, ``notes`` goes to the slide it follows, ``skip`` is never shown), each with its title, its
notes rendered to HTML (:func:`render_markdown`: bold, code, lists, paragraphs joined as written)
and the live demos it calls.

The notes window (key ``t`` in the slideshow) is served by the presenter's Jupyter server, through
the server extension this module is (``--ServerApp.jpserver_extensions``, which ``make present``
and the hub's config pass): ``/jitdeck/notes/<part path>`` is the page, and
``/jitdeck/notes-data/<part path>`` its data, read from the notebook as it is on disk at each
request (a slide fixed in JupyterLab and saved shows its new notes). The slideshow tells the
window where it is through a small lab extension of the deck's own
(``assets/labextension/jitdeck-notes``), over a ``BroadcastChannel`` of the browser: the window asks
on opening and is told on every move, so it opens on the current slide wherever the deck is.

The answers to the slides' questions come from the lecturer's sheet (:mod:`demos.deck.quiz`, the
record's answer and `make warm`'s), computed once in a separate process (it imports the
topics, torch and JAX, which the server does not), and from the live panel on the current slide,
whose answer for this machine the lab extension reads out of the panel (``.jitdeck-lectern``,
never shown on the slide).
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from demos.engine.settings import PROJECT_ROOT

PAGE_DIR = PROJECT_ROOT / "assets" / "notes"
LABEXTENSIONS = PROJECT_ROOT / "assets" / "labextension"
URL = "jitdeck/notes"  # the page: URL/<part path>; its data: URL + "-data/<part path>"
# Markdown syntax the notes must never show as text once rendered (bold, code, a list's bullet)
RAW_MARKDOWN = re.compile(r"\*\*|`|__|^\s*[-*] ", re.M)


def render_markdown(source: str) -> str:
    """The notes' markdown as HTML, as the slides render it (nbconvert's mistune renderer: raw
    HTML such as ``<small>`` passes through, math stays for MathJax)."""
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    return markdown2html_mistune(source)


def _slide_type(cell) -> str:
    return cell.get("metadata", {}).get("slideshow", {}).get("slide_type", "-") or "-"


def slide_title(cells: list) -> str:
    """The first heading of a slide's shown cells, without markdown emphasis."""
    for c in cells:
        if c["cell_type"] == "markdown" and _slide_type(c) not in ("notes", "skip"):
            for line in c["source"].splitlines():
                m = re.match(r"\s*#{1,6}\s+(.*\S)", line)
                if m:
                    return re.sub(r"[*`]", "", m.group(1))
    return ""


def slides(nb) -> list[dict[str, Any]]:
    """A part's slides in presenting order, as RISE places them: ``h`` (a ``slide``) and ``v``
    (a ``subslide`` under it), the slide's number as the slideshow counts (from 1), its title,
    its notes (markdown, and rendered) and the live calls (``topic.name``) on it."""
    from demos.deck.nbtools import live_call

    out: list[dict[str, Any]] = []
    h, v = -1, 0
    for cell in nb["cells"]:
        kind = _slide_type(cell)
        if kind == "slide" or (kind == "subslide" and h < 0) or not out:
            h, v = h + 1, 0
            out.append({"h": h, "v": v, "cells": []})
        elif kind == "subslide":
            v += 1
            out.append({"h": h, "v": v, "cells": []})
        out[-1]["cells"].append(cell)
    result = []
    for n, s in enumerate(out, 1):
        cells = s.pop("cells")
        notes = "\n\n".join(c["source"].strip() for c in cells
                            if c["cell_type"] == "markdown" and _slide_type(c) == "notes" and c["source"].strip())
        live = [call[0] for c in cells if c["cell_type"] == "code" and _slide_type(c) not in ("skip", "notes")
                and (call := live_call(c["source"]))]
        result.append({**s, "number": n, "title": slide_title(cells), "notes": notes,
                       "notes_html": render_markdown(notes) if notes else "", "live": live})
    return result


def visible_text(html: str) -> str:
    """The text a rendered note shows (tags dropped, entities decoded), for checking it."""
    import html as html_mod

    return html_mod.unescape(re.sub(r"<[^>]+>", "", html))


# -- the answers: the lecturer's sheet, computed once per server ---------------------------
class Sheet:
    """The sheet's answers by demo (``python -m demos quiz --json --record-only``), run once in
    the background the first time the notes ask; ``get()`` is None until it is ready."""

    def __init__(self, python: str = sys.executable, root: Path = PROJECT_ROOT):
        self.python, self.root = python, root
        self._data: dict | None = None
        self._error: str | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _run(self) -> None:
        try:
            r = subprocess.run([self.python, "-m", "demos", "quiz", "--json", "--record-only"], cwd=str(self.root),
                               capture_output=True, text=True, timeout=600)
            if r.returncode != 0:
                raise RuntimeError((r.stderr.strip().splitlines() or ["no output"])[-1])
            self._data = {row["key"]: row for row in json.loads(r.stdout)}
        except Exception as exc:  # the notes still show; the answers say why they are missing
            self._error = f"the answer sheet could not be computed: {exc}"

    def get(self) -> tuple[dict | None, str | None]:
        """(answers by demo key, or None while computing; an error line, if it failed)."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True, name="jitdeck-notes-sheet")
                self._thread.start()
        return self._data, self._error


def notes_data(path: Path, sheet: Sheet | None = None) -> dict[str, Any]:
    """What the notes window shows for one part: its slides and the answers to its questions."""
    import nbformat

    nb = nbformat.read(str(path), as_version=4)
    answers, error = sheet.get() if sheet is not None else (None, None)
    shown = slides(nb)
    if answers is not None:
        for s in shown:
            s["questions"] = [answers[k] for k in s["live"] if k in answers]
    return {"title": nb.metadata.get("title", path.stem), "slides": shown, "answers_ready": answers is not None,
            "answers_error": error}


# -- the Jupyter server extension ---------------------------------------------------------
def _jupyter_server_extension_points():
    return [{"module": "demos.deck.notes"}]


def _load_jupyter_server_extension(serverapp) -> None:
    from jupyter_server.base.handlers import JupyterHandler
    from jupyter_server.utils import url_path_join
    from tornado import web

    root = Path(serverapp.root_dir).resolve()
    sheet = Sheet()

    def notebook(path: str) -> Path:
        p = (root / path).resolve()
        if not p.is_relative_to(root) or p.suffix != ".ipynb" or not p.is_file():
            raise web.HTTPError(404, f"no notebook {path}")
        return p

    class Page(JupyterHandler):
        @web.authenticated
        def get(self, path: str):
            notebook(path)
            self.set_header("Content-Type", "text/html; charset=utf-8")
            self.set_header("Cache-Control", "no-store")
            self.finish(page_html())

    class Data(JupyterHandler):
        @web.authenticated
        def get(self, path: str):
            try:
                data = notes_data(notebook(path), sheet)
            except web.HTTPError:
                raise
            except Exception as exc:  # a notebook being edited may not parse for a moment
                data = {"error": f"{path}: {exc}"}
            self.set_header("Content-Type", "application/json")
            self.set_header("Cache-Control", "no-store")
            self.finish(json.dumps(data))

    base = serverapp.web_app.settings["base_url"]
    serverapp.web_app.add_handlers(".*$", [
        (url_path_join(base, URL + "-data", r"(.+\.ipynb)"), Data),
        (url_path_join(base, URL, r"(.+\.ipynb)"), Page),
    ])


def page_html() -> str:
    """The notes page, with its script and style inline (one request, nothing remote)."""
    html = (PAGE_DIR / "notes.html").read_text(encoding="utf-8")
    return (html.replace("/*NOTES_CSS*/", (PAGE_DIR / "notes.css").read_text(encoding="utf-8"))
            .replace("/*NOTES_JS*/", (PAGE_DIR / "notes.js").read_text(encoding="utf-8")))


def server_args(root: Path = PROJECT_ROOT) -> list[str]:
    """What a Jupyter server serving the deck adds for the notes window: this extension, and the
    lab extension that tells it where the slideshow is (`make present`; the hub's config says the
    same for its checkout)."""
    ext = root / "assets" / "labextension"
    # both apps: RISE's page lists the extension, JupyterLab's handler serves its file (/lab/extensions/)
    return ["--ServerApp.jpserver_extensions={'demos.deck.notes': True}",
            f"--RiseApp.extra_labextensions_path={ext}", f"--LabApp.extra_labextensions_path={ext}"]
