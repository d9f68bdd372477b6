"""`make html` and `make pdf`: offline reveal.js slides and one PDF page per slide, every figure there.

The sample deck (tests/fixtures) and every part in slides/ are exported once per session by the
pipeline `make pdf` runs (export.build_pdf: HTML, served from 127.0.0.1, printed by headless Debian
chromium, united), except that the parts are not executed again: build_pdf is handed the session's
one headless execution of each part (conftest.executed_notebook, which the notebook tests check).
The page PNGs land in test-artifacts/export/.
"""
from __future__ import annotations

import copy
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from demos.deck import export, printing
from demos.deck.asks import questions_first
from demos.engine.errors import DemoError
from demos.deck.nbtools import parts, slide_count

from conftest import ARTIFACTS, executed_notebook, in_ci

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "sample_deck.ipynb"


def require_browser() -> None:
    try:
        printing.chromium_path()
        import playwright.sync_api  # noqa: F401
        if not (os.path.exists("/usr/bin/pdftoppm") or __import__("shutil").which("pdftoppm")):
            raise DemoError("pdftoppm (poppler-utils) is missing")
        if not export.assets_ready() and not __import__("shutil").which("npm"):
            raise DemoError("npm is missing and node_modules/ is not installed")
    except (DemoError, ImportError) as exc:
        if in_ci():
            pytest.fail(f"CI=true and a tool is missing: {exc}")
        pytest.skip(f"cannot export here: {exc}")


# -- unit tests (no browser) ------------------------------------------------------------
def test_links_between_parts_point_at_the_exported_files():
    html = '<a href="02_what_compilers_do.ipynb">next</a> <a href="https://x.org/a.ipynb">x</a>'
    out = export.local_links(html)
    assert 'href="02_what_compilers_do.slides.html"' in out and "https://x.org/a.ipynb" in out


def test_remote_url_detection():
    assert printing.remote_urls('<script src="https://unpkg.com/x.js"></script>') == ["unpkg.com"]
    assert printing.remote_urls('<link href="//cdn.x.org/a.css">') == ["cdn.x.org"]
    assert printing.remote_urls("<style>@import url('https://fonts.googleapis.com/css');</style>") == ["fonts.googleapis.com"]
    assert printing.remote_urls("<script type=module>import mermaid from 'https://cdn.x/m.mjs';</script>") == ["cdn.x"]
    assert printing.remote_urls('<script src="_assets/require.js"></script><img src="http://127.0.0.1:1/a.png">') == []
    assert printing.remote_urls('<a href="https://pytorch.org/docs">a citation</a>') == []  # a link, not a request


def test_package_json_pins_the_browser_assets():
    import json

    pkg = json.loads((ROOT / "package.json").read_text())
    deps = pkg["dependencies"]
    assert deps["reveal.js"].startswith("5.") and deps["@jupyter-widgets/html-manager"].startswith("0.20.")
    assert deps["mathjax"].startswith("2.")  # nbconvert's reveal template calls the MathJax 2 API
    lock = json.loads((ROOT / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/reveal.js"]["version"] == deps["reveal.js"]
    for d in ("node_modules/", "build/"):
        assert d in (ROOT / ".gitignore").read_text()


def _sample_as_exported():
    """The sample deck as a headless execution leaves it and the export converts it: its panel's
    question, figure and answer line (written by the functions the panel calls), notes in
    markdown, then :func:`questions_first`. Returns (notebook, the answer line)."""
    import html as html_mod

    from demos.deck import asks
    from demos.deck.claims import Claim

    nb = nbformat.read(str(FIXTURE), as_version=4)
    ask = asks.count("n = 6: how tall is the tallest bar?",
                     Claim("the tallest bar is {threshold}", lambda d: d["squares"][-1], "==", 36), (6, 12, 18))
    here, record = {"squares": [1, 4, 9, 16, 25, 36]}, {"squares": [1, 4, 9, 16, 25, 36]}
    line = asks.answer_line(ask, here, "this machine (a test CPU)", record, "H100 80GB HBM3 record")
    live = next(c for c in nb.cells if c.cell_type == "code" and c.source.endswith("panel()"))
    out = nbformat.v4.new_output
    live.outputs = [out("display_data", data={"text/markdown": ask.markdown()}, metadata={asks.QUESTION_META: True}),
                    out("display_data", data={"image/png": "iVBORw0KGgo="}),
                    out("display_data", data={"text/html": f"<p class='jitdeck-answer'>{html_mod.escape(line)}</p>"})]
    note = next(c for c in nb.cells if c.metadata.get("slideshow", {}).get("slide_type") == "notes")
    note.source = "**Say:** the bars redraw in place; `sample_panel.panel()` draws them.\n\n- move the slider\n- watch"
    questions_first(nb)
    return nb, line


def test_the_handout_page_of_a_small_deck():
    """The handout's entries follow the slide PDF page by page (the question's page, then its
    slide), the notes are rendered, the question's page carries the answer with its choice marked,
    and the page loads nothing from the network."""
    from demos.deck import handout
    from demos.deck.notes import visible_text

    nb, line = _sample_as_exported()
    items = handout.entries(nb)
    assert len(items) == slide_count(nb) == 7
    assert [e["page"] for e in items] == list(range(1, 8))
    assert [e["number"] for e in items] == [1, 2, 3, 4, 5, 5, 6]  # the slideshow asks it on the slide it answers
    (q,) = [e for e in items if e["question"]]
    answered = items[q["page"]]  # the next page
    assert q["question"]["question"] == "n = 6: how tall is the tallest bar?" and len(q["question"]["choices"]) == 4
    assert q["answers"] == answered["answers"] == [line] and q["answered_on"] == answered["page"]
    images = [f"_notes/sample_deck/slide-{i}.png" for i in range(1, 8)]
    page = handout.page_html("Sample part", items, images)
    assert printing.remote_urls(page) == []
    assert re.findall(r"<img class='slide' src='([^']+)'", page) == images
    assert "break-inside: avoid" in page
    assert "<strong>Say:</strong>" in page and "<code>sample_panel.panel()</code>" in page
    assert "<li>move the slider</li>" in page
    text = " ".join(visible_text(page.split("</style>", 1)[1]).split())
    assert "**" not in text and "`" not in text
    assert "Say: the bars redraw in place; sample_panel.panel() draws them." in text
    assert text.count("No notes for this slide.") == 5  # title, agenda, two concept pages, what to remember
    assert line.startswith("Answer — this machine (a test CPU): D (36) · H100 80GB HBM3 record: D (36)")
    assert text.count(line) == 2  # on the question's entry and on the slide that answers it
    assert "D. 36 ← this machine (a test CPU) and H100 80GB HBM3 record" in text


def test_the_handout_reads_the_answer_lines_and_is_named_beside_the_lecture():
    from demos.deck import handout

    assert handout.notes_name("jit-lecture.pdf") == "jit-lecture-notes.pdf"
    assert handout.notes_name("jit-lecture-parts-1-3.pdf") == "jit-lecture-parts-1-3-notes.pdf"
    said = handout.split_answer("Answer — this machine (AMD EPYC): B (1: one output needs one buffer) · "
                                "the H100 80GB HBM3 record of 2026-11-27 03:46: — (n/a)")
    assert said == [{"label": "this machine (AMD EPYC)", "letter": "B", "said": "1: one output needs one buffer"},
                    {"label": "the H100 80GB HBM3 record of 2026-11-27 03:46", "letter": "—", "said": "n/a"}]
    assert handout.split_answer("something else") == []


# -- the session export -----------------------------------------------------------------
class Exported:
    def __init__(self, root: Path):
        self.root = root
        self.html_dir = root / "html"
        self.pdf_dir = root / "pdf"
        self.items: list[dict] = []
        self.requests: list[str] = []
        self.lecture: Path | None = None
        self.notes: Path | None = None  # the lecturer's handout
        self.pdf_seconds = 0.0


def _page_of_cells(nb) -> list[int | None]:
    """Which PDF page (1-based) each cell lands on (None: skipped / notes)."""
    page, pages = 0, []
    for i, c in enumerate(nb.cells):
        st = c.get("metadata", {}).get("slideshow", {}).get("slide_type", "-")
        if st in ("slide", "subslide") or (i == 0 and st not in ("skip", "notes")):
            page += 1
        pages.append(None if st in ("skip", "notes") else page)
    return pages


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    require_browser()
    ex = Exported(tmp_path_factory.mktemp("export"))
    fixture_nb, fixture_s, _ = export.execute_part(FIXTURE, cache_dir=ex.root / "executed")
    executed = {FIXTURE: (fixture_nb, fixture_s)}
    executed.update({p: executed_notebook(p.name) for p in parts()})  # the session's one execution each
    notebooks = [FIXTURE, *parts()]
    t0 = time.perf_counter()
    built = export.build_pdf(notebooks, ex.pdf_dir, html_dir=ex.html_dir, executed=executed, requests=ex.requests)
    ex.pdf_seconds = time.perf_counter() - t0
    ex.lecture = Path(built["lecture"])
    assert ex.lecture == ex.pdf_dir / "jit-lecture.pdf"
    ex.notes = Path(built["notes"])
    for path, d in zip(notebooks, built["parts"]):
        assert d["name"] == path.stem
        nb = copy.deepcopy(executed[path][0])
        questions_first(nb)  # as the export lays it out: each question on a page before its answer
        ex.items.append({"name": d["name"], "nb": nb, "html": ex.html_dir / f"{d['name']}.slides.html",
                         "slides": slide_count(nb), "execute_s": d["execute_s"], "pdf": Path(d["pdf"]),
                         "pages": printing.pdf_pages(Path(d["pdf"]))})
    # The plain slideshow view too (not the print view): walk it and measure each slide.
    with printing.serve(ex.html_dir) as base, printing.browser() as ctx:
        page = ctx.new_page()
        page.on("request", lambda r: ex.requests.append(r.url))
        for it in ex.items:
            page.goto(base + it["html"].name, wait_until="load")
            page.wait_for_function("window.__deckReady === true", timeout=120_000)
            it["total"] = page.evaluate("Reveal.getTotalSlides()")
            it["overflow"] = page.evaluate(OVERFLOW)
        page.close()
    out = ARTIFACTS / "export"
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "export-times.txt", "w") as f:
        for it in ex.items:
            f.write(f"{it['name']}\t{it['slides']} slides\t{it['pages']} pages\texecuted in {it['execute_s']:.1f} s\n")
        f.write(f"HTML and PDF of {len(ex.items)} decks (executed already): {ex.pdf_seconds:.1f} s; "
                f"lecture PDF {ex.lecture.stat().st_size / 1e6:.2f} MB; notes PDF {built['notes_pages']} pages, "
                f"{ex.notes.stat().st_size / 1e6:.2f} MB\n")
    return ex


OVERFLOW = """() => {
  const out = [];
  for (const s of Reveal.getSlides()) {
    const idx = Reveal.getIndices(s);
    Reveal.slide(idx.h, idx.v, 99);
    const box = document.querySelector('.reveal .slides').getBoundingClientRect();
    const scale = box.width / document.querySelector('.reveal .slides').offsetWidth || 1;
    let bottom = 0;
    for (const c of s.querySelectorAll('.jp-Cell')) {
      const r = c.getBoundingClientRect();
      if (r.height) bottom = Math.max(bottom, (r.bottom - box.top) / scale);
    }
    out.push({h: idx.h, v: idx.v, bottom});
  }
  Reveal.slide(0, 0);
  return out;
}"""


@pytest.mark.slow
@pytest.mark.browser
def test_html_references_only_files_it_ships(exported):
    for it in exported.items:
        text = it["html"].read_text()
        assert printing.remote_urls(text) == [], it["name"]
        for ref in re.findall(r'(?:src|href)="(_assets/[^"?#]+)', text):
            assert (exported.html_dir / ref).exists(), f"{it['name']}: missing {ref}"
        assert "_assets/reveal.js/dist/reveal.js" in text and "_assets/theme.css" in text


@pytest.mark.slow
@pytest.mark.browser
def test_opening_the_export_makes_no_remote_request(exported):
    assert exported.requests
    hosts = {u.split("/")[2].split(":")[0] for u in exported.requests if "://" in u and not u.startswith("data:")}
    assert hosts == {"127.0.0.1"}, f"requests left the machine: {sorted(hosts)}"
    assert any("mathjax" in u.lower() for u in exported.requests)  # MathJax came from the build folder


@pytest.mark.slow
@pytest.mark.browser
def test_exported_slides_count_and_fit(exported):
    for it in exported.items:
        assert it["total"] == it["slides"], f"{it['name']}: reveal shows {it['total']} slides, notebook has {it['slides']}"
        for s in it["overflow"]:
            assert s["bottom"] <= 722, f"{it['name']} slide {s['h']}.{s['v']} overflows 720 px: {s['bottom']:.0f}"


@pytest.mark.slow
@pytest.mark.browser
def test_pdf_one_page_per_slide_and_the_lecture_has_them_all(exported):
    for it in exported.items:
        assert it["pages"] == it["slides"], f"{it['name']}: {it['pages']} PDF pages for {it['slides']} slides"
    assert printing.pdf_pages(exported.lecture) == sum(it["slides"] for it in exported.items)
    info = subprocess.run(["pdfinfo", str(exported.items[0]["pdf"])], capture_output=True, text=True).stdout
    w, h = map(float, re.search(r"Page size:\s+([\d.]+) x ([\d.]+)", info).groups())
    assert abs(w / h - 16 / 9) < 0.02, info  # 1280×720 pages


def _squash(text: str) -> str:
    """Text as compared with what pdftotext reads: no whitespace, no hyphens (a word broken at
    its hyphen comes back joined)."""
    return re.sub(r"[\s\-]+", "", text)


@pytest.mark.slow
@pytest.mark.browser
def test_the_lecturers_handout_has_each_slide_its_notes_and_its_answers(exported):
    """`make pdf` writes jit-lecture-notes.pdf beside the lecture: an entry per slide PDF page, in
    the same order, the notes rendered (no markdown syntax left), every answer line the panels
    printed (this machine's and the record's) on the question's entry and on its slide's."""
    from demos.deck import handout
    from demos.deck.notes import render_markdown, slides, visible_text

    notes = exported.notes
    assert notes == exported.pdf_dir / "jit-lecture-notes.pdf" and notes.stat().st_size > 0
    for it in exported.items:
        page = exported.html_dir / f"{it['name']}.notes.html"
        text = page.read_text()
        assert printing.remote_urls(text) == [], it["name"]
        pictures = re.findall(r"<img class='slide' src='([^']+)'", text)
        assert len(pictures) == it["pages"] and all((exported.html_dir / p).is_file() for p in pictures)
        assert max((exported.html_dir / p).stat().st_size for p in pictures) < 400_000, it["name"]
    text = subprocess.run(["pdftotext", str(notes), "-"], capture_output=True, text=True, check=True).stdout
    pages = [int(p) for p in re.findall(r"slide \d+/\d+(?: · its question)? · PDF page (\d+)", text)]
    runs: list[int] = []
    for p in pages:  # each part's entries: PDF page 1, 2, … of its slide PDF
        runs.append(1) if p == 1 else runs.__setitem__(-1, runs[-1] + 1)
        assert p == runs[-1], (p, runs)
    assert runs == [it["pages"] for it in exported.items]
    assert len(pages) >= sum(it["slides"] for it in exported.items)
    assert "**" not in text and "`" not in text
    flat = _squash(text)
    read = 0
    for it in exported.items:  # a note with bold and code in it, read as the page prints it
        para = next((p for s in slides(it["nb"]) for p in s["notes"].split("\n\n") if "**" in p and "`" in p), None)
        if para:
            words = " ".join(visible_text(render_markdown(para)).split()[:16])
            assert _squash(words) in flat, (it["name"], words)
            read += 1
    assert read >= 5
    lines = [ln for it in exported.items for ln in handout.answer_lines(it["nb"].cells)]
    assert any(" · H100 80GB HBM3 record: " in ln and re.search(r"record: [A-D] ", ln) for ln in lines), lines[:5]
    for ln in lines:
        assert ln.startswith("Answer — ") and flat.count(_squash(ln)) >= 2, ln
    unanswered = [f"{it['name']} PDF page {e['page']}: {e['warnings'] or 'no answer line'}"
                  for it in exported.items for e in handout.entries(it["nb"]) if e["question"] and not e["answers"]]
    assert not unanswered, unanswered  # every question's entry carries the answer its slide printed
    assert printing.pdf_pages(notes) >= len(exported.items)


def _nonwhite_fraction(png: Path) -> float:
    from PIL import Image

    im = Image.open(png).convert("L")
    hist = im.histogram()
    return 1 - sum(hist[245:]) / (im.width * im.height)


@pytest.mark.slow
@pytest.mark.browser
def test_every_pdf_page_renders_non_blank(exported):
    out = ARTIFACTS / "export"
    for it in exported.items:
        prefix = out / f"{it['name']}-page"
        for old in out.glob(f"{it['name']}-page-*.png"):
            old.unlink()
        subprocess.run(["pdftoppm", "-r", "40", "-png", str(it["pdf"]), str(prefix)], check=True)
        pngs = sorted(out.glob(f"{it['name']}-page-*.png"))
        assert len(pngs) == it["pages"]
        for png in pngs:
            frac = _nonwhite_fraction(png)
            assert frac > 0.003, f"{png.name} is blank ({frac:.4f} of the page has ink)"


def _pages_with_images(pdf: Path) -> set[int]:
    out = subprocess.run(["pdfimages", "-list", str(pdf)], capture_output=True, text=True, check=True).stdout
    pages = set()
    for line in out.splitlines()[2:]:
        cols = line.split()
        if cols and cols[0].isdigit() and int(cols[3]) >= 200 and int(cols[4]) >= 100:  # width, height
            pages.add(int(cols[0]))
    return pages


@pytest.mark.slow
@pytest.mark.browser
def test_each_question_has_its_own_page_just_before_its_answer(exported):
    """Headless, a live slide's question is a page of its own (the question and its lettered
    choices, no figure), and the next page is the slide that answers it (the figure and the
    answer line)."""
    asked = 0
    for it in exported.items:
        nb, where = it["nb"], _page_of_cells(it["nb"])
        images = _pages_with_images(it["pdf"])
        for i, c in enumerate(nb.cells):
            if c.cell_type != "markdown" or not c.source.startswith("## Predict first"):
                continue
            asked += 1
            page = where[i]
            text = subprocess.run(["pdftotext", "-f", str(page), "-l", str(page), "-layout", str(it["pdf"]), "-"],
                                  capture_output=True, text=True, check=True).stdout
            question = c.source.split("**")[1].replace("`", "")  # code spans print without their backticks
            assert " ".join(question.split()[:6]) in " ".join(text.split()), (it["name"], page, text[:300])
            assert "A." in text and "C." in text and page not in images, (it["name"], page)
            answer = next(j for j in range(i + 1, len(nb.cells)) if nb.cells[j].cell_type == "code")
            assert where[answer] == page + 1 and page + 1 in images, (it["name"], page)
            after = subprocess.run(["pdftotext", "-f", str(page + 1), "-l", str(page + 1), str(it["pdf"]), "-"],
                                   capture_output=True, text=True, check=True).stdout
            assert "Answer —" in after and "this machine" in after, (it["name"], page + 1, after[-300:])
    parts_asked = sum(1 for it in exported.items for c in it["nb"].cells if c.cell_type == "code"
                      and _asks(c.source))
    assert asked == parts_asked and asked > 20


def _asks(source: str) -> bool:
    """Does this live cell call a demo that asks first, with the values it starts at?"""
    from demos import topics
    from demos.deck.nbtools import live_call

    by_key = {d.key: d for d in topics.load()}
    lines = [ln.strip() for ln in source.splitlines() if ln.strip()]
    if lines and lines[-1].startswith("sample_panel.panel("):
        return True
    key, values = live_call(source) or ("", {})
    demo = by_key.get(key)
    if demo is None or demo.ask is None:
        return False
    return demo.ask.asks({**demo.defaults(), **values})


@pytest.mark.slow
@pytest.mark.browser
def test_pages_with_live_cells_contain_their_figure(exported):
    for it in exported.items:
        nb = it["nb"]
        where = _page_of_cells(nb)
        live_pages = {where[i] for i, c in enumerate(nb.cells) if c.cell_type == "code" and where[i]
                      and any("image/png" in o.get("data", {}) for o in c.get("outputs", []))}
        assert live_pages or it["name"] != "sample_deck"
        missing = live_pages - _pages_with_images(it["pdf"])
        assert not missing, f"{it['name']}: pages {sorted(missing)} have a live cell but no image in the PDF"


# -- the CLI: progress, caching, recorded results ---------------------------------------
@pytest.mark.slow
@pytest.mark.browser
def test_make_pdf_with_recorded_results_draws_the_record(tmp_path):
    require_browser()
    from demos.engine.results import Record

    rec = Record.new(label="a CPU stand-in for the H200 run")
    rec.sections["sample_panel"] = {"panel": {"n": 9, "squares": [x * x for x in range(1, 10)], "extra": "n=9",
                                              "values": {"n": 6}}}
    rec_path = rec.save(tmp_path / "recorded.json")
    env = dict(os.environ, DEMOS_BUILD_DIR=str(tmp_path / "build"))
    t0 = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "demos.deck.export", "pdf", "--notebook", str(FIXTURE),
                          "--results", str(rec_path), "--out", str(tmp_path / "pdf")],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "[1/1] sample_deck.ipynb: executing with recorded results recorded.json" in run.stdout
    assert re.search(r"\[1/1\] sample_deck.pdf: 7 pages", run.stdout), run.stdout  # 6 slides and the question's page
    assert (tmp_path / "pdf" / "jit-lecture.pdf").exists()
    (ARTIFACTS / "export").mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "export" / "cli-recorded-pdf.txt").write_text(run.stdout + f"\nwall {time.perf_counter() - t0:.1f} s\n")

    # The recorded run drew a different figure than the live one, and the execution is cached.
    recorded_nb, _, cached = export.execute_part(FIXTURE, rec_path, cache_dir=tmp_path / "build" / "executed")
    assert cached
    live_nb, _, cached_live = export.execute_part(FIXTURE, None, cache_dir=tmp_path / "build" / "executed")
    assert not cached_live

    def pngs(nb):
        return [o["data"]["image/png"] for c in nb.cells if c.cell_type == "code" for o in c.outputs
                if "image/png" in o.get("data", {})]

    assert pngs(recorded_nb) and pngs(live_nb) and pngs(recorded_nb) != pngs(live_nb)


@pytest.mark.parametrize("content", ['{"schema": "jit-deck/record@2", "rows": [', "", '{"schema": "other"}',
                                     '{"schema": "jit-deck/record@99"}'])
def test_a_bad_results_file_stops_the_export_in_one_line(content, tmp_path, capsys):
    bad = tmp_path / "r.json"
    bad.write_text(content)
    assert export.main(["pdf", "--results", str(bad), "--notebook", str(FIXTURE)]) == 2
    err = capsys.readouterr().err.strip()
    assert "r.json" in err and len(err.splitlines()) == 1, err


def test_a_folder_of_records_draws_each_figure_from_the_newest_that_holds_it(tmp_path, capsys):
    """RESULTS may name a folder: each figure from the newest record there that holds it, so the
    committed folder draws everything its complete older record does; an empty folder is one line,
    before anything runs."""
    from demos import topics
    from demos.engine.results import records_at

    parts = sorted((Path(__file__).resolve().parent.parent / "slides").glob("0*.ipynb"))
    records = records_at(Path(__file__).resolve().parent.parent / "assets" / "results")
    assert len(records) >= 2 and all(a.created > b.created for a, b in zip(records, records[1:]))  # newest first
    folder, *alone = (set(export.missing_figures(r, parts, topics.load())) for r in (records, *records))
    # the folder lacks only what the complete oldest record lacks (demos recorded at GPU sizes that no
    # CPU default matches); each newer record alone lacks more (what it withdrew or never reached)
    assert folder == alone[-1] and all(a > folder for a in alone[:-1])
    assert "05:recompilation.compare_modes" in alone[1] - folder  # withdrawn from 2026-11-27 03:46
    assert "01:eager.timeline" in alone[0] - folder  # 06:48 recorded three demos only
    assert export.main(["pdf", "--results", str(tmp_path), "--notebook", str(FIXTURE)]) == 2
    err = capsys.readouterr().err.strip()
    assert "a folder with no results record in it" in err and len(err.splitlines()) == 1, err


def test_missing_results_file_is_one_clear_line(capsys):
    assert export.main(["pdf", "--results", "assets/results/nope.json", "--notebook", str(FIXTURE)]) == 2
    assert capsys.readouterr().err == "export: assets/results/nope.json: no such file\n"
