"""A live panel redraws into the figure it drew last (``plots.keeping``): its axes, their ticks
and its layout stay, and only what the data changes is drawn anew. The promise is that this is
invisible: a reused figure redrawn with any data gives the same pixels as a new figure drawn with
that data, whatever it drew before. Every demo is checked with data the repository holds (the
committed GPU record), so nothing is measured here; the variants change tick labels, legends,
texts and axis ranges (a reference drawn beside, every number scaled), which is what moves a
layout."""
from __future__ import annotations

import copy
import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import demos  # noqa: F401  (environment before torch/JAX)
from demos import topics
from demos.engine import figure_slots, plots
from demos.engine.results import Record

DEMOS = [d for d in topics.load() if not d.panel.worker]
RECORDS = sorted(Path(__file__).resolve().parent.parent.glob("assets/results/*.json"))


def _pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


def _matplotlib_pixels(fig) -> np.ndarray:
    """The figure as matplotlib's Agg canvas draws it."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())[..., :3]


def _scaled(data, k: float = 3.7):
    """Every float ×k (sizes and counts, which are ints, stay): new tick labels and ranges."""
    if isinstance(data, dict):
        return {key: _scaled(v, k) for key, v in data.items()}
    if isinstance(data, list):
        return [_scaled(v, k) for v in data]
    return data * k if isinstance(data, float) else data


def _fig(result):
    return result[0] if isinstance(result, tuple) else result


@pytest.fixture(scope="module")
def records():
    if not RECORDS:
        pytest.skip("no committed record in assets/results")
    return [Record.load(p) for p in reversed(RECORDS)]  # newest first


def _drawn(demo, records) -> dict:
    """What the test draws: the demo from the newest committed record that holds it; a demo no
    record holds yet (a new one, or one no GPU has recorded) is not skipped: this machine's
    measurement at its defaults, as a panel draws it."""
    recorded = next((r for rec in records if (r := demo.reference(None, record=rec, seed=False)) is not None), None)
    if recorded is not None:
        return recorded
    from demos.deck.verified import footer

    data = demo.run()
    return {**data, "verdicts": footer(demo, data)}  # the footer's lines, as Demo.draw adds them


@pytest.mark.parametrize("demo", DEMOS, ids=[d.key for d in DEMOS])
def test_a_reused_figure_draws_what_a_new_one_draws(demo, records):
    """Each demo from the newest committed record that holds it (else as measured here), as the deck
    draws it."""
    recorded = _drawn(demo, records)
    variants = [(recorded, None), (recorded, copy.deepcopy(recorded))]
    fresh = [_pixels(plots.to_png(_fig(demo.figure(*copy.deepcopy(v))))) for v in variants]
    try:
        scaled = (_scaled(copy.deepcopy(recorded)), None)
        fresh.append(_pixels(plots.to_png(_fig(demo.figure(*copy.deepcopy(scaled))))))
        variants.append(scaled)
    except Exception:  # data no real run could give (a fraction over 1): the other variants stay
        pass
    # `to_png` draws what matplotlib's own draw does
    for v, px in zip(variants, fresh):
        assert (_matplotlib_pixels(_fig(demo.figure(*copy.deepcopy(v)))) == px).all(), demo.key

    slot = figure_slots.FigureSlot()
    order = list(range(len(variants))) + [0, 0] + list(range(len(variants)))[::-1]
    figures = set()
    for step, i in enumerate(order):
        with figure_slots.drawing_into(slot):
            fig = _fig(demo.figure(*copy.deepcopy(variants[i])))
        figures.add(id(fig))
        layouts = fig.get_layout_engine().runs
        got = _pixels(plots.to_png(fig))
        assert got.shape == fresh[i].shape, (demo.key, step)
        differ = int((got != fresh[i]).any(axis=-1).sum())
        assert differ == 0, f"{demo.key}: after {order[:step]}, variant {i} differs from a new figure in {differ} pixels"
        if step > 0 and i == order[step - 1]:  # the same drawing again: the layout is not run again
            assert fig.get_layout_engine().runs == layouts, demo.key
        elif step == 0:
            assert fig.get_layout_engine().runs == layouts + 1, demo.key
    # one figure per shape the demo draws (a reference beside may add a panel), each kept
    assert len(figures) <= len(variants) and slot.reused == len(order) - len(figures), demo.key


def test_a_second_figure_in_one_redraw_is_a_new_one():
    slot = figure_slots.FigureSlot()
    with figure_slots.drawing_into(slot):
        a, _ = plots.figure()
        b, _ = plots.figure()
    assert a is not b
    with figure_slots.drawing_into(slot):
        c, _ = plots.figure()
    assert c is a and slot.reused == 1
    d, _ = plots.figure()  # outside a panel's redraw: always new
    assert d is not a


def test_what_a_figure_function_adds_goes_before_the_next_redraw():
    slot = figure_slots.FigureSlot()
    for n in (1, 2, 3):
        with figure_slots.drawing_into(slot):
            fig, ax = plots.figure()
            ax.plot([1, 2, 3], [n, n, n], label=f"n={n}")
            ax.legend()
            twin = ax.twinx()
            twin.plot([1, 2], [0, 1])
            fig.suptitle(f"redraw {n}")
            fig.text(0.5, 0.5, "x")
        plots.to_png(fig)
        assert len(ax.lines) == 1 and [t.get_text() for t in ax.get_legend().get_texts()] == [f"n={n}"]
        assert len(fig.axes) == 2 and len(fig.texts) == 2 and fig._suptitle.get_text() == f"redraw {n}"  # the suptitle is a figure text
        assert ax.get_ylim()[0] < n < ax.get_ylim()[1]


def test_a_figure_that_cannot_be_emptied_is_replaced_by_a_new_one(monkeypatch):
    slot = figure_slots.FigureSlot()
    with figure_slots.drawing_into(slot):
        first, _ = plots.figure()

    def broken(fig):
        raise AttributeError("a matplotlib this code does not know")

    monkeypatch.setattr(plots, "empty", broken)
    with figure_slots.drawing_into(slot):
        second, ax = plots.figure()
        ax.plot([0, 1], [0, 1])
    assert second is not first and slot.reused == 0
    assert plots.to_png(second)[:8] == b"\x89PNG\r\n\x1a\n"
    monkeypatch.undo()
    with figure_slots.drawing_into(slot):
        third, _ = plots.figure()
    assert third is second and slot.reused == 1


def test_the_tick_patch_is_in_place_only_while_to_png_draws():
    """matplotlib's private ``Axis._update_ticks`` is the deck's only during a ``to_png`` draw:
    importing the deck changes nothing of matplotlib, and a draw that fails puts it back too."""
    import subprocess
    import sys

    from matplotlib.artist import Artist
    from matplotlib.axis import Axis

    code = ("import matplotlib.axis as a; own = a.Axis.__dict__['_update_ticks']; import demos.engine.plots; "
            "assert a.Axis.__dict__['_update_ticks'] is own, a.Axis.__dict__['_update_ticks']")
    r = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parent.parent, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr

    own = Axis.__dict__["_update_ticks"]
    assert own.__module__ == "matplotlib.axis" and own is not figure_slots._update_ticks_once
    seen = []

    class Probe(Artist):
        fail = False

        def draw(self, renderer):
            seen.append(Axis.__dict__["_update_ticks"])
            if self.fail:
                raise RuntimeError("a draw that fails")

    fig, ax = plots.figure()
    ax.plot([1, 2, 3], [1, 4, 9])
    probe = Probe()
    probe.set_in_layout(False)
    fig.add_artist(probe)
    png = plots.to_png(fig)
    assert seen == [figure_slots._update_ticks_once] and png[:8] == b"\x89PNG\r\n\x1a\n"
    assert Axis.__dict__["_update_ticks"] is own and figure_slots._TICKS is None
    probe.fail = True
    with pytest.raises(RuntimeError):
        plots.to_png(fig)
    assert seen[-1] is figure_slots._update_ticks_once and Axis.__dict__["_update_ticks"] is own and figure_slots._TICKS is None


@pytest.mark.parametrize("demo", DEMOS, ids=[d.key for d in DEMOS])
def test_every_text_stays_inside_the_figure(demo, records):
    """No label, title, tick, note or footer leaves the image at the slide's size: drawn from the
    newest committed record, alone and beside itself as the reference (the longest notes). The
    measured figures are checked the same way in test_demos (this machine's numbers)."""
    recorded = _drawn(demo, records)
    for reference in (None, copy.deepcopy(recorded)):
        assert not plots.texts_outside(_fig(demo.figure(copy.deepcopy(recorded), reference))), demo.key


def test_a_clipped_label_is_found():
    """The check itself: a y label longer than its axes is tall leaves the figure, and is named."""
    fig, ax = plots.figure(size=(6.0, 1.2))
    ax.set_ylabel("a label far longer than this short axes is tall")
    assert any("a label far longer" in t and "past the" in t for t in plots.texts_outside(fig))
    ax.set_ylabel("short")
    assert not plots.texts_outside(fig)
