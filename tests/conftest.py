"""Shared fixtures: executed notebooks (each part runs headless once per session, for the notebook,
export and figure tests), the slideshow walked in a real browser (each deck once per session, for
the browser and the live-widget tests), GPU skips."""
from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import pytest

# The tests keep `make warm`-style results in a folder of their own (never the developer's .cache/last,
# so no test depends on whether `make warm` ran); kernels the tests start inherit it.
# The process that makes the folder (pytest-xdist's controller: its workers inherit it) removes it at
# the end.
_OWN_WARMED_DIR = "DEMOS_WARMED_DIR" not in os.environ
if _OWN_WARMED_DIR:
    import tempfile

    os.environ["DEMOS_WARMED_DIR"] = tempfile.mkdtemp(prefix="jitdeck-warmed-")


def pytest_unconfigure(config):
    for kernel in _PART_KERNEL:  # the parts' headless kernel (executed_notebook)
        kernel.close()
    if _OWN_WARMED_DIR:
        import shutil

        shutil.rmtree(os.environ["DEMOS_WARMED_DIR"], ignore_errors=True)

import demos  # noqa: F401  (environment before torch/JAX)

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
_EXECUTED: dict[str, tuple] = {}
_PART_KERNEL: list = []  # the one kernel executed_notebook runs the parts in, started by the first


# `make test` runs the test files on two pytest-xdist workers, each file whole on one worker (its
# module fixtures run once). The files that share one headless execution and one browser walk of
# each part go to one worker together, so no part is executed twice. (A scheduler of our own:
# pytest-xdist's `xdist_group` does not reach pytest 9's node ids.) No test waits for another
# test's process or reads what it measured: each measures what it needs itself, so any order
# gives the same results, and the order below is only for speed. (One measurement is shared: a
# demo that opens warmed is measured at its defaults once per session, by whichever of the deck's
# warming or test_demos.py's test of it comes first, into the session's warm folder:
# measured_at_defaults.)
DECK_FILES = ("test_notebooks.py", "test_export.py", "test_browser.py")


# test_demos.py's test of each demo (the demo measured at its defaults, drawn, recorded, and each
# control moved: model.compile_cost's alone takes two minutes) is a group of its own, so the two
# workers share them.
SHARED = "tests/test_demos.py::test_demo_draws_records_and_redraws["


def worker_group(nodeid: str) -> str:
    """The worker a test goes to with: its file, "deck" for the files that share the parts, or
    "demo:<key>" for one demo's test in test_demos.py."""
    if nodeid.startswith(SHARED):
        return "demo:" + nodeid[len(SHARED):-1]
    path = nodeid.split("::", 1)[0]
    return "deck" if path.rsplit("/", 1)[-1] in DECK_FILES else path


def _in_group(nodeid: str) -> int:
    """The demos' own groups, last slide first (the later parts measure the larger models: the
    longest first, so the two workers end together); within any other group, the collection's
    order."""
    group = worker_group(nodeid)
    return -_deck_order().get(group[5:], 0) if group.startswith("demo:") else 0


def _deck_order() -> dict[str, int]:
    from demos import topics

    return {d.key: i for i, d in enumerate(topics.load())}


# The order the groups are handed out in, the longest first: a worker takes the next group when it
# is almost done with its last. "deck" (the headless executions and the walks) on one worker and
# the ordering test's process on the other, then the other long files, then each demo's test in
# test_demos.py (to whichever worker is free, the longest first, so the two workers end together).
# The rest keep their order and fill in.
FIRST = ("deck", "tests/test_ordering.py", "tests/test_inspector.py", "tests/test_model.py",
         "tests/test_figure_slots.py", "tests/test_devices_cli.py", "tests/test_exercises.py",
         "tests/test_present.py", "tests/test_trace.py", "tests/test_recompilation.py", "demo:")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class ByGroup(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return worker_group(nodeid)

    config.option.loadscopereorder = False  # the collection's order (below), not the most tests first
    return ByGroup(config, log)


def _rank(rank: dict, group: str) -> int:
    return rank.get("demo:" if group.startswith("demo:") else group, len(rank))


def worker_order(nodeid: str) -> tuple:
    """Where a test comes in a worker's list: its group's place in FIRST, its place in its group,
    then its file (the groups FIRST does not name, by file name: the same order whichever order the
    files were named in); a sort keeps each file's own order."""
    rank = {g: i for i, g in enumerate(FIRST)}
    return _rank(rank, worker_group(nodeid)), _in_group(nodeid), nodeid.split("::", 1)[0]


def pytest_collection_modifyitems(config, items):
    from demos.engine.devices import torch_device

    if os.environ.get("PYTEST_XDIST_WORKER"):  # what a worker collects is the order the groups are handed out
        items.sort(key=lambda item: worker_order(item.nodeid))
    # in one process the collection's order: no test depends on another having run first

    if torch_device() != "cuda":
        skip = pytest.mark.skip(reason="needs an NVIDIA GPU (run `pytest -m gpu` on a GPU machine)")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)


_WARMED: list[str] = []


def warmed_for_the_deck() -> None:
    """What `make warm` leaves for the panels that open warmed (``panel=`` "warmed" or "cold"):
    each one's result at the values the slides open it at (part 7's presets, read from the cells by
    ``nbtools.live_cells``), in this session's DEMOS_WARMED_DIR. The parts are executed and walked
    as a lecturer runs them after `make warm`: those panels open on it (the headless execution and
    the walk would otherwise measure each of them again); every other panel measures in the kernel.
    Each is measured here, once per session, from the declared state (what this session's folder
    already holds, from here or from :func:`measured_at_defaults`, is not measured again)."""
    if _WARMED:
        return
    import nbformat

    from demos import topics
    from demos.deck.demo import load_warmed, save_warmed
    from demos.deck.nbtools import live_cells, parts

    by_key = {d.key: d for d in topics.load()}
    wanted = [(by_key[key], values) for nb in parts() for key, values in live_cells(nbformat.read(str(nb), as_version=4))
              if key in by_key and by_key[key].opens_warmed]
    for demo, values in wanted:
        if load_warmed(demo, values) is None:
            if demo.key not in _WARMED:
                demo.forget()
            save_warmed(demo, demo.run(values))
        _WARMED.append(demo.key)
    for demo in {d.key: d for d, _ in wanted}.values():
        demo.forget()  # nothing it compiled stays behind in this process


def measured_at_defaults(demo) -> dict:
    """``demo`` measured at its defaults from the declared state, its claims holding (a failing
    claim is measured once more: a shared CI box can stall one timing; counts are exact, so a
    wrong count fails twice). A demo whose panel opens warmed is measured once per session across
    the workers: the session's warm folder (what `make warm` leaves, which the deck's executions
    and walks open on) holds that measurement, whichever made it first, this or
    :func:`warmed_for_the_deck`; every other demo is measured here. Either is a measurement at
    the same values from the declared state, so any order proves the same."""
    from demos.deck.demo import load_warmed, save_warmed

    demo.forget()
    kept = load_warmed(demo) if demo.opens_warmed else None
    measured = kept if kept is not None else demo.run()
    if kept is not None:
        demo.adopt(measured)  # the latest measurement, as if made here: the panel draws it
    elif demo.opens_warmed:
        save_warmed(demo, measured)
    if all(demo.check_claims(measured).values()):
        return measured
    demo.forget()
    return demo.run()


def executed_notebook(name: str, timeout: int = 1200):
    """Execute slides/<name> headless once per test session (static figures, as `make pdf` does:
    every part in one kernel, one after another, each from an empty namespace); returns (nb,
    seconds). The notebook tests check it and the export converts it: no part is executed
    headless twice in a session (each execution is a line of notebook-times.txt)."""
    from demos.deck.export import part_kernel
    from demos.deck.nbtools import SLIDES_DIR, execute

    path = SLIDES_DIR / name
    if name not in _EXECUTED:
        warmed_for_the_deck()
        if not _PART_KERNEL:
            _PART_KERNEL.append(part_kernel())
        nb, secs = execute(path, timeout=timeout, kernel=_PART_KERNEL[0])
        _EXECUTED[name] = (nb, secs)
        ARTIFACTS.mkdir(exist_ok=True)
        with (ARTIFACTS / "notebook-times.txt").open("a") as f:
            f.write(f"{name}\t{secs:.1f} s\n")
    return _EXECUTED[name]


# -- the slideshow in a real browser --------------------------------------------------------
# test_browser.py walks every deck in RISE with every code cell run in a live kernel (what a
# lecture does); test_notebooks.py reads the same walk for its live-widget checks. Each deck is
# walked once per session, by whichever test asks first.
FIXTURE_DECK = "tests/fixtures/sample_deck.ipynb"
_WALKED: dict[str, dict | Exception] = {}
# the console messages and requests of the walks done outside test_browser.py's browser
WALKED_ELSEWHERE: dict[str, list] = {"console": [], "requests": []}


def require_browser() -> str:
    """Debian's chromium and Playwright, or a skip (a failure under CI=true)."""
    from demos.deck.printing import chromium_path
    from demos.engine.errors import DemoError

    try:
        exe = chromium_path()
        import playwright.sync_api  # noqa: F401
    except (DemoError, ImportError) as exc:
        if in_ci():
            pytest.fail(f"CI=true and the browser is missing: {exc}")
        pytest.skip(f"no headless browser here: {exc}")
    return exe


def browser_here() -> bool:
    """Whether the browser is here (:func:`require_browser`): False where it would skip; under
    CI=true a missing browser fails."""
    try:
        require_browser()
    except pytest.skip.Exception:
        return False
    return True


@contextlib.contextmanager
def jupyter_server():
    """The Jupyter server `make present` starts, on a free port (stopped on leaving)."""
    import time

    from demos.deck import present

    require_browser()
    os.environ.pop("JUPYTER_TOKEN", None)
    p = present.plan(FIXTURE_DECK, port=present.free_port())
    t0 = time.perf_counter()
    proc = present.start(p)
    try:
        present.wait_ready(p, proc, timeout=180)
        p.extra["ready_s"] = time.perf_counter() - t0
        p.extra["started_at"] = t0
        yield p
    finally:
        present.stop(proc)


@contextlib.contextmanager
def chromium():
    """Headless chromium that records every request (``ctx.requests``) and every console error
    and failed request, by origin (``ctx.console``; ``ctx.where['part']`` tags them)."""
    from demos.deck.printing import browser
    from demos.deck.walk import watch_console

    requests: list[str] = []
    with browser() as ctx:
        ctx.on("request", lambda r: requests.append(r.url))
        ctx.requests = requests
        ctx.console, ctx.where = [], {}
        watch_console(ctx, ctx.console, ctx.where)
        yield ctx


@pytest.fixture(scope="module")
def server():
    with jupyter_server() as p:
        yield p


@pytest.fixture(scope="module")
def browser_ctx(server):
    with chromium() as ctx:
        yield ctx


def run_cells_on_slide(page, timeout_s: float = 300) -> tuple[float, list[bool]]:
    """Run every code cell of the current slide the way a lecturer does (click, Ctrl-Enter: run in
    place) and wait until each has finished; a panel that asks first is answered A, as a student
    predicting does. Returns the seconds it took, and for each panel that asked, whether its figure
    was hidden while the question was on screen (the room is asked before it is shown)."""
    import re
    import time

    from demos.deck.walk import FIGURE_SHOWN, predict

    t0 = time.perf_counter()
    hidden: list[bool] = []
    cells = page.locator(".reveal .slides section.present:not(.stack) .jp-CodeCell")
    for i in range(cells.count()):
        cell = cells.nth(i)
        if not cell.is_visible():
            continue
        cell.locator(".jp-InputArea-editor").click()
        page.keyboard.press("Control+Enter")
        page.keyboard.press("Escape")
        prompt = cell.locator(".jp-InputPrompt")
        while True:
            text = prompt.text_content() or ""
            if re.search(r"\[\d+\]", text):
                break
            if time.perf_counter() - t0 > timeout_s:
                raise AssertionError(f"a cell did not finish within {timeout_s:.0f} s: {cell.inner_text()[:80]!r}")
            time.sleep(0.25)
        time.sleep(0.3)  # the panel's question lays out
        shown = cell.evaluate(FIGURE_SHOWN) == "figure"  # the walk's own reading of a drawn figure
        if predict(cell):
            hidden.append(not shown)
    time.sleep(0.5)  # let the widgets lay out
    return time.perf_counter() - t0, hidden


# A control moved in the walk, as a lecturer moves one: (deck, the last line of a live cell, how).
# The sample deck's slider is typed into and then stepped with the arrow key (the slide must stay);
# part 1's first live slider is clicked. What each move saw goes to the walk's ``moves``
# (test_browser.py checks it); screenshots to test-artifacts/browser/.
SLIDER_TRACK = ".jitdeck-panel .widget-slider .noUi-target"  # ipywidgets 8 draws sliders with noUiSlider
SLIDER_HANDLE = ".jitdeck-panel .widget-slider .noUi-handle"
PANEL_IMG = ".jitdeck-panel .jp-OutputArea-output img"


def moves_in(notebook: str) -> dict[str, str]:
    """The live cells whose control the walk of ``notebook`` moves: {last line: "typed"/"clicked"}."""
    import nbformat

    from demos.deck.nbtools import parts

    if notebook == FIXTURE_DECK:
        return {"sample_panel.panel()": "typed"}
    found = parts()
    if found and notebook == f"slides/{found[0].name}":
        for c in nbformat.read(str(found[0]), as_version=4).cells:
            if (c.cell_type == "code" and c.metadata.get("slideshow", {}).get("slide_type", "-") != "skip"
                    and "(" in c.source):
                return {c.source.strip().splitlines()[-1]: "clicked"}
    return {}


def _new_image(cell, old: str | None, timeout_s: float) -> str | None:
    """The panel's figure once it differs from ``old`` (None when it did not within ``timeout_s``)."""
    import time

    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout_s:
        imgs = cell.locator(PANEL_IMG)
        src = imgs.first.get_attribute("src") if imgs.count() else None
        if src and src != old:
            return src
        time.sleep(0.2)
    return None


def move_control(page, text: str, how: str, shots: Path | None) -> dict:
    """Move the control of the live cell ending in ``text`` on the current slide (``how``: see
    :func:`moves_in`); returns what the slideshow showed (``error`` when the move could not be made).
    Screenshots before and after go beside ``shots`` (the deck's folder), named for the deck."""
    import time

    from demos.deck.walk import CURRENT

    def shot(when: str) -> None:
        if shots is not None:
            page.screenshot(path=str(shots.parent / f"{shots.name}-live-{when}.png"))

    cell = page.locator("section.present .jp-CodeCell", has_text=text).first
    got: dict = {"how": how}
    try:
        old = cell.locator(PANEL_IMG).first.get_attribute("src")
        got["slide"] = page.evaluate(CURRENT)["id"]
        shot("before")
        if how == "typed":  # the slider's readout typed over, then the focused slider's arrow key
            readout = cell.locator(".widget-readout").first
            got["readout"] = [readout.inner_text().strip()]
            readout.click()
            readout.evaluate("e => window.getSelection().selectAllChildren(e)")  # the old value, to type over
            page.keyboard.type("11")
            page.keyboard.press("Enter")
            new = _new_image(cell, old, 60)
            got["readout"].append(readout.inner_text().strip())
            for _ in range(100):  # the status line follows the image by a moment
                if "done in" in cell.locator(".jitdeck-panel").inner_text():
                    break
                time.sleep(0.2)
            got["status"] = cell.locator(".jitdeck-panel").inner_text()
            cell.locator(SLIDER_HANDLE).first.focus()  # focus without a click that could move it
            page.keyboard.press("ArrowRight")
            newer = _new_image(cell, new, 120)
            got["readout"].append(readout.inner_text().strip())
            got["figures"] = [old, new, newer]
        else:  # a click on the slider's track, far from its handle
            track = cell.locator(SLIDER_TRACK).first
            got["slider"] = track.count() > 0
            box, handle = track.bounding_box(), cell.locator(SLIDER_HANDLE).first.bounding_box()
            x = box["x"] + (0.15 if handle["x"] > box["x"] + box["width"] / 2 else 0.85) * box["width"]
            t0 = time.perf_counter()
            page.mouse.click(x, box["y"] + box["height"] / 2)
            new = _new_image(cell, old, 240)
            got["redraw_s"] = time.perf_counter() - t0
            got["figures"] = [old, new]
        after = page.evaluate(CURRENT)
        got["slide_after"], got["bottom"] = after["id"], after["bottom"]
        shot("after")
    except Exception as exc:  # noqa: BLE001 (the walk goes on; the move's test fails with it)
        got["error"] = repr(exc)
    finally:
        page.evaluate("() => document.activeElement && document.activeElement.blur()")  # Space steps the slides again
    return got


def walk(page, expected: int, shots: Path | None, run: bool = False, moves: dict[str, str] | None = None) -> list[dict]:
    """Every distinct slide once, with the furthest its content reached over its fragments.
    With ``run``, every code cell is executed when its slide comes up (as in a lecture), and the
    slide's reading carries ``cells``: what each code cell shows once it ran (walk.CELLS), and
    ``hidden``: for each panel that asked, whether its figure waited for the answer. ``moves``
    ({a live cell's last line: how}, :func:`moves_in`): that cell's control is then moved, and the
    reading carries ``moved``: {line: what the move saw}. With ``run``, every slide is also read at
    every projector size once its cells ran (``projectors``: walk.at_projectors)."""
    from demos.deck.walk import CURRENT, at_projectors, cell_facts, step_through

    order: list[str] = []
    seen: dict[str, dict] = {}

    def on_new(cur: dict) -> dict | None:
        if run and cur["prompts"]:
            ran, hidden = run_cells_on_slide(page)
            cells = cell_facts(page)
            cur = {**page.evaluate(CURRENT), "run_s": ran, "cells": cells, "hidden": hidden}
            here = {c["code"] for c in cells}
            moved = {t: move_control(page, t, how, shots) for t, how in (moves or {}).items() if t in here}
            if moved:
                cur["moved"] = moved
        if run:
            cur = {**cur, "projectors": at_projectors(page)}
        order.append(cur["id"])
        if shots is not None:
            page.screenshot(path=str(shots / f"{len(order):02d}-{cur['id']}.png"))
        return cur

    for cur in step_through(page, expected, on_new):
        prev = seen.get(cur["id"])
        if prev is None or cur["bottom"] > prev["bottom"]:
            seen[cur["id"]] = {**(prev or {}), **cur}
    return [seen[i] for i in order]


def walk_beside(notebooks: list[str]) -> None:
    """Start walking ``notebooks`` (those not walked or started yet) in a thread, with a Jupyter
    server and a browser of its own, beside the walks this thread does: a walk waits on its kernel
    and its browser about half the time, so two at once keep the machine's two cores busy.
    :func:`walked_deck` of one of them waits for that thread, and walks the deck itself when the
    thread could not (no server or browser: the same error comes again, in its test)."""
    import threading

    todo = [n for n in notebooks if n not in _WALKED and n not in _BESIDE]
    if not todo:
        return
    warmed_for_the_deck()  # here, before the thread: it measures in this process
    ended = threading.Event()
    for n in todo:
        _BESIDE[n] = ended

    def work() -> None:
        try:
            with jupyter_server() as p, chromium() as ctx:
                try:
                    for n in todo:
                        with contextlib.suppress(Exception):  # kept in _WALKED: its tests fail with it
                            _walk(n, p, ctx)
                finally:  # what test_browser.py checks of its own browser's walks, it checks of these
                    WALKED_ELSEWHERE["console"] += ctx.console
                    WALKED_ELSEWHERE["requests"] += ctx.requests
        except BaseException:  # noqa: BLE001 (a skip or a failure: the deck's own test meets it again)
            pass
        finally:
            ended.set()

    threading.Thread(target=work, name="walk-beside", daemon=True).start()


def beside_ended(notebook: str | None = None) -> None:
    """Return once the thread walking ``notebook`` (any, by default) has ended."""
    for n, ended in list(_BESIDE.items()):
        if notebook in (None, n):
            ended.wait(WALK_BESIDE_WAIT_S)


_BESIDE: dict = {}  # a notebook walk_beside() walks → the event its thread sets when it ends
WALK_BESIDE_WAIT_S = 1800


def walked_deck_for(notebook: str) -> dict:
    """:func:`walked_deck` for a test outside test_browser.py: a deck not walked yet in this
    session is walked with a server and a browser of its own, stopped when the walk is done (a
    browser left open would hold Playwright's event loop over the tests that follow)."""
    beside_ended(notebook)
    if notebook not in _WALKED:
        with jupyter_server() as p, chromium() as ctx:
            try:
                return walked_deck(notebook, p, ctx)
            finally:  # what test_browser.py checks of its own browser's walks, it checks of these too
                WALKED_ELSEWHERE["console"] += ctx.console
                WALKED_ELSEWHERE["requests"] += ctx.requests
    return walked_deck(notebook, None, None)


def walked_deck(notebook: str, server, ctx) -> dict:
    """``notebook`` (a path from the project root) walked in RISE once per session: every slide,
    every code cell run in the slideshow's kernel when its slide comes up. Returns ``visited``
    (one reading per slide, walk.CURRENT), ``cells`` (every code cell that ran, in order,
    walk.CELLS), ``expected`` (the notebook's slide count), ``math`` (typeset formulas on slide 2)
    and the times; screenshots and times go to test-artifacts/browser/. A walk that failed fails
    every test that reads it, with its error (it is not walked again). A deck walk_beside() walks
    is waited for."""
    beside_ended(notebook)
    if notebook in _WALKED:
        got = _WALKED[notebook]
        if isinstance(got, Exception):
            raise AssertionError(f"the walk of {notebook} failed earlier in this session: {got!r}") from got
        return got
    return _walk(notebook, server, ctx)


def _walk(notebook: str, server, ctx) -> dict:
    """:func:`walked_deck`'s walk, on ``server`` in ``ctx``."""
    import time

    import nbformat

    from demos.deck.nbtools import slide_count
    from demos.deck.walk import open_slideshow, shutdown_kernels

    try:
        warmed_for_the_deck()
        expected = slide_count(nbformat.read(str(ROOT / notebook), as_version=4))
        out = ARTIFACTS / "browser"
        shots = out / Path(notebook).stem
        shots.mkdir(parents=True, exist_ok=True)
        ctx.where["part"] = Path(notebook).stem
        page, first = open_slideshow(ctx, server, notebook)
        try:
            with open(out / "first-slide-times.txt", "a") as f:
                f.write(f"{notebook}\tfirst slide shown {first:.1f} s after page load started"
                        f" (server was ready {server.extra['ready_s']:.1f} s after start)\n")
            t0 = time.perf_counter()
            visited = walk(page, expected, shots, run=True, moves=moves_in(notebook))
            walk_s = time.perf_counter() - t0
            ran = sum(v.get("run_s", 0) for v in visited)
            hidden = [h for v in visited for h in v.get("hidden", [])]
            with open(out / "first-slide-times.txt", "a") as f:
                f.write(f"{notebook}\twalked {len(visited)} slides in {walk_s:.0f} s, "
                        f"running every code cell took {ran:.0f} s; {len(hidden)} questions answered, "
                        f"{sum(hidden)} with the figure still hidden\n")
            math = page.locator("#slide-2-0 mjx-container").count()
        finally:
            page.close()
            shutdown_kernels(server)
    except Exception as exc:
        _WALKED[notebook] = exc
        raise
    moved = {t: m for v in visited for t, m in v.get("moved", {}).items()}
    for t, m in moved.items():
        if "redraw_s" in m:
            with open(out / "first-slide-times.txt", "a") as f:
                f.write(f"{notebook}\tlive cell {t!r}: slider clicked, figure redrawn in {m['redraw_s']:.1f} s\n")
    _WALKED[notebook] = {"visited": visited, "cells": [c for v in visited for c in v.get("cells", [])],
                         "moves": moved, "hidden": hidden,
                         "expected": expected, "math": math, "first_s": first, "walk_s": walk_s, "run_s": ran}
    (out / f"{Path(notebook).stem}-cells.json").write_text(json.dumps(_WALKED[notebook]["cells"], indent=1))
    return _WALKED[notebook]


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture(autouse=True)
def _no_static_leak():
    """No test leaves the deck's mode switches behind: a stray DEMOS_STATIC would turn every later
    live execution static (its kernels inherit this process's environment)."""
    keys = ("DEMOS_STATIC", "DEMOS_RESULTS")
    before = {k: os.environ.get(k) for k in keys}
    yield
    for k, v in before.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")
