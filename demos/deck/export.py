"""``make html`` / ``make pdf``: the deck as offline reveal.js slides and as PDFs.

    python -m demos.deck.export html [--results FILE] [--parts 1,3] [--out build/html]
    python -m demos.deck.export pdf  [--results FILE] [--parts 1,3] [--out build/pdf]

Pipeline, per part: execute headless (nbclient, DEMOS_STATIC=1: every live cell renders its
default figure as a PNG; with ``--results`` / RESULTS= the figures draw that recorded run instead
of measuring; the parts one after another in one kernel, each from an empty namespace,
:class:`demos.deck.nbtools.OneKernel`) → nbconvert's reveal template, every URL pointed at local copies of reveal.js,
require.js, jQuery, MathJax 2 and the widget manager (npm packages copied into
``build/html/_assets/``; nothing is fetched when the slides are opened) → for PDF, Debian's
headless chromium driven by Playwright for Python on reveal.js's ``?print-pdf`` view (one page
per slide and sub-slide, fragments not split) → ``pdfunite`` for the whole lecture. Beside it,
the lecturer's handout (:mod:`demos.deck.handout`): each slide PDF page pictured with its notes
and its question's answers, ``jit-lecture-notes.pdf``.

Executed notebooks are cached in ``build/executed/`` (keyed on the notebook, demos/ and the
results file), so ``make pdf`` after ``make html`` does not execute the parts again. A caller that
has executed a part already (the tests: one headless execution per part and session, shared by the
notebook, export and figure tests) hands it to :func:`build_html` / :func:`build_pdf` as
``executed`` and it is converted as it is.
"""
from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Mapping

from demos.deck.demo import WARMED_DIR
from demos.deck.nbtools import OneKernel
from demos.deck.notes import slide_title
from demos.engine.env import package_digest
from demos.engine.errors import DemoError
from demos.engine.settings import PROJECT_ROOT, at_import
from demos.deck.printing import browser, pdf_pages, print_pdf, remote_urls, serve, unite

# read at import (checked, with every setting, by demos.engine.settings before a command's work)
BUILD = Path(at_import("DEMOS_BUILD_DIR") or PROJECT_ROOT / "build")
NODE_MODULES = PROJECT_ROOT / "node_modules"
THEME = PROJECT_ROOT / "assets" / "theme.css"
ASSETS_DIR = "_assets"

# What is copied out of node_modules (source, destination inside _assets/).
_ASSET_FILES = [
    ("reveal.js/dist", "reveal.js/dist"),
    ("reveal.js/plugin/notes", "reveal.js/plugin/notes"),
    ("requirejs/require.js", "require.js"),
    ("jquery/dist/jquery.min.js", "jquery.min.js"),
    ("@jupyter-widgets/html-manager/dist", "html-manager"),
    ("mathjax/MathJax.js", "mathjax/MathJax.js"),
    ("mathjax/config", "mathjax/config"),
    ("mathjax/extensions", "mathjax/extensions"),
    ("mathjax/jax/element", "mathjax/jax/element"),
    ("mathjax/jax/input/TeX", "mathjax/jax/input/TeX"),
    ("mathjax/jax/output/CommonHTML", "mathjax/jax/output/CommonHTML"),
    ("mathjax/fonts/HTML-CSS/TeX/woff", "mathjax/fonts/HTML-CSS/TeX/woff"),
    ("mathjax/localization/en", "mathjax/localization/en"),
]

TEMPLATE = r"""{%- extends 'reveal/index.html.j2' -%}
{#- The deck's reveal template: everything local, slides 1280×720, one PDF page per slide. -#}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block html_head_css -%}
<link rel="stylesheet" href="__ASSETS__/theme.css">
{%- endblock html_head_css -%}
{% block footer_js %}
<script>
window.__deckReady = false;
require(
    { waitSeconds: 60 },
    ["__ASSETS__/reveal.js/dist/reveal.js", "__ASSETS__/reveal.js/plugin/notes/notes.js"],
    function (Reveal, RevealNotes) {
        window.Reveal = Reveal;
        Reveal.initialize({
            controls: true, progress: true, history: true, hash: true,
            transition: "none", slideNumber: "c/t", center: false,
            width: __WIDTH__, height: __HEIGHT__, margin: __MARGIN__,
            pdfSeparateFragments: false, pdfMaxPagesPerSlide: 1, showNotes: false,
            plugins: [RevealNotes]
        }).then(function () {
            function done() { window.__deckReady = true; }
            if (window.MathJax && MathJax.Hub) { MathJax.Hub.Queue(done); } else { done(); }
        });
        Reveal.on("slidechanged", function () {
            if (window.MathJax && MathJax.Hub && MathJax.Hub.getAllJax(Reveal.getCurrentSlide())) {
                MathJax.Hub.Rerender(Reveal.getCurrentSlide());
            }
        });
    }
);
</script>
{% endblock footer_js %}
"""


def log(msg: str) -> None:
    print(msg, flush=True)


# -- assets -----------------------------------------------------------------------------
def npm_install(quiet: bool = True) -> None:
    """Install the pinned browser packages (package-lock.json) into node_modules/."""
    if not shutil.which("npm"):
        raise DemoError("npm is not installed (apt-get install npm): it fetches reveal.js, require.js, "
                        "MathJax and the widget manager once, at build time")
    cmd = ["npm", "ci" if (PROJECT_ROOT / "package-lock.json").exists() else "install",
           "--no-audit", "--no-fund", "--ignore-scripts"]
    if quiet:
        cmd.append("--silent")
    subprocess.run(cmd, cwd=PROJECT_ROOT, check=True)


def assets_ready() -> bool:
    return all((NODE_MODULES / src).exists() for src, _ in _ASSET_FILES)


def copy_assets(out: Path) -> Path:
    """Copy reveal.js & co. from node_modules into out/_assets (installing them if needed)."""
    if not assets_ready():
        log("installing the offline browser assets (npm ci)…")
        npm_install()
    dest = out / ASSETS_DIR
    stamp = dest / ".stamp"
    lock = PROJECT_ROOT / "package-lock.json"
    key = hashlib.sha256((lock.read_bytes() if lock.exists() else b"") + THEME.read_bytes()).hexdigest()
    if not (stamp.exists() and stamp.read_text() == key):
        if dest.exists():
            shutil.rmtree(dest)
        for src, dst in _ASSET_FILES:
            s, d = NODE_MODULES / src, dest / dst
            d.parent.mkdir(parents=True, exist_ok=True)
            if s.is_dir():
                shutil.copytree(s, d, ignore=shutil.ignore_patterns("*.map", "*.md"))
            else:
                shutil.copy2(s, d)
        shutil.copy2(THEME, dest / "theme.css")
        stamp.write_text(key)
    return dest


# -- executing --------------------------------------------------------------------------
def _digest(nb_path: Path, results: Path | None) -> str:
    """What an executed part depends on: the notebook, every module of the package, the results
    `make warm` stored for the panels that open on them, and the recorded run drawn."""
    h = hashlib.sha256(nb_path.read_bytes())
    h.update(package_digest(with_versions=True).encode())
    for p in sorted(WARMED_DIR.glob("*.json")):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    if results:
        h.update(str(results.resolve()).encode())
        for f in sorted(results.glob("*.json")) if results.is_dir() else [results]:
            h.update(f.name.encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:20]


def execute_part(nb_path: Path, results: Path | None = None, cache_dir: Path | None = None,
                 timeout: int = 1800, force: bool = False, kernel: OneKernel | None = None):
    """Execute one part headless (static figures; a recorded run if ``results``), in ``kernel``
    when given (:func:`part_kernel`). Returns (nb, seconds, cached)."""
    import nbformat

    from demos.deck.nbtools import execute

    cache_dir = cache_dir or (BUILD / "executed")
    cache_dir.mkdir(parents=True, exist_ok=True)
    cached = cache_dir / nb_path.name
    meta = cache_dir / (nb_path.stem + ".json")
    key = _digest(nb_path, results)
    if not force and cached.exists() and meta.exists():
        info = json.loads(meta.read_text())
        if info.get("key") == key:
            return nbformat.read(str(cached), as_version=4), info.get("seconds", 0.0), True
    if not results:
        os.environ.pop("DEMOS_RESULTS", None)
    nb, secs = execute(nb_path, timeout=timeout, static=True, cwd=nb_path.parent, env=_results_env(results),
                       kernel=kernel)
    nbformat.write(nb, str(cached))
    meta.write_text(json.dumps({"key": key, "seconds": round(secs, 1), "results": str(results or "")}))
    return nb, secs, False


def _results_env(results: Path | None) -> dict[str, str]:
    return {"DEMOS_RESULTS": str(results.resolve())} if results else {}


def part_kernel(results: Path | None = None) -> OneKernel:
    """The one kernel an export executes its parts in, one after another (static figures; a
    recorded run if ``results``)."""
    return OneKernel(static=True, env=_results_env(results))


# -- converting -------------------------------------------------------------------------
def _template_dir(assets_url: str, width: int, height: int, margin: float) -> Path:
    tdir = BUILD / "_templates"
    deck = tdir / "deck"
    deck.mkdir(parents=True, exist_ok=True)
    text = (TEMPLATE.replace("__ASSETS__", assets_url).replace("__WIDTH__", str(width))
            .replace("__HEIGHT__", str(height)).replace("__MARGIN__", str(margin)))
    (deck / "index.html.j2").write_text(text)
    (deck / "conf.json").write_text(json.dumps({"base_template": "reveal", "mimetypes": {"text/html": True}}))
    return tdir


def local_links(html: str) -> str:
    """Links between parts: NN_name.ipynb → NN_name.slides.html (the export's file names)."""
    return re.sub(r'href="(\d\d_[A-Za-z0-9_\-]+)\.ipynb(#[^"]*)?"',
                  lambda m: f'href="{m.group(1)}.slides.html{m.group(2) or ""}"', html)


def to_slides_html(nb, out_dir: Path, name: str) -> Path:
    """nbconvert's reveal exporter with every URL pointing into out_dir/_assets."""
    from nbconvert import SlidesExporter

    rise = dict(nb.metadata.get("rise", {}))
    from demos.engine.plots import SLIDE_PX

    width, height = SLIDE_PX  # the slideshow's slide is the window; an export's is this, scaled to the page
    margin = float(rise.get("margin", 0.04))
    a = ASSETS_DIR
    exporter = SlidesExporter(
        template_name="deck",
        extra_template_basedirs=[str(_template_dir(a, width, height, margin))],
        reveal_url_prefix=f"{a}/reveal.js",
        reveal_theme="white",
        reveal_transition="none",
        reveal_number="c/t",
        reveal_width=str(width),
        reveal_height=str(height),
        require_js_url=f"{a}/require.js",
        jquery_url=f"{a}/jquery.min.js",
        mathjax_url=f"{a}/mathjax/MathJax.js?config=TeX-AMS_CHTML-full,Safe",
        widget_renderer_url=f"{a}/html-manager/embed-amd.js",
        font_awesome_url="",
        exclude_input_prompt=True,
        exclude_output_prompt=True,
    )
    exporter.mermaid_js_url = ""
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": name}})
    body = local_links(body)
    remote = remote_urls(body)
    if remote:
        raise DemoError(f"{name}: the exported HTML still references remote URLs: {', '.join(remote[:3])}")
    path = out_dir / f"{name}.slides.html"
    path.write_text(body, encoding="utf-8")
    return path


def write_index(out_dir: Path, pages: list[tuple[str, str]]) -> Path:
    items = "\n".join(f'<li><a href="{f}">{t}</a></li>' for f, t in pages)
    html = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>JIT compilation — the lecture</title>"
            f"<link rel='stylesheet' href='{ASSETS_DIR}/theme.css'></head>"
            f"<body style='font-family:var(--deck-font);font-size:24px;margin:40px'>"
            f"<h1>JIT compilation in ML — slides</h1><ol>{items}</ol>"
            f"<p style='color:#555'>Offline reveal.js export: press S for speaker notes, F for full screen.</p>"
            f"</body></html>")
    path = out_dir / "index.html"
    path.write_text(html, encoding="utf-8")
    return path


# -- the commands -----------------------------------------------------------------------
def select_parts(spec: str | None, notebooks: list[Path] | None = None) -> list[Path]:
    from demos.deck.nbtools import parts

    from demos.engine.entry import number_list

    if notebooks:
        paths = [Path(p) for p in notebooks]
        for p in paths:
            if not p.is_file() or p.suffix != ".ipynb":
                raise DemoError(f"--notebook {p}: {'no such file' if not p.exists() else 'not a .ipynb notebook file'}")
        return paths
    found = parts()
    if not found:
        raise DemoError("no parts in slides/ yet (slides/NN_name.ipynb)")
    if spec is None:
        return found
    wanted = number_list(spec, "--parts")
    have = {int(p.name[:2]): p for p in found}
    missing = [n for n in wanted if n not in have]
    if missing:
        raise DemoError(f"--parts {spec!r}: no part {', '.join(map(str, missing))} in slides/ "
                        f"(parts: {', '.join(map(str, sorted(have)))})")
    return [p for n, p in sorted(have.items()) if n in wanted]


def build_html(notebooks: list[Path], out: Path | None = None, results: Path | None = None,
               force: bool = False, placeholders: bool = False,
               executed: Mapping[Path, tuple[Any, float]] | None = None) -> list[dict]:
    """Execute + convert each notebook; returns one dict per part (name, html, seconds, slides).

    ``executed``: notebooks already executed headless the way :func:`execute_part` executes them
    (with these ``results``), as ``{path: (notebook, seconds)}``; those are converted as they are,
    not executed again (nor looked up in, or written to, build/executed). Without it (``make html``,
    ``make pdf``) every part goes through :func:`execute_part`, one after another in one kernel
    (:func:`part_kernel`)."""
    out = out or (BUILD / "html")
    out.mkdir(parents=True, exist_ok=True)
    copy_assets(out)
    given = {Path(k).resolve(): v for k, v in (executed or {}).items()}
    done = []
    with part_kernel(results) as kernel:  # started by the first part that is executed, if any
        for i, nb_path in enumerate(notebooks, 1):
            done.append(_convert_part(i, nb_path, notebooks, out, results, force, placeholders, given, kernel))
    write_index(out, [(d["html"].name, d["title"]) for d in done])
    return done


def _convert_part(i: int, nb_path: Path, notebooks: list[Path], out: Path, results: Path | None, force: bool,
                  placeholders: bool, given: dict, kernel: OneKernel) -> dict:
    """One part of :func:`build_html`: executed (in ``kernel``) or given, then converted."""
    from demos.deck.asks import questions_first
    from demos.deck.nbtools import slide_count

    t0 = time.perf_counter()
    if nb_path.resolve() in given:
        nb, secs = given[nb_path.resolve()]
        cached = "given"
        log(f"[{i}/{len(notebooks)}] {nb_path.name}: executed already (in {secs:.0f} s)")
    else:
        log(f"[{i}/{len(notebooks)}] {nb_path.name}: executing"
            + ((f" from the records in {results}" if results.is_dir() else f" with recorded results {results.name}")
               if results else " (live, this machine)") + "…")
        nb, secs, cached = execute_part(nb_path, results, force=force, kernel=kernel)
    if results:
        lacking = placeholder_figures(nb)
        if lacking:
            _lacking(results, [f"{nb_path.name[:2]}:{k}" for k in lacking], placeholders)
    nb = copy.deepcopy(nb)
    asked = questions_first(nb)  # each live slide's question on its own page, before the answer
    html = to_slides_html(nb, out, nb_path.stem)
    n = slide_count(nb)
    log(f"[{i}/{len(notebooks)}] {nb_path.name}: {'executed already' if cached == 'given' else 'cached' if cached else f'executed in {secs:.0f} s'}, "
        f"{n} slides ({asked} of them questions) → {html.relative_to(PROJECT_ROOT) if html.is_relative_to(PROJECT_ROOT) else html} "
        f"({time.perf_counter() - t0:.0f} s)")
    return {"name": nb_path.stem, "html": html, "execute_s": secs, "slides": n,
            "title": nb.metadata.get("title") or slide_title(nb.cells[:1]) or nb_path.stem, "nb": nb}


def build_pdf(notebooks: list[Path], out: Path | None = None, results: Path | None = None,
              html_dir: Path | None = None, force: bool = False, lecture_name: str = "jit-lecture.pdf",
              placeholders: bool = False, executed: Mapping[Path, tuple[Any, float]] | None = None,
              requests: list | None = None) -> dict:
    """:func:`build_html`, then each part printed to a PDF and the lecture united from them.
    ``executed`` as in :func:`build_html`; ``requests`` collects every URL the printed pages asked for."""
    from demos.engine.outputs import output_file

    from demos.deck import handout

    out = out or (BUILD / "pdf")
    out.mkdir(parents=True, exist_ok=True)
    notes_name = handout.notes_name(lecture_name)
    for name in [f"{p.stem}.pdf" for p in notebooks] + [lecture_name, notes_name]:  # never over a foreign file
        output_file(out / name, "pdf", "--out")
    html_dir = html_dir or (BUILD / "html")
    t0 = time.perf_counter()
    parts_done = build_html(notebooks, html_dir, results, force=force, placeholders=placeholders, executed=executed)
    pdfs, report = [], []
    with serve(html_dir) as base, browser() as ctx:
        for i, d in enumerate(parts_done, 1):
            t1 = time.perf_counter()
            pdf = print_pdf(ctx, base + d["html"].name, out / f"{d['name']}.pdf", requests=requests)
            pages = pdf_pages(pdf)
            warn = "" if pages == d["slides"] else f"  ⚠ expected {d['slides']} pages"
            log(f"[{i}/{len(parts_done)}] {d['name']}.pdf: {pages} pages in {time.perf_counter() - t1:.0f} s{warn}")
            pdfs.append(pdf)
            report.append({**{k: v for k, v in d.items() if k not in ("html", "nb")}, "pdf": str(pdf), "pages": pages})
        # the lecturer's handout: each slide's picture, its notes and its question's answers
        notes = handout.build([{**d, "pdf": r["pdf"]} for d, r in zip(parts_done, report)], ctx, base, html_dir,
                              out / notes_name, requests=requests)
    lecture = unite(pdfs, out / lecture_name)
    total = time.perf_counter() - t0
    size = lecture.stat().st_size
    log(f"lecture: {lecture} · {pdf_pages(lecture)} pages · {size / 1e6:.1f} MB · {total:.0f} s")
    log(f"notes: {notes['path']} · {notes['pages']} pages for {notes['entries']} slide pages · "
        f"{notes['bytes'] / 1e6:.1f} MB · {notes['seconds']:.0f} s")
    return {"parts": report, "lecture": str(lecture), "pages": pdf_pages(lecture), "bytes": size, "seconds": total,
            "notes": str(notes["path"]), "notes_pages": notes["pages"], "notes_entries": notes["entries"]}


def main(argv: list[str] | None = None, demos=None) -> int:
    """The export command. ``demos`` (a callable returning the declared demos; ``python -m demos
    export`` passes it, as the deck layer does not import the topics) lets a recorded-only export
    refuse, before executing anything, a record that lacks a figure; without it the same check runs
    on each part as it is executed."""
    from demos.engine.entry import Parser, guarded

    ap = Parser(prog="python -m demos.deck.export", description=__doc__,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["html", "pdf", "assets"])
    ap.add_argument("--results", default=None,
                    help="draw the figures from this recorded run (assets/results/<file>.json), or from a folder of "
                         "them, each figure from the newest that holds it (or RESULTS=)")
    ap.add_argument("--placeholders", action="store_true",
                    help="with --results: export even when the record lacks some figures (they say so)")
    ap.add_argument("--parts", help="comma-separated part numbers (default: all)")
    ap.add_argument("--notebook", action="append", help="export this notebook instead of the parts")
    ap.add_argument("--out", help="output folder (default build/html or build/pdf)")
    ap.add_argument("--force", action="store_true", help="execute again even if build/executed is current")
    args = ap.parse_args(argv)
    return guarded("export", lambda: _export(args, demos))


def _export(args, demos=None) -> int:
    from demos.engine.outputs import output_folder
    from demos.engine.settings import get

    results = args.results if args.results is not None else get("RESULTS")
    if results is not None and not str(results).strip():
        raise DemoError("--results '': an empty file name; give a results file")
    results = Path(results) if results is not None else None
    if results:
        from demos.engine.results import records_at

        records = records_at(results)  # a missing, truncated or foreign file stops here, in one line
    out = output_folder(args.out, "--out") if args.out is not None else None  # before any work
    if args.what == "assets":
        log(f"assets in {copy_assets(out or BUILD / 'html')}")
        return 0
    notebooks = select_parts(args.parts, args.notebook)
    if results and demos is not None:
        lacking = missing_figures(records, notebooks, demos())
        if lacking:
            _lacking(results, lacking, args.placeholders)
    if args.what == "html":
        t0 = time.perf_counter()
        done = build_html(notebooks, out, results, force=args.force, placeholders=args.placeholders)
        log(f"{len(done)} parts → {(out or BUILD / 'html')}/index.html in {time.perf_counter() - t0:.0f} s "
            "(open it in a browser; works offline)")
    else:
        # a subset never overwrites the whole lecture's PDF with part of it
        name = ("jit-lecture.pdf" if args.parts is None
                else f"jit-lecture-parts-{'-'.join(str(n) for n in sorted({int(p.name[:2]) for p in notebooks}))}.pdf")
        build_pdf(notebooks, out, results, force=args.force, lecture_name=name, placeholders=args.placeholders)
    return 0


def _lacking(results: Path, lacking: list[str], placeholders: bool) -> None:
    """Refuse (DemoError) a recorded-only export whose record lacks figures, unless placeholders
    were asked for; then say which figures are placeholders."""
    line = f"{results.name} has no measurement for {len(lacking)} figure(s): {', '.join(lacking)}"
    if not placeholders:
        raise DemoError(f"{line}; record them (make record), or pass --placeholders "
                        "(make pdf PLACEHOLDERS=1) to export placeholders that say so")
    log(f"⚠ {line}: exported as placeholders")


def missing_figures(records, notebooks: list[Path], demos) -> list[str]:
    """``part N topic.name`` for each live cell of these notebooks whose demo a recorded-only
    export would draw from ``records`` (one record, or a folder's, newest first) but cannot: none
    holds a matching measurement, looked up as :meth:`Demo.render` does (this machine's defaults)."""
    import nbformat

    from demos.deck.nbtools import live_calls
    from demos.engine.results import newest_holding

    records = records if isinstance(records, list) else [records]
    by_key = {d.key: d for d in demos}
    out = []
    for nb_path in notebooks:
        for key in live_calls(nbformat.read(str(nb_path), as_version=4)):
            demo = by_key.get(key)
            if demo is not None and demo.reference(demo.defaults(), record=newest_holding(records, demo.topic, demo.name),
                                                   seed=False) is None:
                out.append(f"{nb_path.name[:2]}:{key}")
    return out


_NO_RECORD = re.compile(r"the recorded run has no (\S+) measurement")


def placeholder_figures(nb) -> list[str]:
    """The demos an executed recorded-only part drew as placeholders (its panels printed that the
    recorded run has no measurement for them)."""
    found = []
    for c in nb.cells:
        for o in c.get("outputs", []):
            text = o.get("text", "") if o.get("output_type") == "stream" else ""
            found += _NO_RECORD.findall(text if isinstance(text, str) else "".join(text))
    return found


if __name__ == "__main__":
    sys.exit(main())
