"""Every slide on every projector: what the walk read at each size (:func:`demos.deck.walk.at_projectors`),
judged and reported. RISE's slide is the whole window and its text keeps its size, so a 4:3
1024×768 projector wraps every line into less width than 1280×720 gives; figures shrink to the
width they get. The sizes, and the smallest figure text a back row reads, are declared once in
:mod:`demos.engine.plots` (``PROJECTORS``, ``MIN_SCREEN_PX``).
"""
from __future__ import annotations

SLACK_PX = 2  # a slide's content may reach this far past its edge (sub-pixel layout)


def misfits(readings: list[tuple[str, str, dict]]) -> list[str]:
    """Every slide whose content leaves the slide at a projector size, or shows a figure text
    under ``plots.MIN_SCREEN_PX`` screen pixels there, as one line each. RISE's slide is the whole
    window (its text is not scaled: at 1024×768 it wraps into more lines), so the slide at each
    size is the reading's own width × height."""
    from demos.engine import plots

    out = []
    for part, num, sizes in readings:
        for size, r in sizes.items():
            w, h = r.get("width") or plots.SLIDE_PX[0], r.get("height") or plots.SLIDE_PX[1]
            if r.get("bottom", 0) > h + SLACK_PX or r.get("right", 0) > w + SLACK_PX:
                out.append(f"{part} slide {num} at {size}: content reaches x={r.get('right', 0):.0f}, "
                           f"y={r.get('bottom', 0):.0f} on a {w}×{h} slide")
            s, vw, vh = r.get("screen"), r.get("vw") or w, r.get("vh") or h
            if s and (s[0] < -SLACK_PX or s[1] < -SLACK_PX or s[2] > vw + SLACK_PX or s[3] > vh + SLACK_PX):
                out.append(f"{part} slide {num} at {size}: content drawn from ({s[0]:.0f}, {s[1]:.0f}) to "
                           f"({s[2]:.0f}, {s[3]:.0f}), cut off by the {vw}×{vh} window")
            px = r.get("figure_min_px")
            if px is not None and px < plots.MIN_SCREEN_PX - 0.05:
                out.append(f"{part} slide {num} at {size}: figure text drawn at {px:.1f} px on the screen "
                           f"(at least {plots.MIN_SCREEN_PX})")
    return out


def projector_report(readings: list[tuple[str, str, dict]]) -> str:
    """The worst slide of each part at each projector size: how far its content reaches (in slide
    pixels; the slide is 1280×720) and its smallest figure text on that screen."""
    from demos.engine import plots

    lines = ["| part | screen | slides | lowest content (px from the top) | rightmost | smallest figure text (screen px) |",
             "| --- | --- | ---: | --- | --- | --- |"]
    parts = sorted({p for p, _, _ in readings})
    for part in parts:
        for w, h in plots.PROJECTORS:
            size = f"{w}x{h}"
            rows = [(num, r[size]) for p, num, r in readings if p == part and size in r]
            if not rows:
                continue
            bottom = max(rows, key=lambda nr: nr[1].get("bottom", 0) - nr[1].get("height", h))
            right = max(rows, key=lambda nr: nr[1].get("right", 0) - nr[1].get("width", w))
            px = [(nr[1]["figure_min_px"], nr[0]) for nr in rows if nr[1].get("figure_min_px") is not None]
            small = min(px) if px else None
            lines.append(f"| {part} | {w}×{h} | {len(rows)} | {bottom[1].get('bottom', 0):.0f} of {h} (slide {bottom[0]}) | "
                         f"{right[1].get('right', 0):.0f} of {w} (slide {right[0]}) | "
                         + (f"{small[0]:.1f} (slide {small[1]})" if small else "no figure") + " |")
    return "\n".join(lines) + "\n"
