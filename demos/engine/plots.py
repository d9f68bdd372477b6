"""One look for every figure: palette, slide-sized figures, and the 'where measured' stamp."""
from __future__ import annotations

import contextlib
import io
import math
import threading
from typing import Any

import matplotlib

if matplotlib.get_backend().lower() not in ("agg",) and not matplotlib.get_backend().lower().startswith(
    ("module://matplotlib_inline", "module://ipykernel")
):
    matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

# Okabe–Ito, colour-blind safe; the same colour means the same backend everywhere
# (assets/theme.css uses the same values).
PALETTE = {
    "torch_eager": "#D55E00",
    "torch_compile": "#0072B2",
    "jax_eager": "#CC79A7",
    "jax_jit": "#009E73",
    "reference": "#7F7F7F",
    "floor": "#444444",
    "accent": "#E69F00",
}
LABELS = {
    "torch_eager": "torch eager",
    "torch_compile": "torch.compile",
    "jax_eager": "JAX op-by-op",
    "jax_jit": "jax.jit",
}
SLIDE_SIZE = (12.2, 4.3)  # inches at dpi 100 (1220×430 px): shown 1:1 (the theme caps images at 430 px high)
# on a 1280×720 slide under a title, a two-line live cell and its controls, so 1 pt here is 1.39 px on
# the slide and 1.04 pt in the PDF (1280 px → 998 pt): 13 pt tick labels are 18 px / 13.5 pt
DPI = 100

STYLE = {
    "font.size": 14,
    "axes.titlesize": 16,
    "axes.labelsize": 14,
    "figure.titlesize": 17,
    "legend.fontsize": 12.5,
    "legend.title_fontsize": 12.5,
    "xtick.labelsize": 13,
    "ytick.labelsize": 13,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
}


def figure(nrows: int = 1, ncols: int = 1, size: tuple[float, float] = SLIDE_SIZE, **kw: Any):
    """A slide-sized figure in the deck's style. Returns (fig, axes).

    Inside :func:`drawing_into` (a live panel's redraw) the same call returns the figure the panel's
    previous redraw drew, emptied of what was drawn (:func:`_empty`) but keeping its axes, their
    ticks and its layout, which :class:`SlotLayout` recomputes only when something that places
    the axes changed. Elsewhere (exports, tests) every call builds a new figure."""
    slot = _SLOTS[-1] if _SLOTS else None
    key = (nrows, ncols, tuple(size), repr(sorted(kw.items())))
    if slot is not None and key in slot.figures and key not in slot.used:
        fig, axes = slot.figures.pop(key)
        try:
            _empty(fig)
        except Exception:  # matplotlib internals this code does not know: a new figure, as outside a panel
            pass
        else:
            slot.used.add(key)
            slot.figures[key] = (fig, axes)
            slot.reused += 1
            return fig, axes
    with plt.rc_context(STYLE):
        fig = Figure(figsize=size, dpi=DPI, layout=SlotLayout())
        axes = fig.subplots(nrows, ncols, **kw)
    if slot is not None and key not in slot.used:
        slot.used.add(key)
        fig._jitdeck_base = list(fig.axes)  # what `_empty` keeps
        fig._jitdeck_layout = fig.get_layout_engine().get()
        fig.get_layout_engine().skip_unchanged = True
        slot.figures[key] = (fig, axes)
    return fig, axes


# ---------------------------------------------------------------------------------------
# Figure slots: a live panel redraws into the figure it drew last
# ---------------------------------------------------------------------------------------
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


def _empty(fig: Figure) -> None:
    """Remove everything a figure function drew, as ``Figure.clear`` would, but keep the axes made
    by :func:`figure`, their tick objects (building ticks is most of a new figure's cost) and the
    layout. Each reused axes is reset by ``Axes.clear`` (scales, locators, limits, labels, titles)
    under the deck's style, as a new one would be; axes added later (``add_axes``, ``twinx``) go."""
    from matplotlib.transforms import Bbox

    base = fig._jitdeck_base
    for ax in list(fig.axes):
        if ax not in base:
            fig.delaxes(ax)
    with plt.rc_context(STYLE):
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


from matplotlib.axis import Axis  # noqa: E402
from matplotlib.layout_engine import ConstrainedLayoutEngine  # noqa: E402

# ---------------------------------------------------------------------------------------
# Ticks located once per state within a draw. Matplotlib locates and formats an axis' ticks each
# time it asks for them: in each of the layout's passes for the axes, its label, its title and
# its siblings, then in the drawing, and a log axis with its minor ticks takes ~1 ms each time.
# Within one draw (:func:`to_png`), an axis whose view, size, scale, locators and formatters are
# what they were the last time it located its ticks hands back the ticks it located then.
# The patch of matplotlib's private ``Axis._update_ticks`` is in place only during that draw
# (:func:`_ticks_once`): importing this module changes nothing of matplotlib, and any other
# figure of the process (a notebook's own, inline) is drawn by matplotlib's own code.
# ---------------------------------------------------------------------------------------
_TICKS: dict[int, tuple] | None = None
_update_ticks = Axis._update_ticks  # matplotlib's own (what `_ticks_once` puts back)


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
def _ticks_once():
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
        if self.skip_unchanged and self._signature is not None:
            # lay out from where a new figure starts (each axes at its grid cell), so a reused figure
            # is placed exactly as a new one would be: constrained layout depends on where it starts
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


def color(backend: str) -> str:
    return PALETTE.get(backend, PALETTE["reference"])


def label(backend: str) -> str:
    return LABELS.get(backend, backend)


FOOTER_PT = 10.5  # 14.6 px on the slide, 10.9 pt in the PDF
FOOTER_WIDTH = 0.86  # of the figure: the wrapped stamp stays clear of reveal's arrows (bottom right, ~110 px)


def _footer(fig: Figure, lines: list[str]) -> None:
    """Footer lines at the bottom left, wrapped to FOOTER_WIDTH of the figure's width (never
    clipped at its right edge, never under the slideshow's arrows at the slide's bottom right),
    with the layout told to keep the axes above them."""
    import textwrap

    chars = max(40, int(fig.get_figwidth() * 72 * FOOTER_WIDTH / (FOOTER_PT * 0.6)))  # DejaVu Sans: ≤0.6 em a character
    wrapped = [w for line in lines for w in textwrap.wrap(line, chars, subsequent_indent="    ")]
    fig.text(0.005, 0.004, "\n".join(wrapped), fontsize=FOOTER_PT, color="#555555", ha="left", va="bottom",
             linespacing=1.15)
    share = (len(wrapped) * FOOTER_PT * 1.15 * 1.2 + 4) / (fig.get_figheight() * 72)
    try:
        fig.get_layout_engine().set(rect=(0, share, 1, 1 - share))
    except Exception:
        pass


def text_floor(fig: Figure, pt: float = 12.5) -> Figure:
    """Raise every text of ``fig`` smaller than ``pt`` to ``pt`` (call before the footer is
    stamped): for figures drawn by shared code with its own small sizes."""
    from matplotlib.text import Text

    for t in fig.findobj(Text):
        if t.get_text() and t.get_fontsize() < pt:
            t.set_fontsize(pt)
    return fig


def stamp(fig: Figure, text: str, *, where: str = "Measured on") -> None:
    """Footer saying where/what was measured: device, dtype, sizes, versions, date."""
    _footer(fig, [f"{where}: {text}"])


def stamp_figure(fig: Figure, data: dict[str, Any], reference: dict[str, Any] | None = None) -> None:
    """The footer of every demo figure: where ``data`` was measured (or recorded), and, when a
    recorded run (or the seed's reported figures) is drawn beside it, where that came from."""
    lines = [f"{'Recorded on' if data.get('recorded') else 'Measured on'}: {data.get('stamp', '')}"]
    if reference is not None:
        where = "Beside it" if reference.get("seed") else "Beside it, recorded on"
        lines.append(f"{where}: {reference.get('stamp', '?')}")
    _footer(fig, lines)


def machine_stamp(machine: dict[str, Any], extra: str = "", date: str = "") -> str:
    vers = ", ".join(f"{k} {machine[k]}" for k in ("torch", "jax") if machine.get(k))
    parts = [machine.get("device_name", "?")]
    if machine.get("device") == "cpu" and machine.get("threads_policy"):
        parts.append(machine["threads_policy"])
    elif machine.get("torch_threads") and machine.get("device") == "cpu":
        n = machine["torch_threads"]
        parts.append(f"{n} torch thread{'s' if n != 1 else ''}")
    if extra:
        parts.append(extra)
    parts.append(vers)
    if date:
        parts.append(date[:10])
    return " · ".join(p for p in parts if p)


def live_stamp(extra: str = "", threads: str = "") -> str:
    """Where a live measurement ran; ``threads`` is the thread policy it ran under (a CPU's
    ``Conditions.stamp()``, e.g. "1 of 2 threads (1 of 2 cores busy elsewhere)")."""
    from demos.engine.devices import machine_info, torch_device
    from demos.engine.results import now_iso

    machine = dict(_cached_machine(machine_info, torch_device()))
    if threads:
        machine["threads_policy"] = threads
    return machine_stamp(machine, extra, now_iso())


_MACHINE: dict[str, dict[str, Any]] = {}  # per torch device (DEMOS_DEVICE may change in a process)


def _cached_machine(fn, device: str) -> dict[str, Any]:
    if device not in _MACHINE:
        _MACHINE[device] = fn()
    return _MACHINE[device]


def to_png(fig: Figure) -> bytes:
    """The figure as PNG bytes, drawn once by Agg at its own size and DPI.

    Not ``savefig``: with a layout engine, ``savefig`` first draws the whole figure with
    rendering disabled to lay it out, then lays it out again and draws it: every artist twice.
    Here the one draw lays out (when :class:`SlotLayout` says it must) and renders; zlib level 1
    takes about 15% less time than the default 6 for files ~2% larger, and RGB 15% less than RGBA."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from PIL import Image

    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    with _ticks_once():
        canvas.draw()
    buf = io.BytesIO()
    rgba = Image.frombuffer("RGBA", canvas.get_width_height(), canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
    rgba.convert("RGB").save(buf, format="png", compress_level=1)  # every figure is opaque
    return buf.getvalue()


def message_figure(text: str, title: str = "") -> Figure:
    """A figure that only says something (e.g. why nothing could be measured)."""
    fig, ax = figure(size=(11.0, 2.0))
    ax.axis("off")
    ax.text(0.5, 0.5, text, ha="center", va="center", fontsize=14, wrap=True)
    if title:
        ax.set_title(title)
    return fig


# =======================================================================================
# Code on a figure: syntax colours in monospace layers, rasterised by PIL; text columns
# =======================================================================================
import functools  # noqa: E402
import re  # noqa: E402

CODE_COLORS = {"text": "#1a1a1a", "comment": "#6a737d", "string": "#a31515", "keyword": "#7d3c98",
               "call": "#0057a8", "shape": "#007a5e", "number": "#b35900", "var": "#444444"}
# one pattern for Python, C++, Triton, jaxpr, StableHLO and HLO: comments, strings, shapes/dtypes,
# keywords, calls, HLO/MLIR values, numbers (the group name is the colour)
_TOKEN = re.compile(
    r"(?P<comment>(?:#|//)(?!include).*$)"
    r"|(?P<string>'[^']*'|\"[^\"]*\")"
    r"|(?P<shape>\b(?:f|bf|s|u|pred|i)\d*\[[^\]]*\]|tensor<[^>]*>|\bf32\b|\bbf16\b|\bfloat32\b|\bbfloat16\b)"
    r"|(?P<keyword>\b(?:def|return|for|if|else|in|let|lambda|auto|const|ROOT|ENTRY|fusion|func\.func|kind|calls|with|"
    r"tl\.\w+|extern|void|float|int64_t|public)\b)"
    r"|(?P<call>[A-Za-z_][\w.]*(?=\())"
    r"|(?P<var>%[\w.\-#]+)"
    r"|(?P<number>\b\d+(?:\.\d+)?(?:[eE][-+]?\d+)?\b)",
    re.M,
)


def color_layers(lines: list[str]) -> dict[str, list[str]]:
    """Split lines into one same-width layer per colour (spaces elsewhere): monospace text
    drawn layer over layer lines up exactly, one draw call per colour and line."""
    layers: dict[str, list[str]] = {k: [] for k in CODE_COLORS}
    for line in lines:
        kinds = ["text"] * len(line)
        for m in _TOKEN.finditer(line):
            kinds[m.start():m.end()] = [m.lastgroup or "text"] * (m.end() - m.start())
        for k in CODE_COLORS:
            layers[k].append("".join(ch if kd == k else " " for ch, kd in zip(line, kinds)).rstrip())
    return {k: rows for k, rows in layers.items() if any(r.strip() for r in rows)}


@functools.lru_cache(maxsize=None)
def _mono_font(px: int, bold: bool = False):
    from matplotlib.font_manager import FontProperties, findfont
    from PIL import ImageFont

    return ImageFont.truetype(findfont(FontProperties(family="DejaVu Sans Mono", weight="bold" if bold else "normal")), px)


def draw_code(fig: Figure, x0: float, y_top: float, width: float, height: float, lines: list[str], *,
              fontsize: float = 10.0, mark: set[int] | None = None) -> int:
    """Draw ``lines`` as coloured monospace code in a box of figure coordinates, clipped to
    it (long lines end in …; the last line says how many more); lines in ``mark`` get a
    highlighted background. Returns how many lines were drawn.

    The box is rasterised with PIL and placed as one image: matplotlib lays out and renders each
    text apart (3.11's Agg glyph by glyph, ~0.3 ms each here), which made a page of code cost a
    second per redraw."""
    import numpy as np
    from PIL import Image, ImageDraw

    W, H = fig.get_size_inches() * DPI
    font, bold = _mono_font(round(fontsize * DPI / 72)), _mono_font(round(fontsize * DPI / 72), True)
    cw, lh = font.getlength("M"), fontsize * 1.32 * DPI / 72.0
    max_chars, max_lines = max(10, int(width * W / cw) - 1), max(1, int(height * H / lh))
    shown = [ln if len(ln) <= max_chars else ln[:max_chars - 1] + "…" for ln in lines[:max_lines]]
    if len(lines) > max_lines:
        shown[-1] = f"… {len(lines) - max_lines + 1} more lines"
    img = Image.new("RGB", (int(width * W), max(1, round(len(shown) * lh))), "white")
    draw = ImageDraw.Draw(img)
    for i in sorted(i for i in (mark or ()) if i < len(shown)):
        draw.rectangle((0, round(i * lh), img.width, round((i + 1) * lh)), fill="#ffe9b3")
    for kind, layer in color_layers(shown).items():
        for i, text in enumerate(layer):
            if text.strip():
                draw.text((0, round(i * lh)), text, font=bold if kind == "call" else font, fill=CODE_COLORS[kind])
    fig.figimage(np.asarray(img), xo=int(x0 * W), yo=int(y_top * H) - img.height, origin="upper")
    return len(shown)


def text_lines(fig: Figure, x: float, y: float, lines: list[str], step: float = 0.062, **kw: Any) -> float:
    """Draw lines one under another from y down (figure coordinates); return the y below the last."""
    for line in lines:
        fig.text(x, y, line, va="top", **kw)
        y -= step
    return y


def two_columns(fig: Figure) -> None:
    """A thin vertical rule down the middle of the figure (two side-by-side columns)."""
    from matplotlib.lines import Line2D

    fig.add_artist(Line2D([0.5, 0.5], [0.11, 0.98], transform=fig.transFigure, color="#cccccc", lw=1))  # above the footer


def where_measured(data: dict[str, Any]) -> str:
    """Where a measurement comes from, in a few words: the recorded machine, or "here"."""
    return data.get("machine_short", "recorded") if data.get("recorded") else "here"


def pow2_label(n: int, smallest: int = 1) -> str:
    """A size as a slide writes it: ``2^k`` for a power of two from ``smallest`` up, else with
    thousands separators."""
    k = math.log2(n) if n > 0 else 0.5
    return f"2^{int(k)}" if float(k).is_integer() and n >= smallest else f"{n:,}"


def no_minor_ticks(*axes) -> None:
    """No minor ticks on these axes: a log axis draws dozens, and laying them out costs a redraw
    ~0.1 s."""
    from matplotlib.ticker import NullLocator

    for ax in axes:
        ax.xaxis.set_minor_locator(NullLocator())
        ax.yaxis.set_minor_locator(NullLocator())
