"""A figure's texts as drawn: which texts a figure shows and where (:func:`drawn_texts`, read by
``plots.texts_outside``, ``plots.texts_too_small`` and ``plots.texts_overlapping``), and how many
words fit a line of a width in pixels (:func:`wrap_px`, the footer's wrapping)."""
from __future__ import annotations

import functools
import math

from matplotlib.figure import Figure

from demos.engine.figure_slots import ticks_once


def drawn_texts(fig: Figure):
    """Draw ``fig`` at its own size and return ((width, height) in px, the texts it shows, each with
    its drawn window extent in px, in drawing order). A text is shown when it has something to say, it is
    visible, and so are its axes (and its axis: no tick labels of an axes turned off), its legend,
    and its tick (matplotlib keeps tick labels for ticks outside the view, and does not draw
    them); an annotation whose point leaves its axes is not drawn either. The extent is the text's
    own box (an annotation's arrow is not text); a rotated text's, the upright box around it."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Annotation, Text

    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    with ticks_once():
        canvas.draw()
    renderer = canvas.get_renderer()
    undrawn = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            scale = axis.get_transform()  # where the axis draws them: on a log axis 10^-8 is far below 10^-5
            lo, hi = sorted(scale.transform(list(axis.get_view_interval())))
            shown = ax.axison and axis.get_visible()
            if not shown:
                undrawn.update((id(axis.label), id(axis.offsetText)))
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                loc = tick.get_loc()
                at = None if loc is None else float(scale.transform([loc])[0])
                if not shown or at is None or not lo - 1e-9 * abs(hi - lo) <= at <= hi + 1e-9 * abs(hi - lo):
                    undrawn.update((id(tick.label1), id(tick.label2)))
    for legend in [*fig.legends, *(ax.get_legend() for ax in fig.axes)]:
        if legend is not None and not legend.get_visible():
            undrawn.update(id(t) for t in legend.findobj(Text))
    out, seen = [], set()
    for t in fig.findobj(Text):
        if id(t) in seen or id(t) in undrawn:
            continue
        seen.add(id(t))
        if not (t.get_visible() and t.get_text().strip()) or (t.axes is not None and not t.axes.get_visible()):
            continue
        if isinstance(t, Annotation) and not t._check_xy(renderer):  # its point is clipped: not drawn
            continue
        out.append((t, Text.get_window_extent(t, renderer)))
    return canvas.get_width_height(), out


def named(t) -> str:
    """A text as a check names it: its first 60 characters, quoted."""
    return repr(t.get_text()[:60])


@functools.lru_cache(maxsize=None)
def _sans_font(px: int):
    from matplotlib.font_manager import FontProperties, findfont
    from PIL import ImageFont

    return ImageFont.truetype(findfont(FontProperties(family="DejaVu Sans")), px)


def wrap_px(text: str, font_px: float, width_px: float, indent: str = "") -> list[str]:
    """``text`` in lines no wider than ``width_px`` pixels of DejaVu Sans ``font_px`` pixels high
    (measured, a little over matplotlib's own width); lines after the first start with ``indent``.
    Wrapped by a count of characters at 0.6 em each, a footer of nine lines of verdicts took a line
    more than it needed, and that line's height from the axes above it."""
    font = _sans_font(math.ceil(font_px))
    lines: list[str] = []
    line = ""
    for word in text.split():
        wider = f"{line} {word}" if line else (indent if lines else "") + word
        if line and font.getlength(wider) > width_px:
            lines.append(line)
            line = indent + word
        else:
            line = wider
    return lines + [line] if line else lines
