"""The slideshow in a real browser: a real Jupyter server (the one `make present` starts), RISE in
headless Debian chromium driven by Playwright. Every slide of every part is walked (no overflow
of 1280×720, 1024×768 or 1920×1080 once its cells ran, no figure text under 12 screen px, no error
shown), every code cell is run when its slide comes up, and a live cell's
slider is moved in the same walk (the figure changes: ipywidgets 8.1.2 render and respond inside
jupyterlab_rise 0.42.0), the console shows no error
from any origin, and no request leaves localhost. Screenshots go to test-artifacts/browser/.

Without chromium these tests skip with a reason; under CI=true that is a failure instead.
"""
from __future__ import annotations

import pytest

from demos.deck.nbtools import parts
from demos.deck.walk import console_report

from conftest import (FIXTURE_DECK, WALKED_ELSEWHERE, beside_ended, moves_in, walk_beside,  # (server, browser_ctx:
                      walked_deck)  # fixtures there)

pytestmark = [pytest.mark.slow, pytest.mark.browser]

FIXTURE = FIXTURE_DECK
SLIDE_W, SLIDE_H, SLACK = 1280, 720, 2


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
    # every projector: no overflow at 1024×768, 1280×720 or 1920×1080, no figure text under 12 screen px
    from demos.deck.projectors import misfits, projector_report

    readings = [(notebook, v["num"].split("/")[0], v["projectors"]) for v in visited if "projectors" in v]
    assert len(readings) == expected, f"{notebook}: read {len(readings)} slides at the projector sizes"
    with open(artifacts / "browser" / "projectors.md", "a") as f:
        f.write(f"\n## {notebook}\n\n" + projector_report(readings))
    bad = misfits(readings)
    assert not bad, "\n".join(bad)
    # a panel that asks first kept its figure hidden until the walk answered (the room is asked first)
    assert all(walked["hidden"]), f"{notebook}: a figure was on screen before its question was answered"
    if notebook == FIXTURE:  # math is typeset locally (JupyterLab's MathJax 3), nothing fetched
        assert walked["math"] >= 1


def _moved(notebook: str, server, browser_ctx) -> dict:
    """What the walk of ``notebook`` saw when it moved a live cell's control (conftest.moves_in)."""
    walked = walked_deck(notebook, server, browser_ctx)
    wanted = moves_in(notebook)
    assert wanted, f"{notebook}: no live cell with a control to move"
    (text,) = wanted
    assert text in walked["moves"], f"{notebook}: the walk never showed the slide of {text!r}"
    got = walked["moves"][text]
    assert "error" not in got, f"{notebook} {text!r}: {got['error']}"
    return got


def test_live_cell_renders_and_slider_redraws_in_rise(server, browser_ctx):
    """The sample deck's live cell, as the walk ran it: the question first (the figure hidden until
    the answer), then the figure and the mark; typing 11 into the slider's readout redraws and says
    "done in"; a presenter's arrow key on the focused slider moves the slider, not the slideshow."""
    walked = walked_deck(FIXTURE, server, browser_ctx)
    (cell,) = [c for c in walked["cells"] if c["code"] == "sample_panel.panel()"]
    assert cell["asked"] and cell["figure"] and cell["widget"], cell
    assert "you said A" in cell["mark"] and "this machine" in cell["mark"], cell["mark"]
    assert walked["hidden"] and all(walked["hidden"]), walked["hidden"]  # every question came before its figure
    got = _moved(FIXTURE, server, browser_ctx)
    old, new, newer = got["figures"]
    assert got["readout"] == ["6", "11", "12"], got["readout"]
    assert old and new and newer and len({old, new, newer}) == 3, "the figure did not change after the slider moved"
    assert "done in" in got["status"], got["status"]
    assert got["slide_after"] == got["slide"], "the arrow key changed the slide"
    assert got["bottom"] <= SLIDE_H + SLACK, got


def test_part1_live_cell_runs_and_its_slider_moves_in_rise(server, browser_ctx):
    """Part 1's first live cell, as the walk ran it: a click on its slider's track redraws the figure
    (seconds in test-artifacts/browser/first-slide-times.txt)."""
    found = parts()
    if not found:
        pytest.skip("part 1 has not landed in slides/ yet")
    got = _moved(f"slides/{found[0].name}", server, browser_ctx)
    assert got["slider"], "the first live panel of part 1 has no slider"
    old, new = got["figures"]
    assert old and new and new != old, "the figure did not change after the slider moved"
    assert got["slide_after"] == got["slide"], got


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
