"""Every part executes headless (as exports and CI do) with no error, nothing but the panel's
figure under each live cell, and a figure under every live cell; and live, with widgets, the way a
browser kernel runs it. Each part is executed headless once per session (conftest.executed_notebook,
which the export converts too); its live run is the slideshow walk's (conftest.walked_deck). Times
land in test-artifacts/notebook-times.txt."""
from __future__ import annotations

import re

import pytest

from conftest import executed_notebook
from demos.deck.nbtools import parts

PARTS = [p.name for p in parts()]


@pytest.mark.slow
@pytest.mark.parametrize("name", PARTS)
def test_part_executes_headless_with_its_figures(name):
    nb, secs = executed_notebook(name)
    msg = f"{name} executed in {secs:.1f} s"
    live = [c for c in nb.cells if c.cell_type == "code"]
    assert live, msg
    for c in live:
        assert not [o for o in c.outputs if o.output_type == "error"], (c.source, msg)
        # nothing a framework prints natively (profiler log lines, warnings) reaches a slide
        assert not [o for o in c.outputs if o.output_type == "stream" and o.get("name") == "stderr"], \
            (c.source, [o.get("text", "")[:200] for o in c.outputs], msg)
        assert not any("⚠" in o.get("text", "") for o in c.outputs), (c.source, msg)
        if not c.source.strip().endswith("verdict()"):
            assert any("image/png" in o.get("data", {}) for o in c.outputs), (c.source, msg)
    assert secs < 600, msg


@pytest.mark.slow
@pytest.mark.parametrize("name", PARTS)
def test_part_executes_live_with_widgets(name):
    """The way a browser kernel runs it: live widgets on (no DEMOS_STATIC), every cell finishing,
    each live cell showing its panel, whose Output widget holds the figure.

    A browser kernel runs it in the slideshow walk (conftest.walked_deck, which test_browser.py
    checks slide by slide): every code cell of the part, run in RISE when its slide comes up, in
    the kernel `make present` starts. This reads that walk (walked once per session, by whichever
    test asks first) instead of executing the part a second time headless. Where there is no
    browser (a skip outside CI; under CI=true a missing browser fails), the part is executed
    headless with live widgets instead, and the same is checked in the notebook it returns."""
    from conftest import browser_here, walked_deck_for

    if browser_here():
        walked = walked_deck_for(f"slides/{name}")
        cells, figures, msg = _live_in_the_slideshow(name, walked)
    else:
        cells, figures, msg = _live_headless(name)
    live = [c for c in cells if not c["source"].strip().endswith("verdict()")]
    for c in cells:
        assert not c["errors"], (c["source"], msg)
        assert not c["stderr"], (c["source"], c["stderr"], msg)
    for c in live:
        assert c["widget"], (c["source"], msg)
    assert figures >= len(live), f"{figures} panels hold a figure, {len(live)} live cells; {msg}"


def _code_cells(name):
    import nbformat

    from demos.deck.nbtools import SLIDES_DIR

    return [c for c in nbformat.read(str(SLIDES_DIR / name), as_version=4).cells if c.cell_type == "code"]


def _live_in_the_slideshow(name, walked):
    """Every code cell of the part as the walk found it once it ran: (cells, panels showing a
    figure, message). Error outputs show as stderr in JupyterLab, so ``stderr`` holds both."""
    ran = walked["cells"]
    sources = [c.source for c in _code_cells(name)]
    msg = f"{name} walked live in RISE in {walked['walk_s']:.1f} s (its cells ran in {walked['run_s']:.1f} s)"
    # every code cell of the notebook ran, in order: the walk ran each cell of each slide it showed
    assert [r["code"] for r in ran] == [s.strip().splitlines()[-1].strip() for s in sources], (ran, msg)
    assert all(re.fullmatch(r"\[\d+\]:?", r["prompt"]) for r in ran), ([r["prompt"] for r in ran], msg)
    cells = [{"source": s, "errors": [], "stderr": r["stderr"], "widget": r["widget"]} for s, r in zip(sources, ran)]
    figures = sum(1 for r in ran if r["panel"] and r["figure"])
    return cells, figures, msg


def _live_headless(name):
    """The part executed headless with live widgets (no browser here): (cells, Output widgets
    holding a figure, message)."""
    from conftest import ARTIFACTS
    from demos.deck.nbtools import SLIDES_DIR, execute

    nb, secs = execute(SLIDES_DIR / name, timeout=600, static=False)
    msg = f"{name} executed live in {secs:.1f} s"
    ARTIFACTS.mkdir(exist_ok=True)
    with (ARTIFACTS / "notebook-times.txt").open("a") as f:
        f.write(f"{name}\tlive\t{secs:.1f} s\n")
    state = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    figures = sum(1 for m in state.values() if m.get("model_name") == "OutputModel"
                  and any("image/png" in o.get("data", {}) for o in m.get("state", {}).get("outputs", [])))
    cells = [{"source": c.source,
              "errors": [o for o in c.outputs if o.output_type == "error"],
              "stderr": [o for o in c.outputs if o.output_type == "stream" and o.get("name") == "stderr"],
              "widget": any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in c.outputs)}
             for c in nb.cells if c.cell_type == "code"]
    return cells, figures, msg


def test_a_missed_wakeup_costs_one_slice_not_the_timeout():
    """The channel poll that stalled headless live execution: a message that was there all along
    but is only seen when a poll's timeout fires. Polled in slices, it arrives after one slice.
    (This is why one live round per part is enough: the stall has its own test.)"""
    import asyncio
    from queue import Empty

    from demos.deck.nbtools import _sliced

    calls = []

    async def missed_once(timeout=None):
        calls.append(timeout)
        if len(calls) == 1:
            await asyncio.sleep(timeout if timeout is not None else 3600)  # the wake-up never comes
            raise Empty
        return {"msg_type": "execute_reply"}

    # the missed wake-up cost one slice, not the cell's 600 s: the second slice found the message
    assert asyncio.run(_sliced(missed_once, 0.2)(timeout=600))["msg_type"] == "execute_reply"
    assert calls == [pytest.approx(0.2), pytest.approx(0.2)]

    asked = []

    async def never(timeout=None):
        asked.append(timeout)
        await asyncio.sleep(timeout)
        raise Empty

    with pytest.raises(Empty):  # a real timeout still ends the wait: slices of at most 0.2 s, 0.7 s in all
        asyncio.run(_sliced(never, 0.2)(timeout=0.7))
    assert asked and all(0 <= a <= 0.2 + 1e-9 for a in asked) and sum(asked) <= 0.7 + 1e-6, asked
