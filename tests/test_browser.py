"""The slideshow in a real browser: a real Jupyter server (the one `make present` starts), RISE in
headless Debian chromium driven by Playwright. Every slide of every part is walked (no overflow
of 1280×720, no error shown), a live cell is executed and its slider moved (the figure changes:
ipywidgets 8.1.2 render and respond inside jupyterlab_rise 0.42.0), the console shows no error
from any origin, and no request leaves localhost. Screenshots go to test-artifacts/browser/.

Without chromium these tests skip with a reason; under CI=true that is a failure instead.
"""
from __future__ import annotations

import time
from pathlib import Path

import nbformat
import pytest

from demos.deck.nbtools import parts
from demos.deck.walk import CURRENT, console_report, open_slideshow, predict
from demos.deck.walk import shutdown_kernels as _shutdown_kernels

from conftest import FIXTURE_DECK, WALKED_ELSEWHERE, beside_ended, walk_beside, walked_deck  # (server, browser_ctx: fixtures there)

pytestmark = [pytest.mark.slow, pytest.mark.browser]

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = FIXTURE_DECK
SLIDE_W, SLIDE_H, SLACK = 1280, 720, 2
# ipywidgets 8 draws sliders with noUiSlider
SLIDER_TRACK = ".jitdeck-panel .widget-slider .noUi-target"
SLIDER_HANDLE = ".jitdeck-panel .widget-slider .noUi-handle"


def decks() -> list[str]:
    return [FIXTURE] + [f"slides/{p.name}" for p in parts()]


@pytest.mark.parametrize("notebook", decks())
def test_every_slide_fits_and_shows_no_error(server, browser_ctx, artifacts, notebook):
    """Every slide walked, every code cell run when its slide comes up (conftest.walked_deck: the
    same walk test_notebooks.py reads for its live-widget checks). The second half of the decks is
    walked beside the first, with a server and a browser of their own (conftest.walk_beside)."""
    walk_beside(decks()[len(decks()) // 2:])
    walked = walked_deck(notebook, server, browser_ctx)
    visited, expected = walked["visited"], walked["expected"]
    ids = [v["id"] for v in visited]
    assert len(ids) == expected, f"{notebook}: walked {len(ids)} slides {ids}, the notebook has {expected}"
    assert visited[-1]["num"].startswith(f"{expected}/"), visited[-1]
    for v in visited:
        assert (v["width"], v["height"]) == (SLIDE_W, SLIDE_H), v
        assert v["bottom"] <= SLIDE_H + SLACK, f"{notebook} {v['id']} overflows: content reaches y={v['bottom']:.0f}"
        assert v["right"] <= SLIDE_W + SLACK, f"{notebook} {v['id']} overflows: content reaches x={v['right']:.0f}"
        assert not v["errors"], f"{notebook} {v['id']} shows an error: {v['errors']}"
    if notebook == FIXTURE:  # math is typeset locally (JupyterLab's MathJax 3), nothing fetched
        assert walked["math"] >= 1


def _go_to_cell(page, text: str, limit: int = 80) -> None:
    for _ in range(limit):
        if page.locator("section.present .jp-CodeCell", has_text=text).count():
            return
        page.keyboard.press("Space")
        time.sleep(0.2)
    raise AssertionError(f"no slide with a code cell {text!r}")


def _run_live_cell(page, text: str, timeout_ms: int, asked: bool = False) -> str:
    cell = page.locator("section.present .jp-CodeCell", has_text=text).first
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")
    img = cell.locator(".jitdeck-panel .jp-OutputArea-output img").first
    choices = cell.locator(".jitdeck-ask .jitdeck-choice")
    if asked:  # the question comes first, the figure only after a choice
        choices.first.wait_for(state="visible", timeout=timeout_ms)
        assert not img.is_visible()
        predict(cell, 1)
    img.wait_for(state="visible", timeout=timeout_ms)
    if asked:
        mark = cell.locator(".jitdeck-mark").first
        mark.wait_for(state="visible", timeout=timeout_ms)
        assert "you said B" in mark.inner_text() and "this machine" in mark.inner_text(), mark.inner_text()
    page.keyboard.press("Escape")
    # The widget rendered as a widget: a real slider, not the text repr of RISE issues #119/#126.
    assert cell.locator(".jitdeck-panel .widget-slider, .jitdeck-panel .widget-dropdown").count() >= 1
    out_text = cell.locator(".jp-Cell-outputArea").inner_text()
    assert "VBox(" not in out_text and "IntSlider(" not in out_text and "SelectionSlider(" not in out_text
    return img.get_attribute("src")


def _wait_new_image(cell, old_src: str, timeout_s: float) -> str:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout_s:
        imgs = cell.locator(".jitdeck-panel .jp-OutputArea-output img")
        if imgs.count():
            src = imgs.first.get_attribute("src")
            if src and src != old_src:
                return src
        time.sleep(0.2)
    raise AssertionError("the figure did not change after the slider moved")


def test_live_cell_renders_and_slider_redraws_in_rise(server, browser_ctx, artifacts):
    page, _ = open_slideshow(browser_ctx, server, FIXTURE)
    try:
        _go_to_cell(page, "sample_panel.panel()")
        old = _run_live_cell(page, "sample_panel.panel()", 120_000, asked=True)
        cell = page.locator("section.present .jp-CodeCell", has_text="sample_panel.panel()").first
        page.screenshot(path=str(artifacts / "browser" / "live-before.png"))
        readout = cell.locator(".widget-readout").first
        assert readout.inner_text().strip() == "6"
        readout.click()
        readout.evaluate("e => window.getSelection().selectAllChildren(e)")  # the old value, to type over
        page.keyboard.type("11")
        page.keyboard.press("Enter")
        new = _wait_new_image(cell, old, 60)
        assert new != old
        assert readout.inner_text().strip() == "11"
        for _ in range(100):  # the status line follows the image by a moment
            if "done in" in cell.locator(".jitdeck-panel").inner_text():
                break
            time.sleep(0.2)
        assert "done in" in cell.locator(".jitdeck-panel").inner_text()
        # a presenter's arrow key on a focused slider moves the slider, not the slideshow
        slide = page.evaluate(CURRENT)["id"]
        cell.locator(SLIDER_HANDLE).first.focus()  # focus without a click that could move it
        before = int(readout.inner_text().strip())
        page.keyboard.press("ArrowRight")
        newer = _wait_new_image(cell, new, 120)
        assert int(readout.inner_text().strip()) == before + 1 and newer != new
        assert page.evaluate(CURRENT)["id"] == slide, "the arrow key changed the slide"
        page.screenshot(path=str(artifacts / "browser" / "live-after.png"))
        assert page.evaluate(CURRENT)["bottom"] <= SLIDE_H + SLACK
    finally:
        page.close()
        _shutdown_kernels(server)


def _first_live_cell(nb) -> str | None:
    for c in nb.cells:
        st = c.metadata.get("slideshow", {}).get("slide_type", "-")
        if c.cell_type == "code" and st != "skip" and "(" in c.source:
            return c.source.strip().splitlines()[-1]
    return None


def test_part1_live_cell_runs_and_its_slider_moves_in_rise(server, browser_ctx, artifacts):
    found = parts()
    if not found:
        pytest.skip("part 1 has not landed in slides/ yet")
    nb_path = found[0]
    nb = nbformat.read(str(nb_path), as_version=4)
    text = _first_live_cell(nb)
    assert text, f"{nb_path.name} has no live cell"
    page, _ = open_slideshow(browser_ctx, server, f"slides/{nb_path.name}")
    try:
        _go_to_cell(page, text)
        t0 = time.perf_counter()
        old = _run_live_cell(page, text, 300_000, asked=True)
        first_render = time.perf_counter() - t0
        cell = page.locator("section.present .jp-CodeCell", has_text=text).first
        page.screenshot(path=str(artifacts / "browser" / f"{nb_path.stem}-live-before.png"))
        track = cell.locator(SLIDER_TRACK).first
        assert track.count(), "the first live panel of part 1 has no slider"
        box = track.bounding_box()
        handle = cell.locator(SLIDER_HANDLE).first.bounding_box()
        x = box["x"] + (0.15 if handle["x"] > box["x"] + box["width"] / 2 else 0.85) * box["width"]
        t1 = time.perf_counter()
        page.mouse.click(x, box["y"] + box["height"] / 2)
        new = _wait_new_image(cell, old, 240)
        redraw = time.perf_counter() - t1
        assert new != old
        page.screenshot(path=str(artifacts / "browser" / f"{nb_path.stem}-live-after.png"))
        with open(artifacts / "browser" / "first-slide-times.txt", "a") as f:
            f.write(f"{nb_path.name}\tfirst live cell {text!r}: figure after {first_render:.1f} s, "
                    f"slider redraw {redraw:.1f} s\n")
    finally:
        page.close()
        _shutdown_kernels(server)


def test_the_slideshow_logs_no_console_error_from_any_origin(browser_ctx, artifacts):
    """After every part was walked and run: no console error, page error or failed request from
    any origin, the deck's own files, RISE's bundle, JupyterLab or the widgets (warnings are
    listed in test-artifacts/browser/console.md, not failed on)."""
    beside_ended()
    console = browser_ctx.console + WALKED_ELSEWHERE["console"]  # the walks beside, or test_notebooks.py's
    report = console_report(console)
    (artifacts / "browser" / "console.md").write_text(report)
    errors = [c for c in console if c["kind"] != "console.warning"]
    assert not errors, report


def test_no_request_left_localhost(server, browser_ctx):
    """Runs last in this module: every request the slideshow made went to the local server."""
    beside_ended()
    urls = browser_ctx.requests + WALKED_ELSEWHERE["requests"]
    assert urls, "the browser made no request at all"
    hosts = {u.split("/")[2].split(":")[0] for u in urls if u.startswith(("http://", "https://", "ws://", "wss://"))}
    assert hosts <= {"127.0.0.1", "localhost"}, f"requests left the machine: {sorted(hosts)}"
