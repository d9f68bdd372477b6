"""The lecturer's notes window, in the real slideshow (the Jupyter server `make present` starts,
RISE in headless Debian chromium): key t opened mid-deck shows the current slide's notes, visible
and rendered (no markdown syntax), and follows the deck forwards and back; on a live slide it gives
the question's answers, the record's from the sheet and this machine's once the panel measured, while
the slide itself shows none of them. Screenshots go to test-artifacts/notes/."""
from __future__ import annotations

import re
import time
from pathlib import Path

import nbformat
import pytest

from demos.deck import notes
from demos.deck.walk import CURRENT, open_slideshow, shutdown_kernels, time_to_figure, live_cells

from conftest import ROOT  # (server, browser_ctx: fixtures there)

pytestmark = [pytest.mark.slow, pytest.mark.browser]

PART = "slides/04_inside_the_compilers.ipynb"  # slides and sub-slides, live slides and slides without notes
WINDOW = """() => {
  const body = document.getElementById('jitdeck-notes-body'), r = body.getBoundingClientRect();
  return {where: document.getElementById('jitdeck-notes-where').textContent,
          title: document.getElementById('jitdeck-notes-title').textContent,
          h: document.body.getAttribute('data-h'), v: document.body.getAttribute('data-v'),
          text: body.innerText, visible: r.height > 0 && r.width > 0 && !body.closest('[hidden]')
                && getComputedStyle(body).display !== 'none' && getComputedStyle(body).visibility !== 'hidden',
          question: (document.getElementById('jitdeck-notes-question') || {}).innerText || ''};
}"""


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _deck_slide(page) -> int:
    return int(page.evaluate(CURRENT)["num"].split("/")[0])


def _window_on(win, slide: dict, timeout_s: float = 30.0) -> dict:
    """The notes window's reading once it shows ``slide`` (or what it shows after the timeout)."""
    t0 = time.perf_counter()
    while True:
        got = win.evaluate(WINDOW)
        if (got["h"], got["v"]) == (str(slide["h"]), str(slide["v"])) or time.perf_counter() - t0 > timeout_s:
            return got
        time.sleep(0.2)


def test_the_notes_window_opened_mid_deck_follows_the_deck_rendered(server, browser_ctx, artifacts):
    shots = artifacts / "notes"
    shots.mkdir(parents=True, exist_ok=True)
    shown = notes.slides(nbformat.read(str(ROOT / PART), as_version=4))
    # mid-deck: the first slide from the fifth on with notes on three of it and the three after
    start = next(k for k in range(4, len(shown) - 3) if sum(bool(s["notes"]) for s in shown[k:k + 4]) >= 3)
    page, _ = open_slideshow(browser_ctx, server, PART)
    try:
        for _ in range(start):
            page.keyboard.press("Space")
            time.sleep(0.3)
        assert _deck_slide(page) == start + 1
        with browser_ctx.expect_page(timeout=20_000) as opened:
            page.keyboard.press("t")
        win = opened.value
        win.wait_for_load_state()
        seen = []
        for step in (0, 1, 1, 1, -1, -1, -1):
            if step:
                page.bring_to_front()
                page.keyboard.press("Space" if step > 0 else "Shift+Space")
                time.sleep(0.4)
            n = _deck_slide(page)
            slide = shown[n - 1]
            got = _window_on(win, slide)
            win.screenshot(path=str(shots / f"notes-{len(seen):02d}-slide-{n:02d}.png"))
            assert f"slide {n}/{len(shown)}" in got["where"], (n, got["where"])
            assert got["visible"], f"slide {n}: the notes box is not visible"
            if slide["notes"]:
                assert _flat(got["text"]) == _flat(notes.visible_text(slide["notes_html"])), (n, got["text"][:300])
                assert not notes.RAW_MARKDOWN.search(got["text"]), f"slide {n} shows markdown syntax: {got['text'][:300]}"
            else:
                assert "No notes on this slide" in got["text"], (n, got["text"])
            seen.append((n, bool(slide["notes"])))
        forward = [n for n, _ in seen[:4]]
        assert forward == list(range(start + 1, start + 5)) and [n for n, _ in seen[3:]] == forward[::-1], seen
        assert sum(has for _, has in seen[:4]) >= 3, seen
        win.close()
    finally:
        page.close()
        shutdown_kernels(server)


def test_the_notes_window_gives_the_answers_the_slide_hides(server, browser_ctx, artifacts):
    """On a live slide: the question and the record's answer from the sheet, then this machine's
    once the panel measured; the slide shows the question only until the vote."""
    from demos import topics
    from demos.deck.quiz import rows

    shown = notes.slides(nbformat.read(str(ROOT / PART), as_version=4))
    k = next(i for i, s in enumerate(shown) if s["live"])
    key = shown[k]["live"][0]
    (row,) = [r for r in rows([d for d in topics.load() if d.key == key])]
    page, _ = open_slideshow(browser_ctx, server, PART)
    try:
        for _ in range(k):
            page.keyboard.press("Space")
            time.sleep(0.3)
        with browser_ctx.expect_page(timeout=20_000) as opened:
            page.keyboard.press("t")
        win = opened.value
        win.wait_for_load_state()
        page.bring_to_front()
        want = f"{row['record']['label']}: {row['record']['said']}" if row["record"] else "No committed record answers it"
        win.wait_for_function("w => document.getElementById('jitdeck-notes-question').innerText.includes(w)",
                              arg=want, timeout=120_000)  # the sheet is computed once, in a process of its own
        assert row["question"] in win.evaluate(WINDOW)["question"]
        (cell,) = live_cells(page)[:1]
        ran = time_to_figure(page, cell, timeout_s=240)
        assert ran["shown"] == "figure", ran
        assert not cell.locator(".jitdeck-lectern").is_visible(), "the lecturer's answers show on the slide"
        win.wait_for_function("() => document.getElementById('jitdeck-notes-question').innerText.includes('Live panel')",
                              timeout=30_000)
        got = win.evaluate(WINDOW)["question"]
        win.screenshot(path=str(artifacts / "notes" / "answers.png"))
        assert "Live panel — " in got and want in got, got
        win.close()
    finally:
        page.close()
        shutdown_kernels(server)
