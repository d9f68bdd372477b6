"""Serving exported slides on loopback and printing them to PDF in Debian's headless chromium
(driven by Playwright, no browser download); counting and joining PDF pages with poppler."""
from __future__ import annotations

import contextlib
import functools
import http.server
import re
import shutil
import subprocess
import threading
from pathlib import Path

from demos.engine.errors import DemoError
from demos.engine.settings import at_import

# read at import (checked, with every setting, by demos.engine.settings before a command's work)
CHROMIUM = str(at_import("DEMOS_CHROMIUM") or "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage",
]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # noqa: D401 - silence
        pass


@contextlib.contextmanager
def serve(directory: Path, host: str = "127.0.0.1"):
    """A static file server on localhost for the export (yields its base URL)."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    httpd = http.server.ThreadingHTTPServer((host, 0), handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://{host}:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()
        t.join(timeout=5)


def chromium_path() -> str:
    if Path(CHROMIUM).exists():
        return CHROMIUM
    found = shutil.which("chromium")
    if found:
        return found
    raise DemoError(f"Debian's chromium is not installed ({CHROMIUM}): apt-get install chromium")


@contextlib.contextmanager
def browser():
    """Headless Debian chromium via Playwright for Python (no downloaded browsers)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        raise DemoError("Playwright for Python is missing: pip install -e '.[dev]'") from exc
    import tempfile

    exe = chromium_path()
    with tempfile.TemporaryDirectory(prefix="deck-chromium-") as profile, sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(profile, executable_path=exe, headless=True,
                                                    args=CHROMIUM_ARGS, viewport={"width": 1280, "height": 720})
        try:
            yield ctx
        finally:
            ctx.close()


def print_pdf(ctx, url: str, pdf_path: Path, width: int = 1280, height: int = 720,
              timeout_ms: int = 120_000, requests: list | None = None) -> Path:
    """Open the reveal print view and print it, one page per slide."""
    page = ctx.new_page()
    if requests is not None:
        page.on("request", lambda r: requests.append(r.url))
    try:
        sep = "&" if "?" in url else "?"
        page.goto(url + sep + "print-pdf", wait_until="load", timeout=timeout_ms)
        page.wait_for_function("window.__deckReady === true", timeout=timeout_ms)
        page.evaluate("document.fonts.ready.then(() => true)")
        page.wait_for_function("[...document.images].every(i => i.complete)", timeout=timeout_ms)
        page.pdf(path=str(pdf_path), width=f"{width}px", height=f"{height}px", print_background=True,
                 prefer_css_page_size=True, margin={"top": "0", "bottom": "0", "left": "0", "right": "0"})
    finally:
        page.close()
    return pdf_path


def pdf_pages(path: Path) -> int:
    out = subprocess.run(["pdfinfo", str(path)], capture_output=True, text=True, check=True).stdout
    m = re.search(r"^Pages:\s+(\d+)", out, re.M)
    return int(m.group(1)) if m else 0


def unite(pdfs: list[Path], out: Path) -> Path:
    if not shutil.which("pdfunite"):
        raise DemoError("pdfunite is missing (apt-get install poppler-utils)")
    if len(pdfs) == 1:
        shutil.copy2(pdfs[0], out)
    else:
        subprocess.run(["pdfunite", *map(str, pdfs), str(out)], check=True)
    return out


_LOADED = re.compile(r"""(?:\bsrc\s*=\s*|<link\b[^>]*?\bhref\s*=\s*|@import\s+(?:url\()?|\bimport\s+[\w{}\s,*]*from\s+)["']?(?:https?:)?//([^"'/)\s]+)""",
                     re.I)


def remote_urls(html: str) -> list[str]:
    """Hosts other than localhost the page would load something from (scripts, images, style
    sheets, module imports). Plain <a href> links to the web are citations, not requests."""
    hosts = []
    for m in _LOADED.finditer(html):
        host = m.group(1).split(":")[0]
        if host not in ("localhost", "127.0.0.1") and host not in hosts:
            hosts.append(host)
    return hosts
