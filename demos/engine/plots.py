"""One look for every figure: palette, slide-sized figures, and the 'where measured' stamp."""
from __future__ import annotations

import io
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
SLIDE_SIZE = (10.5, 4.6)  # inches at dpi 100 (1050×460 px): fits a 1280×720 slide under a title and controls
DPI = 100

STYLE = {
    "font.size": 13,
    "axes.titlesize": 15,
    "axes.labelsize": 13,
    "legend.fontsize": 11,
    "xtick.labelsize": 11,
    "ytick.labelsize": 11,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
}


def figure(nrows: int = 1, ncols: int = 1, size: tuple[float, float] = SLIDE_SIZE, **kw: Any):
    """A slide-sized figure in the deck's style. Returns (fig, axes)."""
    with plt.rc_context(STYLE):
        fig = Figure(figsize=size, dpi=DPI, layout="constrained")
        axes = fig.subplots(nrows, ncols, **kw)
    return fig, axes


def color(backend: str) -> str:
    return PALETTE.get(backend, PALETTE["reference"])


def label(backend: str) -> str:
    return LABELS.get(backend, backend)


def stamp(fig: Figure, text: str, *, where: str = "Measured on") -> None:
    """Footer saying where/what was measured: device, dtype, sizes, versions, date."""
    fig.text(0.005, 0.003, f"{where}: {text}", fontsize=9, color="#555555", ha="left", va="bottom")
    try:
        fig.get_layout_engine().set(rect=(0, 0.04, 1, 0.96))
    except Exception:
        pass


def stamp_figure(fig: Figure, data: dict[str, Any], reference: dict[str, Any] | None = None) -> None:
    """The footer of every demo figure: where ``data`` was measured (or recorded), and, when a
    recorded run is drawn beside it, that run's machine and date on a second line."""
    stamp(fig, data.get("stamp", ""), where="Recorded on" if data.get("recorded") else "Measured on")
    if reference is not None:
        where = "Beside it" if reference.get("seed") else "Beside it, recorded on"
        fig.text(0.005, 0.028, f"{where}: {reference.get('stamp', '?')}", fontsize=9,
                 color="#555555", ha="left", va="bottom")
        try:
            fig.get_layout_engine().set(rect=(0, 0.07, 1, 0.93))
        except Exception:
            pass


def machine_stamp(machine: dict[str, Any], extra: str = "", date: str = "") -> str:
    vers = ", ".join(f"{k} {machine[k]}" for k in ("torch", "jax") if machine.get(k))
    parts = [machine.get("device_name", "?")]
    if machine.get("torch_threads") and machine.get("device") == "cpu":
        parts.append(f"{machine['torch_threads']} torch threads")
    if extra:
        parts.append(extra)
    parts.append(vers)
    if date:
        parts.append(date[:10])
    return " · ".join(p for p in parts if p)


def live_stamp(extra: str = "") -> str:
    from demos.engine.devices import machine_info
    from demos.engine.results import now_iso

    return machine_stamp(_cached_machine(machine_info), extra, now_iso())


_MACHINE: dict[str, Any] = {}


def _cached_machine(fn) -> dict[str, Any]:
    if not _MACHINE:
        _MACHINE.update(fn())
    return _MACHINE


def to_png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


def message_figure(text: str, title: str = "") -> Figure:
    """A figure that only says something (e.g. why nothing could be measured)."""
    fig, ax = figure(size=(11.0, 2.0))
    ax.axis("off")
    ax.text(0.5, 0.5, text, ha="center", va="center", fontsize=14, wrap=True)
    if title:
        ax.set_title(title)
    return fig
