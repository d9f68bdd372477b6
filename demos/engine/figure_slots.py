"""Figure slots: a live panel redraws into the figure it drew last.

A panel owns a :class:`FigureSlot`; inside :func:`drawing_into` (one redraw), ``plots.figure``
hands back the figure the previous redraw drew, emptied (:func:`empty`) but keeping its axes, their
ticks and its layout. :class:`SlotLayout` (matplotlib's constrained layout) lays the figure out
again only when what places its axes changed (:func:`layout_signature`), and :func:`ticks_once`
lets each axis locate its ticks once per state within a draw (a patch of matplotlib's private
``Axis._update_ticks``, in place only while ``plots.to_png`` draws)."""
from __future__ import annotations

import contextlib
import threading
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.axis import Axis
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine

class FigureSlot:
    """The figures one live panel keeps between redraws, by the :func:`figure` call that made them."""

    def __init__(self) -> None:
        self.figures: dict[tuple, tuple[Figure, Any]] = {}
        self.used: set[tuple] = set()  # keys handed out in the current redraw (a second call gets a new figure)
        self.reused = 0                # how many redraws drew into a reused figure


_SLOTS: list[FigureSlot] = []


@contextlib.contextmanager
def drawing_into(slot: FigureSlot):
    """Within this block, :func:`figure` draws into ``slot``'s reused figure (one redraw)."""
    slot.used = set()
    _SLOTS.append(slot)
    try:
        yield slot
    finally:
        _SLOTS.pop()


def _reuse_ticks() -> None:
    pass


def empty(fig: Figure, style: dict) -> None:
    """Remove everything a figure function drew, as ``Figure.clear`` would, but keep the axes made
    by :func:`figure`, their tick objects (building ticks is most of a new figure's cost) and the
    layout. Each reused axes is reset by ``Axes.clear`` (scales, locators, limits, labels, titles)
    under the deck's style, as a new one would be; axes added later (``add_axes``, ``twinx``) go."""
    from matplotlib.transforms import Bbox

    base = fig._jitdeck_base
    for ax in list(fig.axes):
        if ax not in base:
            fig.delaxes(ax)
    with plt.rc_context(style):
        for ax in base:
            ax.dataLim.set_points(Bbox.null().get_points())  # as a new axes starts (`clear` keeps them)
            ax._viewLim.set_points(Bbox.unit().get_points())
            axes = list(ax._axis_map.values())
            for axis in axes:  # `clear` (and a spine placed anew) would throw the ticks away and build new ones
                axis.reset_ticks = _reuse_ticks
            try:
                ax.clear()  # which also sets the grid on the reused ticks as on new ones
                for spine in ax.spines.values():
                    spine._ensure_position_is_set()
            finally:
                for axis in axes:
                    del axis.reset_ticks
            ax.set_visible(True)
            ax.set_in_layout(True)
    fig.artists, fig.lines, fig.patches, fig.texts, fig.images, fig.legends = [], [], [], [], [], []
    fig._suptitle = fig._supxlabel = fig._supylabel = None
    engine = fig.get_layout_engine()
    if isinstance(engine, SlotLayout):
        engine.set(**fig._jitdeck_layout)
    fig.stale = True



# ---------------------------------------------------------------------------------------
# Ticks located once per state within a draw. Matplotlib locates and formats an axis' ticks each
# time it asks for them: in each of the layout's passes for the axes, its label, its title and
# its siblings, then in the drawing, and a log axis with its minor ticks takes ~1 ms each time.
# Within one draw (:func:`to_png`), an axis whose view, size, scale, locators and formatters are
# what they were the last time it located its ticks hands back the ticks it located then.
# The patch of matplotlib's private ``Axis._update_ticks`` is in place only during that draw
# (:func:`ticks_once`): importing this module changes nothing of matplotlib, and any other
# figure of the process (a notebook's own, inline) is drawn by matplotlib's own code.
# ---------------------------------------------------------------------------------------
_TICKS: dict[int, tuple] | None = None
_update_ticks = Axis._update_ticks  # matplotlib's own (what `ticks_once` puts back)


def _update_ticks_once(self):
    if _TICKS is None:
        return _update_ticks(self)
    key = (tuple(self.get_view_interval()), tuple(self.axes.bbox.bounds), id(self._scale), id(self.major.locator),
           id(self.major.formatter), id(self.minor.locator), id(self.minor.formatter))
    last = _TICKS.get(id(self))
    if last is not None and last[0] == key:
        return list(last[1])
    ticks = _update_ticks(self)
    _TICKS[id(self)] = (key, list(ticks))
    return ticks


_TICKS_LOCK = threading.RLock()  # one patched draw at a time: the patch is the whole process's while it lasts


@contextlib.contextmanager
def ticks_once():
    """Within the block, each axis locates its ticks once per state: ``Axis._update_ticks`` is
    the deck's, and what it was before (matplotlib's own) again afterwards; a nested block keeps
    the outer one's."""
    global _TICKS
    with _TICKS_LOCK:
        outer = _TICKS
        if outer is None:
            saved = Axis.__dict__["_update_ticks"]
            _TICKS = {}
            Axis._update_ticks = _update_ticks_once
        try:
            yield
        finally:
            if outer is None:
                Axis._update_ticks = saved
            _TICKS = outer


class SlotLayout(ConstrainedLayoutEngine):
    """Matplotlib's constrained layout, run again on a reused figure only when what places its axes
    changed (:func:`layout_signature`): a redraw that moves data but no label, tick label, title,
    legend or text sticking out of an axes keeps the positions the last layout computed."""

    skip_unchanged = False
    _signature: tuple | None = None
    _placed: dict = {}
    runs = 0

    def execute(self, fig):
        renderer = fig._get_renderer()
        if self.skip_unchanged and self._signature is not None and layout_signature(fig, renderer) == self._signature:
            for name, (pos, va) in self._placed.items():  # a suptitle drawn anew goes where the layout put it
                text = getattr(fig, name)
                if text is not None and text._autopos:
                    text.set_position(pos)
                    text.set_verticalalignment(va)
            return None
        if self.runs:
            # lay out from where a new figure starts (each axes at its grid cell), so a reused figure
            # is placed exactly as a new one would be: constrained layout depends on where it starts (a
            # figure drawn again, as the text checks and then to_png draw it, drifted draw after draw)
            for ax in fig.axes:
                spec = ax.get_subplotspec()
                if spec is not None:
                    ax._set_position(spec.get_position(fig))
        out = super().execute(fig)
        self.runs += 1
        if self.skip_unchanged:
            self._signature = layout_signature(fig, renderer)
            self._placed = {name: (text.get_position(), text.get_verticalalignment())
                            for name in ("_suptitle", "_supxlabel", "_supylabel")
                            if (text := getattr(fig, name)) is not None}
        return out


def layout_signature(fig: Figure, renderer) -> tuple:
    """Everything constrained layout reads to place the axes of ``fig``, at the axes' current
    positions: the size and the layout's parameters; per axes its visibility, titles, axis labels,
    tick labels and offset texts, and where any artist not clipped to it sticks out of it (in
    whole pixels); the figure's suptitles and legends."""
    sig: list = [tuple(fig.get_size_inches()), tuple(sorted((k, repr(v)) for k, v in fig.get_layout_engine().get().items()))]
    for ax in fig.axes:
        if not ax.get_visible() or not ax.get_in_layout():
            sig.append(None)
            continue
        row: list = [ax.axison, ax.get_title("left"), ax.get_title(), ax.get_title("right")]
        for axis in ax._axis_map.values():
            ticks = axis._update_ticks()  # what the axis draws, located (and its offset text set) as drawn
            row.append((axis.get_visible(), axis.label.get_text(), axis.get_label_position(),
                        tuple((t.label1.get_text() if t.label1.get_visible() else "",
                               t.label2.get_text() if t.label2.get_visible() else "") for t in ticks),
                        axis.offsetText.get_text(), tuple(sorted((k, repr(v)) for k, v in axis._major_tick_kw.items()))))
        box = ax.bbox
        for a in ax.get_default_bbox_extra_artists():
            if a in ax.spines.values() or a is ax.patch:
                continue
            try:
                bb = a.get_tightbbox(renderer)
            except Exception:
                bb = None
            if bb is None or not (0 < bb.width < float("inf") and 0 < bb.height < float("inf")):
                continue
            out = (round(max(0.0, box.x0 - bb.x0)), round(max(0.0, bb.x1 - box.x1)),
                   round(max(0.0, box.y0 - bb.y0)), round(max(0.0, bb.y1 - box.y1)))
            if any(out):
                row.append((type(a).__name__, out))
        sig.append(tuple(row))
    for t in (fig._suptitle, fig._supxlabel, fig._supylabel):
        sig.append(None if t is None else (t.get_text(), t.get_fontsize()))
    for leg in fig.legends:
        sig.append((leg._loc, repr(leg._outside_loc), tuple(t.get_text() for t in leg.get_texts())))
    return tuple(sig)
