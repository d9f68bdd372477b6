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
def test_every_text_stays_inside_the_figure_readable_and_apart(demo, records):
    """No label, title, tick, note or footer leaves the image at the slide's size, none is drawn
    under plots.MIN_TEXT_PT (12 px on the smallest projector's screen) and no two overlap: drawn
    from the newest committed record, alone and beside itself as the reference (the longest notes).
    The measured figures are checked the same way in test_demos (this machine's numbers)."""
    recorded = _drawn(demo, records)
    for reference in (None, copy.deepcopy(recorded)):
        fig = _fig(demo.figure(copy.deepcopy(recorded), reference))
        where = (demo.key, "beside itself" if reference else "alone")
        assert not plots.texts_outside(fig), where
        assert not plots.texts_too_small(fig), where
        assert not plots.texts_overlapping(fig), where


def test_a_clipped_label_is_found():
    """The check itself: a y label longer than its axes is tall leaves the figure, and is named."""
    fig, ax = plots.figure(size=(6.0, 1.2))
    ax.set_ylabel("a label far longer than this short axes is tall")
    assert any("a label far longer" in t and "past the" in t for t in plots.texts_outside(fig))
    ax.set_ylabel("short")
    assert not plots.texts_outside(fig)


def test_the_smallest_text_is_read_on_the_smallest_projector():
    """MIN_TEXT_PT is derived from the projectors the deck supports and the slide reveal.js lays out:
    the slide's size and margin are the deck's RISE settings, and a text of MIN_TEXT_PT is
    MIN_SCREEN_PX on the smallest projector's screen (1024×768: the slide at 0.768, 11.25 pt). The
    slideshow's slide is the window (RISE_SETTINGS: "100%"); the export lays out SLIDE_PX."""
    from demos.deck.nbtools import RISE_SETTINGS

    assert plots.SLIDE_PX == (1280, 720) and (RISE_SETTINGS["width"], RISE_SETTINGS["height"]) == ("100%", "100%")
    assert plots.REVEAL_MARGIN == RISE_SETTINGS["margin"]
    assert plots.screen_scale(*plots.SLIDE_PX) == pytest.approx(1 - plots.REVEAL_MARGIN)
    smallest = min(plots.PROJECTORS, key=lambda wh: plots.screen_scale(*wh))
    assert smallest == (1024, 768) and plots.screen_scale(*smallest) == pytest.approx(1024 * 0.96 / 1280)
    on_screen = plots.MIN_TEXT_PT * plots.DPI / 72 * plots.screen_scale(*smallest)  # px of a MIN_TEXT_PT text
    assert on_screen == pytest.approx(plots.MIN_SCREEN_PX)
    for w, h in plots.PROJECTORS:  # every other projector shows it larger
        assert plots.MIN_TEXT_PT * plots.DPI / 72 * plots.screen_scale(w, h) >= plots.MIN_SCREEN_PX - 1e-9
    assert plots.FOOTER_PT >= plots.MIN_TEXT_PT
    assert min(v for k, v in plots.STYLE.items() if k.endswith("size")) >= plots.MIN_TEXT_PT


def test_a_small_text_is_found():
    """The check itself: a 9 pt note is named with its size, as is code drawn at 9 pt; at
    MIN_TEXT_PT, hidden, or on a tick outside the view, nothing is."""
    fig, ax = plots.figure()
    ax.plot([0, 1], [0, 1])
    note = ax.text(0.5, 0.5, "a note in nine points", fontsize=9)
    assert plots.texts_too_small(fig) == ["'a note in nine points' (9 pt)"]
    assert plots.texts_too_small(fig, pt=8) == []
    note.set_fontsize(plots.MIN_TEXT_PT)
    assert plots.texts_too_small(fig) == []
    note.set_fontsize(9)
    note.set_visible(False)
    assert plots.texts_too_small(fig) == []
    ax.set_xticks([0, 0.5, 1, 5], ["0", "½", "1", "five"], fontsize=9)  # 5 lies outside the view: not drawn
    ax.set_xlim(0, 1)
    assert sorted(plots.texts_too_small(fig)) == ["'0' (9 pt)", "'1' (9 pt)", "'½' (9 pt)"]
    code, _ = plots.figure()
    plots.draw_code(code, 0.0, 0.9, 0.5, 0.5, ["x = 1"], fontsize=9)
    assert plots.texts_too_small(code) == ["code drawn at 9 pt"]
    plots.draw_code(code, 0.5, 0.9, 0.5, 0.5, ["x = 1"])  # the default size is readable
    assert plots.texts_too_small(code) == ["code drawn at 9 pt"]


def test_overlapping_texts_are_found():
    """The check itself: two notes drawn on one spot are named as a pair; moved apart, or only
    touching, they are not; a text never overlaps itself; a rotated label is its box; a note on
    the tick labels, and the footer on them, are found too."""
    fig, ax = plots.figure()
    ax.plot([0, 1], [0, 1])
    a = ax.text(0.3, 0.5, "the first note", transform=ax.transAxes)
    b = ax.text(0.32, 0.52, "the second note", transform=ax.transAxes)
    found = plots.texts_overlapping(fig)
    assert len(found) == 1 and "'the first note' overlaps 'the second note'" in found[0], found
    b.set_position((0.7, 0.2))
    assert plots.texts_overlapping(fig) == []
    # touching: b starts where a ends, on the same line (placed in the figure's pixels)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.transforms import IdentityTransform

    for t in (a, b):
        t.set_transform(IdentityTransform())
        t.set_verticalalignment("bottom")
    a.set_position((300, 200))
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    b.set_position((a.get_window_extent(canvas.get_renderer()).x1 + 0.5, 200))
    assert plots.texts_overlapping(fig) == []
    b.set_position((a.get_window_extent(canvas.get_renderer()).x1 - 5, 200))  # 5 px into it: found
    assert len(plots.texts_overlapping(fig)) == 1
    # a label turned on its side, under the note's start: its box is upright, and it meets the note
    b.set_position((310, 120))
    b.set_rotation(90)
    assert any("'the second note'" in t for t in plots.texts_overlapping(fig))
    b.set_visible(False)
    assert plots.texts_overlapping(fig) == []
    # a note on the x tick labels, and a footer drawn over them
    ax.set_xticks([0, 0.5, 1])
    ax.text(0.5, -0.02, "a note on the ticks", transform=ax.get_xaxis_transform(), ha="center", va="top")
    assert any("'a note on the ticks' overlaps '0.5'" in t or "'0.5' overlaps 'a note on the ticks'" in t
               for t in plots.texts_overlapping(fig)), plots.texts_overlapping(fig)
    low, lx = plots.figure()
    lx.plot([0, 1], [0, 1])
    low.text(0.0, 0.0, "a footer stamped by hand, under no layout\nover the tick labels\nand the axes", fontsize=14)
    low.get_layout_engine().set(rect=(0, 0, 1, 1))
    assert any("a footer stamped by hand" in t for t in plots.texts_overlapping(low))
    plots.stamp(low, "a footer as stamp_figure draws it: the layout keeps the axes above it")
    low.texts[0].set_visible(False)
    assert plots.texts_overlapping(low) == []


def test_a_figure_drawn_again_is_laid_out_as_at_first():
    """The checks and to_png each draw the figure: constrained layout starts from the grid cells
    every time, so the second draw shows what the first did (it drifted: an axes with a note
    wider than itself shrank draw after draw, until its neighbour's title left the image)."""
    fig, (a, b, c) = plots.figure(1, 3, width_ratios=[1.3, 1.3, 0.85])
    a.axis("off")
    a.text(0, 0.8, "max-autotune: tuning 9.1 s, 4 candidates", transform=a.transAxes)
    a.scatter([], [], label="library GEMM")
    a.scatter([], [], label="generated kernel")
    a.legend(loc="lower left", bbox_to_anchor=(0, -0.06), ncol=2)
    b.barh([0, 1], [1, 2])
    b.set_yticks([0, 1], ["C++ micro-GEMM (FP32Vec)", "MKL linear"])
    c.barh([0, 1], [1, 2])
    c.set_yticks([0, 1], ["max-autotune", "eager"])
    first = _pixels(plots.to_png(fig))
    positions = [ax.get_position().bounds for ax in fig.axes]
    plots.texts_outside(fig)
    plots.texts_overlapping(fig)
    assert [ax.get_position().bounds for ax in fig.axes] == positions
    assert (_pixels(plots.to_png(fig)) == first).all()
