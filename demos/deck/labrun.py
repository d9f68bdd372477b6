"""Run All in JupyterLab, as a student replaying a part does: the real JupyterLab page (not RISE)
in headless chromium, the part opened with a fresh kernel, Run → Run All Cells, then every live
panel answered in order (choice A, as a student predicting) until its figure is on screen.

What it reads: seconds from Run All until every cell has returned (each live cell returns at once:
its measurement takes its turn in the background, :mod:`demos.deck.turns`), whether a panel said
"waiting for the panel above" meanwhile, and for each panel the seconds from Run All to its
question and to its figure, its status line and any error. The browser tests check it on every
part; ``python -m demos.deck.labrun [--parts 1,3]`` writes ``build/labrun/`` (a table and a
screenshot per part).
"""
from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import Any

from demos.deck.turns import WAITING
from demos.deck.walk import SHOWN_IMG, shutdown_kernels
from demos.engine.settings import PROJECT_ROOT

OUT = PROJECT_ROOT / "build" / "labrun"
PAGE_W, PAGE_H = 1400, 900

# Every code cell of the notebook: its prompt ("[*]:" while it runs, "[12]:" once it returned), whether
# it shows a live panel, the panel's question (its choices on screen), figure, status and error.
CELL = """c => {
  const panel = c.querySelector('.jitdeck-panel');
  const img = panel && panel.querySelector('.jp-OutputArea-output img');
  const choice = panel && panel.querySelector('.jitdeck-ask .jitdeck-choice');
  const code = ((c.querySelector('.jp-InputArea-editor') || {}).innerText || '').trim().split('\\n');
  return {prompt: ((c.querySelector('.jp-InputPrompt') || {}).textContent || '').trim(),
          code: code[code.length - 1].trim(), panel: !!panel,
          asked: !!(choice && choice.getClientRects().length),
          figure: (""" + SHOWN_IMG + """)(img),
          status: panel ? ((panel.querySelector('.jitdeck-status') || {}).textContent || '').trim() : '',
          error: panel ? ((panel.querySelector('.jitdeck-error') || {}).textContent || '').trim() : ''};
}"""
CELLS = "() => [...document.querySelectorAll('.jp-Notebook .jp-CodeCell')].map(" + CELL + ")"


# Any status line saying it waits for the panel above, however briefly: watched as the page changes.
WATCH_WAITING = """() => { window.__jitdeckWaited = false;
  new MutationObserver(() => { if (!window.__jitdeckWaited && [...document.querySelectorAll('.jitdeck-status')]
      .some(s => s.textContent.includes(""" + json.dumps(WAITING) + """))) window.__jitdeckWaited = true; })
    .observe(document.body, {subtree: true, childList: true, characterData: true}); }"""


def _live_sources(notebook: str) -> list[str]:
    """The last line of each live cell of ``notebook``, in order."""
    import nbformat

    from demos.deck.walk import LIVE_MARK

    nb = nbformat.read(str(PROJECT_ROOT / notebook), as_version=4)
    return [c.source.strip().splitlines()[-1] for c in nb.cells if c.cell_type == "code" and LIVE_MARK in c.source]


def _cells(page) -> list[dict[str, Any]]:
    return page.evaluate(CELLS)


def _only_the_notebook(page) -> None:
    """A part opened in JupyterLab may open a RISE preview beside it (a notebook whose RISE
    settings autolaunch: the deck's do not), whose full-screen request is a dialog: cancel it and
    close the preview, leaving the notebook a student runs."""
    try:
        page.locator(".jp-Dialog button", has_text="Cancel").first.click(timeout=3_000)
    except Exception:  # playwright's TimeoutError: no dialog came
        pass
    try:  # JupyterLab's question about its news, over the cells' bottom right: "No"
        page.locator(".Toastify button, .jp-toast-button", has_text=re.compile(r"^\s*No\s*$")).first.click(timeout=3_000)
    except Exception:  # playwright's TimeoutError: not asked
        pass
    tabs = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab")
    for i in reversed(range(tabs.count())):
        tab = tabs.nth(i)
        if tab.locator("[data-icon='rise' i]").count():  # jupyterlab_rise's preview tab
            tab.locator(".lm-TabBar-tabCloseIcon").click()


def run_all(ctx, plan, notebook: str, shots: Path | None = None, timeout_s: float = 600.0) -> dict[str, Any]:
    """Run All on ``notebook`` (a path from the server's root) in JupyterLab; answer every live
    panel's question in order and wait for its figure. Returns what :data:`CELLS` read, with times."""
    page = ctx.new_page()
    page.set_viewport_size({"width": PAGE_W, "height": PAGE_H})
    page.set_default_timeout(60_000)
    try:
        # a workspace of its own: JupyterLab would otherwise reopen what the last page had open
        space = f"labrun-{Path(notebook).stem}-{int(time.time())}"
        page.goto(f"{plan.base_url()}lab/workspaces/{space}/tree/{notebook}?reset&token={plan.token}", timeout=120_000)
        page.wait_for_selector(".jp-Notebook .jp-CodeCell", timeout=120_000)
        _only_the_notebook(page)
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=180_000)
        page.evaluate(WATCH_WAITING)
        page.locator(".lm-MenuBar-item", has_text=re.compile(r"^\s*Run\s*$")).first.click()
        page.locator(".lm-Menu-item", has_text="Run All Cells").first.click()
        t0 = time.perf_counter()
        waited, returned_s = False, None
        while time.perf_counter() - t0 < timeout_s:
            cells = _cells(page)
            waited = waited or any(WAITING in c["status"] for c in cells)
            if all(c["prompt"] and "*" not in c["prompt"] and c["prompt"] != "[ ]:" for c in cells):
                returned_s = time.perf_counter() - t0
                break
            time.sleep(0.1)
        panels: list[dict[str, Any]] = []
        live = page.locator(".jp-Notebook .jp-CodeCell", has=page.locator(".jitdeck-panel"))
        for i in range(live.count()):
            cell = live.nth(i)
            cell.scroll_into_view_if_needed()
            row: dict[str, Any] = {"asked_s": None, "figure_s": None}
            while time.perf_counter() - t0 < timeout_s:
                got = cell.evaluate(CELL)  # the same reading as the whole notebook's, of this cell
                asked, figure, error, status = got["asked"], got["figure"], got["error"], got["status"]
                waited = waited or WAITING in status
                if asked and row["asked_s"] is None:
                    row["asked_s"] = time.perf_counter() - t0
                    cell.locator(".jitdeck-ask .jitdeck-choice").first.click()  # the student predicts A
                elif figure or error:
                    row["figure_s"] = time.perf_counter() - t0
                    if shots is not None:  # the panel as the student sees it
                        shots.mkdir(parents=True, exist_ok=True)
                        time.sleep(0.3)
                        cell.screenshot(path=str(shots / f"{Path(notebook).stem}-panel-{i + 1}.png"))
                    break
                time.sleep(0.1)
            panels.append(row)
        time.sleep(0.5)
        cells = _cells(page)
        if shots is not None:
            shots.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(shots / f"{Path(notebook).stem}-run-all.png"), full_page=True)
        live_cells = [c for c in cells if c["panel"]]
        sources = _live_sources(notebook)  # an off-screen cell's editor holds no text in the page
        for k, (row, c) in enumerate(zip(panels, live_cells)):
            row.update(code=sources[k] if k < len(sources) else c["code"], figure=c["figure"], error=c["error"],
                       status=c["status"][:160])
        waited = waited or bool(page.evaluate("() => window.__jitdeckWaited"))
        return {"notebook": notebook, "returned_s": returned_s, "waited": waited, "panels": panels,
                "running": [c["code"] for c in cells if "*" in c["prompt"]],
                "last_figure_s": max((r["figure_s"] or 0.0 for r in panels), default=0.0)}
    finally:
        page.close()
        shutdown_kernels(plan)


def report(runs: list[dict[str, Any]], stamp: str) -> str:
    lines = [f"# Run All in JupyterLab, every part ({stamp})", "",
             "Each part opened in JupyterLab with a fresh kernel, Run → Run All Cells; each panel's question "
             "answered A as soon as it was up; seconds from Run All.", "",
             "| part | cells returned | said “waiting for the panel above” | panels | last figure | slowest panel |",
             "| --- | ---: | --- | ---: | ---: | --- |"]
    for r in runs:
        slow = max(r["panels"], key=lambda p: p["figure_s"] or 1e9, default=None)
        lines.append(f"| {Path(r['notebook']).stem} | {r['returned_s'] or float('nan'):.1f} s | "
                     f"{'yes' if r['waited'] else 'no'} | {len(r['panels'])} | {r['last_figure_s']:.1f} s | "
                     f"`{slow['code'] if slow else ''}` |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from demos.engine.entry import parts_command

    return parts_command(argv, "python -m demos.deck.labrun", __doc__, "labrun", str(OUT), "the table and screenshots", _run)


def _run(args) -> int:
    from demos.deck import export, present
    from demos.deck.printing import browser
    from demos.engine.outputs import output_folder, write_atomic
    from demos.engine.plots import live_stamp

    notebooks = export.select_parts(args.parts)
    out = output_folder(args.out, "--out")
    plan = present.plan(notebooks[0], port=present.free_port())
    proc = present.start(plan)
    runs = []
    try:
        present.wait_ready(plan, proc, timeout=180)
        with browser() as ctx:
            for nb in notebooks:
                run = run_all(ctx, plan, nb.relative_to(PROJECT_ROOT).as_posix(), shots=out)
                print(json.dumps(run), flush=True)
                runs.append(run)
    finally:
        present.stop(proc)
    write_atomic(out / "run-all.md", report(runs, live_stamp()))
    print(f"wrote {out / 'run-all.md'}")
    ok = all(r["returned_s"] is not None and not r["running"] and all(p["figure"] and not p["error"] for p in r["panels"])
             for r in runs)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
