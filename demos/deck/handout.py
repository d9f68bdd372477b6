"""The lecturer's handout that ``make pdf`` writes beside the slides: ``jit-lecture-notes.pdf``.

Each page of a part's slide PDF becomes one entry, in the same order: a picture of the slide (the
slide PDF's page, rasterised by poppler's ``pdftoppm``), then its speaker notes rendered
(:func:`demos.deck.notes.slides`: bold, code, lists, paragraphs), then, for a slide that asks the
room a question, the answers: this machine's and the record's, read from the executed part (the
``jitdeck-answer`` line its headless panel printed under the figure). The export lifts each
question onto a page of its own before its answer (:func:`demos.deck.asks.questions_first`); that
page's entry carries the answer too, with the choices marked, so the lecturer holding the
question page knows what the next slide will show.

Per part: one HTML page (``<part>.notes.html`` in the HTML build folder, its pictures under
``_notes/<part>/``; no remote URL), printed on A4 by the same headless chromium as the slides
(:mod:`demos.deck.printing`), the part's title in the running header and page numbers in the
footer. The parts' notes PDFs are united with ``pdfunite``.

The deck layer: imports from :mod:`demos.deck` and :mod:`demos.engine` only.
"""
from __future__ import annotations

import html
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from demos.engine.errors import DemoError

QUESTION_HEAD = "## Predict first"  # how a question page lifted by asks.questions_first begins
NOTES_DIR = "_notes"  # beside the part's .slides.html: the pictures and each part's notes PDF
SLIDE_PX = 1024  # the pictures' width in pixels (printed 88 mm wide: ~300 dpi; 40–150 KB a picture)
_ANSWER = re.compile(r"<p class='jitdeck-answer'>(.*?)</p>", re.S)
_SAID = re.compile(r"^(?P<label>.+?): (?P<letter>[A-D]|—)(?: \((?P<said>.*)\))?$", re.S)
_CHOICE = re.compile(r"^\s*-\s+\*\*(?P<letter>[A-D])\.\*\*\s*(?P<text>.*\S)\s*$")


def log(msg: str) -> None:
    print(msg, flush=True)


def notes_name(lecture_name: str) -> str:
    """The handout's file name beside the lecture's: jit-lecture.pdf → jit-lecture-notes.pdf."""
    stem = lecture_name[:-4] if lecture_name.lower().endswith(".pdf") else lecture_name
    return f"{stem}-notes.pdf"


# -- reading a converted part ------------------------------------------------------------
def is_question_page(cells: list) -> bool:
    """A page :func:`demos.deck.asks.questions_first` lifted out of a panel: one markdown cell, the
    question."""
    return (len(cells) == 1 and cells[0].get("cell_type") == "markdown"
            and cells[0].get("source", "").lstrip().startswith(QUESTION_HEAD))


def question_of(source: str) -> dict[str, Any]:
    """The question page's markdown (:meth:`demos.deck.asks.Ask.markdown`) read back: the question
    and its lettered choices."""
    parts = source.split("**")
    question = parts[1].strip() if len(parts) > 2 else ""
    choices = [(m["letter"], m["text"]) for line in source.splitlines() if (m := _CHOICE.match(line))]
    return {"question": question, "choices": choices}


def answer_lines(cells: list) -> list[str]:
    """The answer lines the slide's headless panels printed under their figures ("Answer — this
    machine (…): B (…) · H100 80GB HBM3 record: C (…)"), as plain text, in order."""
    out = []
    for c in cells:
        for o in c.get("outputs", []) if c.get("cell_type") == "code" else []:
            page = (o.get("data") or {}).get("text/html", "")
            page = "".join(page) if isinstance(page, list) else page
            out += [html.unescape(re.sub(r"<[^>]+>", "", m)).strip() for m in _ANSWER.findall(page)]
    return out


def warnings_of(cells: list) -> list[str]:
    """The one-line problems the slide's panels printed ("⚠ …") instead of an answer."""
    out = []
    for c in cells:
        for o in c.get("outputs", []) if c.get("cell_type") == "code" else []:
            if o.get("output_type") == "stream":
                text = o.get("text", "")
                text = "".join(text) if isinstance(text, list) else text
                out += [ln.strip() for ln in text.splitlines() if ln.strip().startswith("⚠")]
    return out


def split_answer(line: str) -> list[dict[str, str]]:
    """An answer line's answers: [{label, letter, said}], this machine's first (empty where the
    line does not read as :func:`demos.deck.asks.answer_line` writes it)."""
    body = line.split("Answer — ", 1)[1] if line.startswith("Answer — ") else ""
    out = []
    for part in body.split(" · ") if body else []:
        m = _SAID.match(part.strip())
        if not m:
            return []
        out.append({"label": m["label"], "letter": m["letter"], "said": m["said"] or ""})
    return out


def entries(nb) -> list[dict[str, Any]]:
    """One entry per page of the part's slide PDF (``nb`` as the export converts it, after
    ``questions_first``): the page number, the slideshow's slide number (a question page is its
    slide's question: the slideshow asks it in the panel), the title, the notes (markdown and
    HTML), the question (a question page) and the answer lines."""
    from demos.deck.nbtools import slide_groups
    from demos.deck.notes import slides

    shown = slides(nb)
    groups = slide_groups(nb)
    if len(groups) != len(shown):  # both follow RISE's rule; a notebook that breaks it is refused
        raise DemoError(f"the handout counts {len(shown)} slides but the notebook has {len(groups)} groups of cells")
    out, number = [], 0
    for i, (s, cells) in enumerate(zip(shown, groups)):
        question = is_question_page(cells)
        if not question:
            number += 1
        out.append({"page": i + 1, "number": number + (1 if question else 0), "title": s["title"],
                    "notes": s["notes"], "notes_html": s["notes_html"], "live": s["live"],
                    "question": question_of(cells[0]["source"]) if question else None,
                    "answers": [] if question else answer_lines(cells),
                    "warnings": [] if question else warnings_of(cells)})
    # a question page carries the answer its slide prints: the k-th question before a slide, its k-th answer
    pending: list[dict[str, Any]] = []
    for e in out:
        e["slides"] = number
        if e["question"] is not None:
            pending.append(e)
            continue
        for k, q in enumerate(pending):
            q["answers"] = e["answers"][k:k + 1]
            q["warnings"] = [] if q["answers"] else e["warnings"][:1]
            q["answered_on"] = e["page"]
        e["asked_on"] = [q["page"] for q in pending]
        pending = []
    return out


# -- the page -----------------------------------------------------------------------------
CSS = """
@page { size: A4; }
html { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
body { font-family: "DejaVu Sans", "Liberation Sans", Arial, sans-serif; font-size: 10.5pt; line-height: 1.38;
       color: #111; margin: 0; }
h1.part { font-size: 17pt; margin: 0 0 1mm; }
p.sub { color: #555; margin: 0 0 3mm; font-size: 10pt; }
section.entry { break-inside: avoid; page-break-inside: avoid; border-top: 0.6pt solid #888; padding: 2mm 0 3mm;
                display: flow-root; }
.head { display: flex; justify-content: space-between; align-items: baseline; gap: 4mm; margin-bottom: 1.5mm; }
.head .title { font-weight: bold; font-size: 12pt; }
.head .where { color: #555; font-size: 9pt; white-space: nowrap; }
img.slide { float: left; width: 88mm; height: auto; border: 0.6pt solid #aaa; margin: 0.5mm 4mm 1mm 0; }
section.question { break-after: avoid; page-break-after: avoid; }  /* the question beside its answer */
.question img.slide { width: 64mm; }
.notes { display: block; }
.notes p { margin: 0 0 1.6mm; }
.notes ul, .notes ol { margin: 0 0 1.6mm; padding-left: 6mm; display: flow-root; }
.notes code, .box code { font-family: "DejaVu Sans Mono", "Liberation Mono", monospace; font-size: 10pt;
                        background: #f0f0f0; padding: 0 0.6mm; border-radius: 0.6mm; }
.notes pre { font-size: 10pt; background: #f4f4f4; padding: 1.5mm; white-space: pre-wrap; display: flow-root; }
.none { color: #666; font-style: italic; margin: 0; }
.box { display: flow-root; border-left: 3pt solid #1a7f37; background: #eef6ef; padding: 1.5mm 3mm; margin: 1.5mm 0 0; }
.box.ask { border-left-color: #b35900; background: #fbf1e6; margin-top: 0; }
.box.warn { border-left-color: #b00020; background: #fbeaea; }
.box p { margin: 0 0 1mm; }
.box p:last-child { margin-bottom: 0; }
.box ol { list-style: none; margin: 0.5mm 0 1mm; padding-left: 2mm; }
.box li .tag { color: #1a7f37; font-weight: bold; font-size: 9.5pt; }
"""


def _answer_html(line: str) -> str:
    """The answer line with each answer's letter in bold (the text as the slide prints it)."""
    said = split_answer(line)
    if not said:
        return html.escape(line)
    parts = [f"{html.escape(a['label'])}: <b>{html.escape(a['letter'])}</b>"
             + (f" ({html.escape(a['said'])})" if a["said"] else "") for a in said]
    if len(said) == 1 and said[0]["label"].startswith("this machine"):
        parts.append("<i>no record holds this demo's answer</i>")
    return "Answer — " + " · ".join(parts)


def _choices_html(question: dict, line: str) -> str:
    """The question's choices, each marked with who answered it (this machine, the record)."""
    by_letter: dict[str, list[str]] = {}
    for a in split_answer(line) if line else []:
        by_letter.setdefault(a["letter"], []).append(a["label"])
    items = []
    for letter, text in question["choices"]:
        tag = (" <span class='tag'>← " + html.escape(" and ".join(by_letter[letter])) + "</span>"
               if letter in by_letter else "")
        items.append(f"<li><b>{letter}.</b> {_inline(text)}{tag}</li>")
    return f"<ol>{''.join(items)}</ol>" if items else ""


def _inline(markdown: str) -> str:
    """A line of markdown (a choice) as HTML, without a paragraph around it."""
    from demos.deck.notes import render_markdown

    out = render_markdown(markdown).strip()
    return re.sub(r"^<p>(.*)</p>$", r"\1", out, flags=re.S)


def entry_html(e: dict[str, Any], image: str | None) -> str:
    where = (f"slide {e['number']}/{e['slides']}" + (" · its question" if e["question"] else "")
             + f" · PDF page {e['page']}")
    title = "Predict first" if e["question"] else (e["title"] or f"Slide {e['number']}")
    out = [f"<section class='entry{' question' if e['question'] else ''}' id='page-{e['page']}'>",
           f"<div class='head'><span class='title'>{html.escape(title)}</span>"
           f"<span class='where'>{html.escape(where)}</span></div>"]
    if image:
        out.append(f"<img class='slide' src='{html.escape(image)}' alt='PDF page {e['page']}'>")
    line = e["answers"][0] if e["answers"] else ""
    if e["question"]:
        q = e["question"]
        on = f"The next slide (PDF page {e['answered_on']})" if e.get("answered_on") else "The next slide"
        out.append("<div class='box ask'>"
                   f"<p><b>{_inline(q['question'])}</b></p>{_choices_html(q, line)}"
                   + (f"<p>{_answer_html(line)}</p>" if line else "")
                   + "".join(f"<p>{html.escape(w)}</p>" for w in e["warnings"])
                   + f"<p class='none'>{html.escape(on)} shows the figure that answers it; its notes follow.</p>"
                   "</div>")
        out.append("</section>")
        return "\n".join(out)
    out.append(f"<div class='notes'>{e['notes_html']}</div>" if e["notes_html"].strip()
               else "<p class='none'>No notes for this slide.</p>")
    for ln in e["answers"]:
        out.append(f"<div class='box'><p>{_answer_html(ln)}</p></div>")
    if e.get("asked_on") and not e["answers"]:
        out.append("<div class='box warn'><p>No answer line under the figure"
                   + "".join(f": {html.escape(w)}" for w in e["warnings"][:1]) + "</p></div>")
    out.append("</section>")
    return "\n".join(out)


def page_html(title: str, items: list[dict[str, Any]], images: list[str | None]) -> str:
    """A part's handout as one HTML page: its title, then one entry per slide PDF page. Images are
    relative paths; nothing is loaded from the network."""
    asked = sum(1 for e in items if e["question"])
    sub = (f"Lecturer's notes: {items[-1]['slides'] if items else 0} slides, {len(items)} PDF pages"
           + (f", {asked} question{'s' if asked > 1 else ''} with {'their answers' if asked > 1 else 'its answer'}"
              if asked else "") + ".")
    body = "\n".join(entry_html(e, img) for e, img in zip(items, images))
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'>"
            f"<title>{html.escape(title)} — notes</title><style>{CSS}</style></head><body>"
            f"<h1 class='part'>{html.escape(title)}</h1><p class='sub'>{html.escape(sub)}</p>\n{body}\n</body></html>")


# -- building ------------------------------------------------------------------------------
def rasterise(pdf: Path, folder: Path, width: int = SLIDE_PX) -> list[Path]:
    """Each page of ``pdf`` as ``folder/slide-NN.png`` (``width`` pixels wide), in page order."""
    if not shutil.which("pdftoppm"):
        raise DemoError("pdftoppm is missing (apt-get install poppler-utils)")
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    subprocess.run(["pdftoppm", "-png", "-scale-to-x", str(width), "-scale-to-y", "-1", str(pdf),
                    str(folder / "slide")], check=True, capture_output=True)
    return sorted(folder.glob("slide-*.png"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))


def write_part(nb, title: str, slide_pdf: Path | None, html_dir: Path, name: str) -> tuple[Path, list[dict]]:
    """The part's handout page, ``html_dir/<name>.notes.html``, with its slide pictures."""
    from demos.deck.printing import remote_urls

    items = entries(nb)
    pictures = rasterise(slide_pdf, html_dir / NOTES_DIR / name) if slide_pdf else []
    if pictures and len(pictures) != len(items):
        log(f"⚠ {name}: {len(pictures)} slide PDF pages for {len(items)} handout entries; pictures paired in order")
    images = [p.relative_to(html_dir).as_posix() for p in pictures]
    images += [None] * (len(items) - len(images))
    page = page_html(title, items, images)
    remote = remote_urls(page)
    if remote:
        raise DemoError(f"{name}: the notes page references remote URLs: {', '.join(remote[:3])}")
    path = html_dir / f"{name}.notes.html"
    path.write_text(page, encoding="utf-8")
    return path, items


def _template(text: str, align: str) -> str:
    return (f"<div style='font-family:DejaVu Sans,Arial,sans-serif;font-size:8pt;color:#555;width:100%;"
            f"padding:0 12mm;text-align:{align}'>{text}</div>")


def print_a4(ctx, url: str, pdf_path: Path, header: str, timeout_ms: int = 120_000,
             requests: list | None = None) -> Path:
    """Print a handout page on A4 portrait: ``header`` in each page's header, page numbers in the footer."""
    page = ctx.new_page()
    if requests is not None:
        page.on("request", lambda r: requests.append(r.url))
    try:
        page.goto(url, wait_until="load", timeout=timeout_ms)
        page.evaluate("document.fonts.ready.then(() => true)")
        page.wait_for_function("[...document.images].every(i => i.complete)", timeout=timeout_ms)
        page.pdf(path=str(pdf_path), format="A4", print_background=True, display_header_footer=True,
                 header_template=_template(html.escape(header), "left"),
                 footer_template=_template("page <span class='pageNumber'></span> of <span class='totalPages'></span>",
                                           "right"),
                 margin={"top": "14mm", "bottom": "14mm", "left": "12mm", "right": "12mm"})
    finally:
        page.close()
    return pdf_path


def build(parts: list[dict], ctx, base_url: str, html_dir: Path, out: Path,
          requests: list | None = None) -> dict[str, Any]:
    """The handout of these parts, united in ``out``. ``parts``: the export's converted parts
    (``name``, ``title``, ``nb`` as converted, ``pdf``: its slide PDF); ``ctx`` the browser and
    ``base_url`` the server of ``html_dir``. Returns the handout's path, pages and entries."""
    from demos.deck.printing import pdf_pages, unite

    t0 = time.perf_counter()
    pdfs, count = [], 0
    (html_dir / NOTES_DIR).mkdir(parents=True, exist_ok=True)
    for d in parts:
        page, items = write_part(d["nb"], d["title"], Path(d["pdf"]) if d.get("pdf") else None, html_dir, d["name"])
        pdfs.append(print_a4(ctx, base_url + page.name, html_dir / NOTES_DIR / f"{d['name']}.notes.pdf",
                             f"{d['title']} — lecturer's notes", requests=requests))
        count += len(items)
    united = unite(pdfs, out)
    return {"path": united, "pages": pdf_pages(united), "entries": count, "bytes": united.stat().st_size,
            "seconds": time.perf_counter() - t0}
