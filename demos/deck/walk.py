"""Walk the real slideshow as a presenter does: ``python -m demos walk [--parts 1,3]`` (``make walk``).

Starts the Jupyter server ``make present`` starts, opens each part in RISE in headless Debian
chromium at 1280×720 with a fresh kernel, steps through every slide with Space and, on every
slide with a live cell, presses Shift+Enter in it and times until its figure is on screen. It
also collects every browser console error, page error and failed request of the walk and says
where each comes from (the deck's own files, RISE, ipywidgets, JupyterLab). Every slide, its
cells run, is also read at each projector size (1024×768, 1280×720, 1920×1080: overflow, and the
smallest figure text on that screen). It writes ``build/walk/``: ``figure-times.md`` (a table, one
row per live cell), ``projectors.md`` (the worst slide of each part at each size, and every misfit),
``console.md`` and a screenshot of every live slide (also at 1024×768).

The slideshow plumbing here (open a part, read the current slide, close its kernels) is the one
the browser tests use too.
"""
from __future__ import annotations

import json
import re
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any, Callable, Iterator

from demos.engine.settings import PROJECT_ROOT
from demos.engine.errors import DemoError

SLIDE_W, SLIDE_H = 1280, 720
LIVE_MARK = "from demos.topics import"
TARGET_S = 3.0  # issue 14: after `make warm`, a live slide shows its figure within 3 s of Shift+Enter
OUT = PROJECT_ROOT / "build" / "walk"

# The current slide: its id, the slide number, how far its content reaches (in slide pixels,
# undoing reveal's scale; and on the screen, ``screen``: left, top, right, bottom against the
# window's ``vw`` × ``vh``) and any error output on it.
CURRENT = """() => {
  const slides = document.querySelector('.reveal .slides');
  const box = slides.getBoundingClientRect();
  const scale = box.width / slides.offsetWidth || 1;
  const sec = [...document.querySelectorAll('.reveal .slides section.present')]
      .filter(s => !s.classList.contains('stack'))[0];
  if (!sec) return null;
  let bottom = 0, right = 0;
  const screen = [Infinity, Infinity, -Infinity, -Infinity];
  for (const c of sec.querySelectorAll('.jp-Cell')) {
    const r = c.getBoundingClientRect();
    if (r.height === 0 || getComputedStyle(c).display === 'none') continue;
    bottom = Math.max(bottom, (r.bottom - box.top) / scale);
    right = Math.max(right, (r.right - box.left) / scale);
    screen[0] = Math.min(screen[0], r.left); screen[1] = Math.min(screen[1], r.top);
    screen[2] = Math.max(screen[2], r.right); screen[3] = Math.max(screen[3], r.bottom);
  }
  const errors = [...sec.querySelectorAll(
      '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"], .jitdeck-error')]
      .map(e => e.textContent.trim()).filter(t => /Traceback|\\w*Error\\b|⚠/.test(t)).map(t => t.slice(0, 300));
  const prompts = [...sec.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].map(p => p.textContent.trim());
  const num = (document.querySelector('.slide-number') || {}).textContent || '';
  // screen pixels per pixel of each figure on the slide (reveal's scale × how the slide sizes it)
  const figures = [...sec.querySelectorAll('.jitdeck-panel .jp-OutputArea-output img')]
      .filter(i => i.complete && i.naturalWidth > 0 && i.getClientRects().length)
      .map(i => i.getBoundingClientRect().width / i.naturalWidth);
  return {id: sec.id, num: num.replace(/\\s+/g, ''), bottom, right, errors, prompts,
          width: slides.offsetWidth, height: slides.offsetHeight, scale,
          screen: isFinite(screen[0]) ? screen : null, vw: window.innerWidth, vh: window.innerHeight,
          figure_scale: figures.length ? Math.min(...figures) : null};
}"""


# A live cell is done when its panel shows a decoded figure (on screen: a panel that asks first
# keeps it hidden until a choice) or its one-line error.
SHOWN_IMG = "img => !!(img && img.complete && img.naturalWidth > 0 && img.getClientRects().length)"
FIGURE_SHOWN = """c => {
  const img = c.querySelector('.jitdeck-panel .jp-OutputArea-output img');
  if ((""" + SHOWN_IMG + """)(img)) return 'figure';
  if (c.querySelector('.jitdeck-error')) return 'error';
  const prompt = c.querySelector('.jp-InputPrompt');  // a cell that draws no panel (e.g. a verdict table)
  if (prompt && /\\[\\d+\\]/.test(prompt.textContent) && !c.querySelector('.jitdeck-panel')
      && c.querySelector('.jp-OutputArea-output')) return 'output';
  return false;
}"""

# A panel that asks first shows its question (its choices on screen) before its figure.
ASKED_OR_SHOWN = """c => {
  const choice = c.querySelector('.jitdeck-ask .jitdeck-choice');
  if (choice && choice.getClientRects().length) return 'asked';
  return (""" + FIGURE_SHOWN + """)(c);
}"""

# The code cells of the current slide once they ran: the last line of each, whether it displayed a
# widget (a live cell's panel: a widget view rendered in the cell's output, not its text repr),
# whether its panel shows a decoded figure, and the error and stderr outputs of the cell itself
# (JupyterLab renders both as application/vnd.jupyter.stderr; those inside a widget are not the
# cell's own: a panel shows a failure in its status line, `panel_error`). Only the cells a viewer
# sees (no fragment still hidden).
_OWN_OUTPUTS = """
  const own = c => [...c.querySelectorAll('.jp-OutputArea-output')]
      .filter(o => !o.parentElement.closest('.jp-OutputArea-output'));
  const mime = o => o.getAttribute('data-mime-type') || '';
  const isWidget = o => mime(o) === 'application/vnd.jupyter.widget-view+json'
      || [...o.children].some(k => k.classList.contains('jupyter-widgets'));
  const sec = [...document.querySelectorAll('.reveal .slides section.present')]
      .filter(s => !s.classList.contains('stack'))[0];
  const cells = sec ? [...sec.querySelectorAll('.jp-CodeCell')].filter(c => c.getClientRects().length
      && getComputedStyle(c).visibility !== 'hidden') : [];
"""
CELLS = "() => {" + _OWN_OUTPUTS + """
  return cells.map(c => {
    const img = c.querySelector('.jitdeck-panel .jp-OutputArea-output img');
    const code = (c.querySelector('.jp-InputArea-editor') || {}).innerText || '';
    const lines = code.split('\\n').map(l => l.trim()).filter(l => l);
    return {code: lines.length ? lines[lines.length - 1] : '',
            prompt: ((c.querySelector('.jp-InputPrompt') || {}).textContent || '').trim(),
            widget: own(c).some(isWidget),
            panel: !!c.querySelector('.jitdeck-panel'),
            figure: (""" + SHOWN_IMG + """)(img),
            asked: !!c.querySelector('.jitdeck-ask'),
            mark: ((c.querySelector('.jitdeck-mark') || {}).textContent || '').trim(),
            panel_error: ((c.querySelector('.jitdeck-panel .jitdeck-error') || {}).textContent || '').trim(),
            stderr: own(c).filter(o => mime(o) === 'application/vnd.jupyter.stderr')
                          .map(o => o.textContent.trim().slice(0, 300)),
            outputs: own(c).map(o => mime(o) || [...o.children].map(k => k.className).join(' '))};
  });
}"""

# The live cells of the current slide are done drawing: every cell that displayed a widget shows
# its panel with a decoded figure, or the panel's error line.
CELLS_SETTLED = "() => {" + _OWN_OUTPUTS + """
  return cells.every(c => {
    if (!own(c).some(isWidget)) return true;
    const panel = c.querySelector('.jitdeck-panel');
    if (!panel) return false;
    const img = panel.querySelector('.jp-OutputArea-output img');
    return (""" + SHOWN_IMG + """)(img) || !!panel.querySelector('.jitdeck-error');
  });
}"""


def at_projectors(page, settle_s: float = 0.3) -> dict[str, dict]:
    """:data:`CURRENT` of the slide on screen at every projector size the deck supports
    (``plots.PROJECTORS``: 4:3 1024×768, 1280×720, 1920×1080), each after the window's resize laid
    the slide out again; the window is back at 1280×720 after. In RISE the slide is the whole
    window and its text keeps its size: a narrower window wraps it into more lines. Each reading
    adds ``figure_min_px``: the smallest figure text on that screen, in screen pixels (the
    figures' smallest size, ``plots.MIN_TEXT_PT``, times how large the slide shows them)."""
    from demos.engine import plots

    out: dict[str, dict] = {}
    try:
        for w, h in plots.PROJECTORS:
            page.set_viewport_size({"width": w, "height": h})
            cur, last = None, {}
            for _ in range(20):  # reveal lays out on the window's resize event, a moment later: read it settled
                page.wait_for_timeout(settle_s * 1000)
                cur = page.evaluate(CURRENT) or {}
                if cur == last:
                    break
                last = cur
            fs = cur.get("figure_scale")
            cur["figure_min_px"] = None if fs is None else fs * plots.MIN_TEXT_PT * plots.DPI / 72
            out[f"{w}x{h}"] = cur
    finally:
        page.set_viewport_size({"width": SLIDE_W, "height": SLIDE_H})
        page.wait_for_timeout(settle_s * 1000)
    return out


def cell_facts(page, timeout_s: float = 60.0) -> list[dict]:
    """:data:`CELLS` for the current slide, read once its live cells are done drawing (or after
    ``timeout_s``: then as they are)."""
    try:
        page.wait_for_function(CELLS_SETTLED, polling=100, timeout=timeout_s * 1000)
    except Exception:  # playwright's TimeoutError: report what is there
        pass
    return page.evaluate(CELLS)


# -- the slideshow -----------------------------------------------------------------------
def open_slideshow(ctx, plan, notebook: str, timeout_ms: int = 120_000):
    """A new 1280×720 page showing ``notebook`` in RISE; returns (page, seconds to first slide)."""
    page = ctx.new_page()
    page.set_viewport_size({"width": SLIDE_W, "height": SLIDE_H})
    t0 = time.perf_counter()
    page.goto(f"{plan.base_url()}rise/{notebook}?token={plan.token}", timeout=timeout_ms)
    page.wait_for_selector(".reveal .slides section.present .jp-Cell", timeout=timeout_ms)
    page.wait_for_function("document.fonts.ready.then(() => true)")
    return page, time.perf_counter() - t0


def shutdown_kernels(plan) -> None:
    """Close the sessions RISE opened (each part starts a kernel)."""
    base, hdr = plan.base_url(), {"Authorization": f"token {plan.token}"}
    try:
        with urllib.request.urlopen(urllib.request.Request(f"{base}api/sessions", headers=hdr), timeout=10) as r:
            sessions = json.loads(r.read())
        for s in sessions:
            req = urllib.request.Request(f"{base}api/sessions/{s['id']}", headers=hdr, method="DELETE")
            urllib.request.urlopen(req, timeout=20).close()
    except OSError:
        pass


def wait_kernel_idle(plan, timeout_s: float = 180.0) -> float:
    """Seconds until every kernel the server runs is started and idle (a presenter's kernel
    preloads the deck as it starts: demos.topics.preload)."""
    base, hdr = plan.base_url(), {"Authorization": f"token {plan.token}"}
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout_s:
        try:
            with urllib.request.urlopen(urllib.request.Request(f"{base}api/kernels", headers=hdr), timeout=10) as r:
                kernels = json.loads(r.read())
            if kernels and all(k.get("execution_state") == "idle" for k in kernels):
                return time.perf_counter() - t0
        except OSError:
            pass
        time.sleep(0.25)
    raise DemoError(f"the kernel was not idle within {timeout_s:.0f} s of opening the slideshow")


def step_through(page, expected: int, on_new: Callable[[dict], dict | None] | None = None) -> Iterator[dict]:
    """Press Space through the slideshow (fragments included), yielding what :data:`CURRENT`
    reads after every press; the first reading of a slide has ``new`` set and comes after
    ``on_new`` ran on it (which may return a fresher reading)."""
    seen: set[str] = set()
    stuck, last = 0, None
    for _ in range(4 * expected + 20):
        time.sleep(0.25)
        cur = page.evaluate(CURRENT)
        if cur is None:
            raise AssertionError("no slide is shown")
        cur["new"] = cur["id"] not in seen
        if cur["new"]:
            seen.add(cur["id"])
            if on_new is not None:
                cur = {**(on_new(cur) or cur), "new": True}
        yield cur
        stuck = stuck + 1 if cur["id"] == last else 0
        last = cur["id"]
        if len(seen) >= expected and stuck >= 3:
            return
        page.keyboard.press("Space")


def live_cells(page):
    """The visible live cells (``from demos.topics import …``) of the current slide."""
    cells = page.locator(".reveal .slides section.present:not(.stack) .jp-CodeCell", has_text=LIVE_MARK)
    return [cells.nth(i) for i in range(cells.count()) if cells.nth(i).is_visible()]


def first_live_cell(page, presses: int = 12):
    """Space through the slideshow, as a student does, to the first slide with a live cell; its
    first live cell (DemoError when none comes within ``presses``)."""
    for _ in range(presses):
        cells = live_cells(page)
        if cells:
            return cells[0]
        page.keyboard.press("Space")
        time.sleep(0.3)
    raise DemoError(f"no live cell within the first {presses} slides")


def predict(cell, choice: int = 0) -> bool:
    """Press choice ``choice`` (0 = A) of the question a panel asks, as a student predicting does
    (the figure is shown once the kernel is free). False when the cell asks nothing."""
    buttons = cell.locator(".jitdeck-ask .jitdeck-choice")
    if not buttons.count() or not buttons.first.is_visible():
        return False
    buttons.nth(min(choice, buttons.count() - 1)).click()
    return True


def time_to_figure(page, cell, timeout_s: float = 180.0, choice: int = 0, shots: Path | None = None) -> dict[str, Any]:
    """Shift+Enter in ``cell`` as a presenter does; seconds until its figure (or its error) is on
    screen, and what the panel's status line then says. A panel that asks first is answered with
    ``choice`` once its question is up (a screenshot of the question to ``shots``); the row says
    when the question came and what the mark then said."""
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Escape")  # command mode on this cell: the click placed the cursor
    handle = cell.element_handle()
    t0 = time.perf_counter()
    page.keyboard.press("Shift+Enter")
    asked_s = None
    try:
        shown = page.wait_for_function(ASKED_OR_SHOWN, arg=handle, polling=50, timeout=timeout_s * 1000).json_value()
        if shown == "asked":  # the question is up: predict, as the room does, and wait for the figure
            asked_s = time.perf_counter() - t0
            if shots is not None:
                page.screenshot(path=str(shots))
            predict(cell, choice)
            shown = page.wait_for_function(FIGURE_SHOWN, arg=handle, polling=50,
                                           timeout=timeout_s * 1000).json_value()
    except Exception:  # playwright's TimeoutError
        shown = "nothing"
    seconds = time.perf_counter() - t0
    status, mark = "", ""
    marks = cell.locator(".jitdeck-mark")
    for _ in range(50):  # the status line, and the mark of a question answered, follow the image by a moment
        status = (cell.locator(".jitdeck-panel .jitdeck-status").all_inner_texts() or [""])
        status = " ".join(s.strip() for s in status if s.strip())
        mark = marks.first.inner_text().strip() if marks.count() else ""
        if status and "measuring" not in status and (asked_s is None or mark or shown != "figure"):
            break
        time.sleep(0.1)
    code = (cell.locator(".jp-InputArea-editor").inner_text() or "").strip().splitlines()
    return {"cell": code[-1].strip() if code else "?", "shown": shown, "seconds": seconds, "status": status[:200],
            "asked_s": asked_s, "mark": mark}


# -- the console ---------------------------------------------------------------------------
def origin(url: str, text: str = "") -> str:
    """Who a console message or failed request belongs to, by the file it names."""
    where = f"{url} {text}"
    if re.search(r"/files/(slides|assets)/|jitdeck|demos", where):
        return "the deck"
    if re.search(r"rise", where, re.I):
        return "RISE (jupyterlab_rise)"
    if re.search(r"widget", where, re.I):
        return "ipywidgets (jupyterlab_widgets)"
    return "JupyterLab / other"


def watch_console(ctx, sink: list[dict], where: dict) -> None:
    """Collect, for the whole browser context from page load on, console errors and warnings,
    uncaught page errors and failed requests, each tagged with ``where['part']``."""
    def add(kind: str, text: str, url: str = "") -> None:
        sink.append({"part": where.get("part", "?"), "kind": kind, "text": text.strip()[:240], "url": url,
                     "origin": origin(url, text)})

    ctx.on("console", lambda m: add("console." + m.type, m.text, (m.location or {}).get("url", ""))
           if m.type in ("error", "warning") else None)
    ctx.on("weberror", lambda e: add("pageerror", str(e.error)))
    ctx.on("response", lambda r: add(f"HTTP {r.status}", r.request.method + " " + r.url, r.url)
           if r.status >= 400 else None)


# -- the walk ------------------------------------------------------------------------------
def walk_part(ctx, plan, nb_path: Path, shots: Path, fits: list | None = None) -> list[dict]:
    """Every slide of one part, every live cell run; ``fits`` collects (part, slide, readings at
    every projector size: :func:`at_projectors`)."""
    from demos.deck.nbtools import slide_count
    import nbformat

    expected = slide_count(nbformat.read(str(nb_path), as_version=4))
    rel = nb_path.relative_to(PROJECT_ROOT).as_posix()
    page, first = open_slideshow(ctx, plan, rel)
    ready = wait_kernel_idle(plan)  # the presenter is on the title slide meanwhile
    print(f"  first slide {first:.1f} s after opening; kernel ready (preloaded) {ready:.1f} s later", flush=True)
    rows: list[dict] = []

    def run_live(cur: dict) -> dict | None:
        cells = live_cells(page)
        num = cur["num"].split("/")[0]
        for k, cell in enumerate(cells):
            row = time_to_figure(page, cell, shots=shots / f"{nb_path.stem}-{num:>02}-{k}-asked.png")
            row.update(part=nb_path.stem, slide=num, id=cur["id"])
            rows.append(row)
            asked = f" (asked at {row['asked_s']:.2f} s; {row['mark'][:60]})" if row["asked_s"] is not None else ""
            print(f"  slide {row['slide']:>3} {row['cell']:<40} {row['shown']:<7} {row['seconds']:5.2f} s"
                  f"  {row['status'][:70]}{asked}", flush=True)
        if fits is not None:  # after its cells ran: the slide as the room sees it, on every projector
            sizes = at_projectors(page)
            fits.append((nb_path.stem, num, sizes))
            if cells:
                page.set_viewport_size({"width": 1024, "height": 768})
                page.wait_for_timeout(300)
                page.screenshot(path=str(shots / f"{nb_path.stem}-{num:>02}-1024x768.png"))
                page.set_viewport_size({"width": SLIDE_W, "height": SLIDE_H})
                page.wait_for_timeout(300)
        if cells:
            time.sleep(0.3)
            page.screenshot(path=str(shots / f"{nb_path.stem}-{cur['num'].split('/')[0]:>02}.png"))
            return page.evaluate(CURRENT)
        return None

    try:
        for _ in step_through(page, expected, run_live):
            pass
    finally:
        page.close()
        shutdown_kernels(plan)
    return rows


def report(rows: list[dict], stamp: str) -> str:
    lines = [f"# Shift+Enter → figure, every live slide ({stamp})", "",
             "A panel that asks first is answered with choice A as soon as its question is up; the seconds run "
             "from Shift+Enter to the figure on screen.", "",
             "| part | slide | live cell | shown | question at | seconds | the panel's status line | the mark |",
             "| --- | ---: | --- | --- | ---: | ---: | --- | --- |"]
    for r in rows:
        asked = f"{r['asked_s']:.2f}" if r.get("asked_s") is not None else "–"
        lines.append(f"| {r['part']} | {r['slide']} | `{r['cell']}` | {r['shown']} | {asked} | {r['seconds']:.2f} | "
                     f"{r['status'].replace('|', '/')} | {r.get('mark', '').replace('|', '/')} |")
    if rows:
        secs = sorted(r["seconds"] for r in rows)
        over = [r for r in rows if r["seconds"] > TARGET_S or r["shown"] not in ("figure", "output")]
        lines += ["", f"{len(rows)} live cells · median {secs[len(secs) // 2]:.2f} s · worst {secs[-1]:.2f} s · "
                  f"over {TARGET_S:.0f} s or nothing shown: {len(over)}"
                  + (" (" + ", ".join(f"{r['part']}:{r['slide']}" for r in over) + ")" if over else "")]
    return "\n".join(lines) + "\n"


def console_report(console: list[dict]) -> str:
    from collections import Counter

    lines = ["# Browser console errors and failed requests during the walk", ""]
    by = Counter((c["origin"], c["kind"], re.sub(r"\d+", "N", c["text"])[:160]) for c in console
                 if c["kind"] != "console.warning")
    if not by:
        lines.append("none")
    for (who, kind, text), n in sorted(by.items(), key=lambda kv: (kv[0][0] != "the deck", -kv[1])):
        lines.append(f"- **{who}** · {kind} × {n}: `{text}`")
    per_part = Counter(c["part"] for c in console if c["kind"] != "console.warning")
    lines += ["", "per part: " + (", ".join(f"{p} {n}" for p, n in sorted(per_part.items())) or "0")]
    warnings = Counter((c["origin"], re.sub(r"\d+", "N", c["text"])[:160]) for c in console
                       if c["kind"] == "console.warning")
    lines += ["", "## Warnings (not errors)", ""] + ([f"- **{who}** × {n}: `{text}`" for (who, text), n in
                                                    sorted(warnings.items(), key=lambda kv: -kv[1])] or ["none"])
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from demos.engine.entry import parts_command

    return parts_command(argv, "python -m demos walk", __doc__, "walk", str(OUT), "the report and screenshots", _walk)


def _walk(args) -> int:
    from demos.deck import export, present
    from demos.deck.printing import browser
    from demos.engine.outputs import output_folder, write_atomic
    from demos.engine.plots import live_stamp

    notebooks = export.select_parts(args.parts)
    out = output_folder(args.out, "--out")  # before the server and the browser start
    warm, cache_line = present.cache_status()
    print(cache_line, flush=True)
    plan = present.plan(notebooks[0], port=present.free_port())
    proc = present.start(plan)
    rows: list[dict] = []
    console: list[dict] = []
    fits: list = []
    try:
        present.wait_ready(plan, proc, timeout=180)
        with browser() as ctx:
            where: dict = {}
            watch_console(ctx, console, where)
            for nb in notebooks:
                print(f"{nb.name}", flush=True)
                where["part"] = nb.stem
                rows += walk_part(ctx, plan, nb, out, fits)
    finally:
        present.stop(proc)
    stamp = f"{live_stamp()} · {cache_line} · fresh kernel per part · headless chromium 1280×720"
    write_atomic(out / "figure-times.md", report(rows, stamp))
    write_atomic(out / "console.md", console_report(console))
    write_atomic(out / "walk.json", json.dumps({"rows": rows, "console": console, "projectors": fits}, indent=1))
    from demos.engine.plots import MIN_SCREEN_PX

    from demos.deck.projectors import misfits, projector_report

    bad = misfits(fits)
    write_atomic(out / "projectors.md", f"# Every slide on every projector ({stamp})\n\n" + projector_report(fits)
                 + "\n" + ("\n".join(f"- {b}" for b in bad) or "No slide overflows; no figure text under "
                                                                 f"{MIN_SCREEN_PX} px on any screen.") + "\n")
    print(report(rows, stamp).splitlines()[-1])
    print(projector_report(fits))
    for b in bad:
        print(f"  ⚠ {b}")
    print(f"wrote {out / 'figure-times.md'}, {out / 'projectors.md'}, {out / 'console.md'} and a screenshot per "
          "live slide (at 1280×720 and 1024×768)")
    return 0 if all(r["shown"] in ("figure", "output") for r in rows) and not bad else 1


if __name__ == "__main__":
    sys.exit(main())
