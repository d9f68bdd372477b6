"""One look for every figure: palette, slide-sized figures, and the 'where measured' stamp."""
from __future__ import annotations

import functools
import io
import math
from typing import Any

import matplotlib

if matplotlib.get_backend().lower() not in ("agg",) and not matplotlib.get_backend().lower().startswith(
    ("module://matplotlib_inline", "module://ipykernel")
):
    matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from demos.engine.figure_slots import (_SLOTS, SlotLayout, empty,  # noqa: E402
                                       ticks_once)
from demos.engine.figure_text import drawn_texts, named, wrap_px  # noqa: E402

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

# The slide the exported HTML lays out (demos.deck.export: this size, with the margin of
# demos.deck.nbtools.RISE_SETTINGS, which tests/test_figure_slots.py checks agree), and the
# projectors the deck is shown on. Scaled as reveal scales that slide to the window (its margin
# kept), a figure on a 4:3 lecture-hall projector (1024×768) shows 0.768 screen px per px of its
# own: the smallest scale the figures are designed for. RISE's slideshow does not scale the slide,
# it is the window; there a figure shrinks to the width it gets, 0.82 at 1024×768 (the browser walk
# reads the scale each figure really has and fails under MIN_SCREEN_PX: demos.deck.walk.at_projectors).
SLIDE_PX = (1280, 720)
REVEAL_MARGIN = 0.04
PROJECTORS = ((1024, 768), (1280, 720), (1920, 1080))
MIN_SCREEN_PX = 12  # the smallest text a back row reads, in pixels of the screen


def screen_scale(width: float, height: float) -> float:
    """Screen pixels per slide pixel in a ``width``×``height`` window: reveal.js's scale."""
    return min(width * (1 - REVEAL_MARGIN) / SLIDE_PX[0], height * (1 - REVEAL_MARGIN) / SLIDE_PX[1])


# The smallest font size of a figure's text, in points: MIN_SCREEN_PX on the smallest projector's
# screen (a figure is shown 1:1 on the slide, 1 pt = DPI/72 px of it). 1024×768: scale 0.768, 11.25 pt.
MIN_TEXT_PT = MIN_SCREEN_PX / (min(screen_scale(w, h) for w, h in PROJECTORS) * DPI / 72)

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
    previous redraw drew, emptied of what was drawn (:func:`figure_slots.empty`) but keeping its axes, their
    ticks and its layout, which :class:`SlotLayout` recomputes only when something that places
    the axes changed. Elsewhere (exports, tests) every call builds a new figure."""
    slot = _SLOTS[-1] if _SLOTS else None
    key = (nrows, ncols, tuple(size), repr(sorted(kw.items())))
    if slot is not None and key in slot.figures and key not in slot.used:
        fig, axes = slot.figures.pop(key)
        try:
            empty(fig, STYLE)
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
        fig._jitdeck_base = list(fig.axes)  # what `figure_slots.empty` keeps
        fig._jitdeck_layout = fig.get_layout_engine().get()
        fig.get_layout_engine().skip_unchanged = True
        slot.figures[key] = (fig, axes)
    return fig, axes


def add_axes(fig: Figure, rect: tuple[float, float, float, float], **kw: Any):
    """An axes at ``rect`` (fractions of the figure) in the deck's style, as :func:`figure`'s are:
    made outside it, its labels and ticks took matplotlib's 10 pt, under MIN_TEXT_PT."""
    with plt.rc_context(STYLE):
        return fig.add_axes(rect, **kw)


def color(backend: str) -> str:
    return PALETTE.get(backend, PALETTE["reference"])


def label(backend: str) -> str:
    return LABELS.get(backend, backend)


FOOTER_PT = MIN_TEXT_PT  # 11.25 pt: 15.6 px on the slide, 12 px on a 1024×768 screen, 11.7 pt in the PDF
FOOTER_WIDTH = 0.86  # of the figure: the wrapped stamp stays clear of reveal's arrows (bottom right, ~110 px)


def _footer(fig: Figure, lines: list[str]) -> float:
    """Footer lines at the bottom left, wrapped to FOOTER_WIDTH of the figure's width (never
    clipped at its right edge, never under the slideshow's arrows at the slide's bottom right),
    with the layout told to keep the axes above them. Returns the top of its text (a fraction of
    the figure's height), for text placed by hand above it."""
    width = fig.get_figwidth() * DPI * FOOTER_WIDTH
    wrapped = [w for line in lines for w in wrap_px(line, FOOTER_PT * DPI / 72, width, indent="    ")]
    fig.text(0.005, 0.004, "\n".join(wrapped), fontsize=FOOTER_PT, color="#555555", ha="left", va="bottom",
             linespacing=1.15)
    text_pt, height_pt = len(wrapped) * FOOTER_PT * 1.15, fig.get_figheight() * 72  # the text's height, in points
    # the text (the estimate is some 8% over what matplotlib draws) and a gap: the layout keeps off it (a fifth
    # more than the text, as this once kept, left 50 px empty over a footer of nine lines of verdicts)
    share = (text_pt + 6) / height_pt
    try:
        fig.get_layout_engine().set(rect=(0, share, 1, 1 - share))
    except Exception:
        pass
    return 0.004 + text_pt / height_pt


def chars_per_line(fig: Figure, fontsize: float, fraction: float = 1.0) -> int:
    """How many characters of ``fontsize`` points fit in ``fraction`` of the figure's width
    (DejaVu Sans: at most 0.6 em a character)."""
    return int(fig.get_figwidth() * 72 * fraction / (fontsize * 0.6))


def text_floor(fig: Figure, pt: float = MIN_TEXT_PT) -> Figure:
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


def stamp_figure(fig: Figure, data: dict[str, Any], reference: dict[str, Any] | None = None) -> float:
    """The footer of every demo figure: where ``data`` was measured (or recorded), and, when a
    recorded run (or the seed's reported figures) is drawn beside it, where that came from.
    Returns the top of the footer's text (a fraction of the figure's height)."""
    lines = [f"{'Recorded on' if data.get('recorded') else 'Measured on'}: {data.get('stamp', '')}"]
    if reference is not None:
        where = "Beside it" if reference.get("seed") else "Beside it, recorded on"
        lines.append(f"{where}: {reference.get('stamp', '?')}")
    # the regimes' verdicts with their measured conditions, and GPU claims not yet measured on a GPU
    # (demos.deck.demo.Demo.draw)
    lines += list(data.get("verdicts") or ())
    fig._demos_stamped = True  # stamped(): Demo.draw stamps a figure its function left unstamped
    return _footer(fig, lines)


def stamped(fig: Any, data: dict[str, Any], reference: dict[str, Any] | None = None) -> Any:
    """``fig``, with :func:`stamp_figure`'s footer where its figure function did not draw one: every
    demo's figure says where it was measured (anything but a Figure passes through)."""
    if isinstance(fig, Figure) and not getattr(fig, "_demos_stamped", False):
        stamp_figure(fig, data, reference)
    return fig


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
    if machine.get("device") not in (None, "cpu") and machine.get("fp32_matmul"):
        parts.append(f"fp32 matmuls: {machine['fp32_matmul']}")  # TF32 or not: it moves GPU matmul times many-fold
    parts.append(vers)
    if date:
        parts.append(date[:10])
    return " · ".join(p for p in parts if p)


def live_stamp(extra: str = "", threads: str = "") -> str:
    """Where a live measurement ran; ``threads`` is the thread policy it ran under (a CPU's
    ``Conditions.stamp()``, e.g. "1 of 2 threads (1 of 2 cores busy elsewhere)")."""
    from demos.engine.devices import accelerator_disagrees, machine_info, torch_device
    from demos.engine.results import now_iso

    machine = dict(_cached_machine(machine_info, torch_device()))
    if threads:
        machine["threads_policy"] = threads
    wrong = accelerator_disagrees()  # MPS: compiled ≠ eager there, said on every figure
    return machine_stamp(machine, f"⚠ {wrong} · {extra}" if wrong else extra, now_iso())


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
    with ticks_once():
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
              fontsize: float = 11.5, mark: set[int] | None = None) -> int:
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
    image = fig.figimage(np.asarray(img), xo=int(x0 * W), yo=int(y_top * H) - img.height, origin="upper")
    image._jitdeck_code_pt = fontsize  # texts_too_small reads the code's size from the picture
    return len(shown)


def text_lines(fig: Figure, x: float, y: float, lines: list[str], step: float = 0.062, **kw: Any) -> float:
    """Draw lines one under another from y down (figure coordinates); return the y below the last."""
    for line in lines:
        fig.text(x, y, line, va="top", **kw)
        y -= step
    return y


def two_columns(fig: Figure, bottom: float = 0.11) -> None:
    """A thin vertical rule down the middle of the figure (two side-by-side columns), from ``bottom``
    (above the footer: :func:`stamp_figure` returns its top) up."""
    from matplotlib.lines import Line2D

    fig.add_artist(Line2D([0.5, 0.5], [bottom, 0.98], transform=fig.transFigure, color="#cccccc", lw=1))


def this_machine() -> str:
    """This machine in a few words, as a mark names it beside the record's."""
    from demos.engine.devices import device_name

    return "this machine (" + short_machine({"device_name": device_name()}) + ")"


def short_machine(machine: dict) -> str:
    name = machine.get("gpu_name") or machine.get("device_name") or "recorded"
    name = name.replace("NVIDIA ", "").replace("CPU: ", "")
    return name.split("(")[0].strip()[:28]


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


def texts_outside(fig: Figure, slack_px: float = 1.0) -> list[str]:
    """The texts of ``fig`` (labels, titles, ticks, notes, the footer) whose drawn extent leaves the
    figure, at the figure's own size: each as "text (by how many px, which side)". A clipped label
    is one here."""
    (width, height), texts = drawn_texts(fig)
    out = []
    for t, bb in texts:
        sides = {"left": -bb.x0, "bottom": -bb.y0, "right": bb.x1 - width, "top": bb.y1 - height}
        over = {k: v for k, v in sides.items() if v > slack_px}
        if over:
            out.append(f"{named(t)} ({', '.join(f'{v:.0f} px past the {k}' for k, v in over.items())})")
    return out


def texts_too_small(fig: Figure, pt: float = MIN_TEXT_PT) -> list[str]:
    """The texts ``fig`` shows (as :func:`texts_outside` counts them) drawn under ``pt`` points, and
    the code it shows as a picture (:func:`draw_code`) set under ``pt``: each as "text (9 pt)"."""
    _size, texts = drawn_texts(fig)
    out = [f"{named(t)} ({t.get_fontsize():g} pt)" for t, _bb in texts if t.get_fontsize() < pt]
    for image in fig.images:
        code_pt = getattr(image, "_jitdeck_code_pt", None)
        if code_pt is not None and code_pt < pt:
            out.append(f"code drawn at {code_pt:g} pt")
    return out


def texts_overlapping(fig: Figure, slack_px: float = 1.0) -> list[str]:
    """Each pair of texts ``fig`` shows (as :func:`texts_outside` counts them) whose drawn boxes
    overlap by more than ``slack_px`` both across and down (boxes that touch do not): tick labels
    crowding each other, a bar's label on the axes' title, a note under the legend, the footer on
    the tick labels. Each as "'a' overlaps 'b' (w×h px)"."""
    _size, texts = drawn_texts(fig)
    out = []
    for i, (a, ab) in enumerate(texts):
        for b, bb in texts[i + 1:]:
            w = min(ab.x1, bb.x1) - max(ab.x0, bb.x0)
            h = min(ab.y1, bb.y1) - max(ab.y0, bb.y0)
            if w > slack_px and h > slack_px:
                out.append(f"{named(a)} overlaps {named(b)} ({w:.0f}×{h:.0f} px)")
    return out


def timed_forms(data: dict[str, Any]) -> list[str]:
    """The keys of a measurement that hold a timing (``Timing.to_dict``: a median with p10–p90)."""
    return [k for k, v in data.items() if isinstance(v, dict) and "median_s" in v and k not in ("values", "conditions")]


def time_unit(seconds: float) -> tuple[str, float]:
    """The unit a time reads best in, and its scale: (unit, factor)."""
    for unit, factor in (("s", 1.0), ("ms", 1e3), ("µs", 1e6)):
        if seconds * factor >= 1:
            return unit, factor
    return "ns", 1e9


def _form_color(form: str) -> str:
    """A form's colour by what its name says it is: eager, compiled, jitted; else the accent."""
    for word, backend in (("eager", "torch_eager"), ("compile", "torch_compile"), ("jit", "jax_jit")):
        if word in form:
            return PALETTE[backend]
    return PALETTE["accent"]


def timing_bars(data: dict[str, Any], reference: dict[str, Any] | None = None):
    """The figure of a demo that declares none: each timed form's median per call as a bar, its
    p10–p90 as the whisker, and the reference's same forms beside it in grey."""
    forms = timed_forms(data)
    ref = [f for f in forms if reference is not None and isinstance(reference.get(f), dict)]
    fig, ax = figure()
    if not forms:
        ax.text(0.5, 0.5, "this measurement holds no timing to draw", ha="center", va="center", transform=ax.transAxes,
                fontsize=14)
        return fig
    unit, k = time_unit(max(data[f]["median_s"] for f in forms))
    width = 0.38 if ref else 0.6
    for shift, src, name, col in ((-width / 2 if ref else 0.0, data, where_measured(data), None),
                                  (width / 2, reference, where_measured(reference or {}), PALETTE["reference"])):
        xs = [i + shift for i, f in enumerate(forms) if src is data or f in ref]
        if not xs:
            continue
        rows = [src[f] for f in forms if src is data or f in ref]
        med = [r["median_s"] * k for r in rows]
        err = [[m - r.get("p10_s", r["median_s"]) * k for m, r in zip(med, rows)],
               [r.get("p90_s", r["median_s"]) * k - m for m, r in zip(med, rows)]]
        colors = [col or _form_color(f) for f in forms if src is data or f in ref]
        ax.bar(xs, med, width * 0.95, yerr=err, capsize=4, color=colors, label=name if ref else None)
        for x, m, top in zip(xs, med, err[1]):  # above the whisker
            ax.annotate(f"{m:.3g}", (x, m + top), textcoords="offset points", xytext=(0, 3), ha="center", fontsize=12)
    ax.set_xticks(range(len(forms)), [label(f) for f in forms])
    ax.set_ylabel(f"{unit} per call (median, p10–p90)")
    ax.set_ylim(0, ax.get_ylim()[1] * 1.12)
    if ref:
        ax.legend(loc="upper right", fontsize=12.5)  # given: a legend made outside figure()'s style is 10 pt
    return fig

