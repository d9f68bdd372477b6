"""What every part of the deck must be (docs/authoring.md), checked on the stored notebooks."""
from __future__ import annotations

import json
import re

import nbformat
import pytest

from demos.deck import nbtools

PARTS = nbtools.parts()
NAMES = [p.name for p in PARTS]


def test_the_deck_has_its_seven_parts_in_order():
    assert [n[:2] for n in NAMES] == ["01", "02", "03", "04", "05", "06", "07"], NAMES



@pytest.mark.parametrize("path", PARTS, ids=NAMES)
def test_stored_clean(path):
    """The notebook is the slides' one source: stored exactly as nbtools.clean leaves it (no
    outputs, no session metadata), so a save from JupyterLab changes only what was edited."""
    raw = json.loads(path.read_text())
    for cell in raw["cells"]:
        if cell["cell_type"] == "code":
            assert cell.get("outputs") == [] and cell.get("execution_count") is None, cell["source"]
    nb = nbformat.read(str(path), as_version=4)
    assert nbformat.writes(nbformat.from_dict(nbtools.clean(nb))) + "\n" == path.read_text(), \
        f"{path.name} is not stored clean: run `make clean-slides`"


@pytest.mark.parametrize("path", PARTS, ids=NAMES)
def test_part_follows_the_deck_rules(path):
    nb = nbformat.read(str(path), as_version=4)
    assert nbtools.problems(nb, path.name) == []
    live = sum(1 for g in nbtools.slide_groups(nb) if any(c.cell_type == "code" for c in g))
    assert live >= 3, "each part has live cells"
    n = nbtools.slide_count(nb)
    assert 10 <= n <= 18, f"{n} slides"


def test_every_live_cell_calls_a_declared_demo_and_every_demo_is_on_a_slide():
    from demos import topics

    declared = {d.key for d in topics.load()}
    called = set()
    for path in PARTS:
        for c in nbformat.read(str(path), as_version=4).cells:
            if c.cell_type == "code":
                call = c.source.strip().splitlines()[-1]
                called.add(call.split("(")[0])
    missing = {c for c in called if c not in declared and not c.endswith(".verdict")}
    assert not missing, f"live cells call undeclared demos: {sorted(missing)}"
    assert declared - called == set(), f"declared demos no slide shows: {sorted(declared - called)}"


@pytest.mark.parametrize("path", PARTS, ids=NAMES)
def test_rise_finds_the_css_it_asks_for(path):
    """jupyterlab_rise requests rise.css and <notebook>.css from the notebook's folder: both
    exist, so the slideshow's console shows no 404 of ours."""
    assert (path.parent / "rise.css").exists() and path.with_suffix(".css").exists()


def test_the_lint_names_what_is_wrong():
    nb = nbformat.read(str(PARTS[0]), as_version=4)
    code = next(c for c in nb.cells if c.cell_type == "code")
    code.source = "import demos.topics.eager as e\ne.timeline()\nprint(1)"
    code.outputs = [nbformat.v4.new_output("stream", text="x")]
    nb.metadata.rise["width"] = 1024
    found = "\n".join(nbtools.problems(nb))
    assert "stored with outputs" in found and "a live cell is" in found and "RISE settings" in found


@pytest.mark.parametrize("path", PARTS[:-1], ids=NAMES[:-1])
def test_each_part_links_to_the_next(path):
    nxt = PARTS[PARTS.index(path) + 1].name
    nb = nbformat.read(str(path), as_version=4)
    last_md = "\n".join(c.source for c in nb.cells[-3:] if c.cell_type == "markdown")
    assert re.search(r"\]\(\.?/?" + re.escape(nxt) + r"\)", last_md), f"last slides of {path.name} link to {nxt}"


def test_seed_figures_are_cited():
    text = "\n".join(c.source for p in PARTS for c in nbformat.read(str(p), as_version=4).cells)
    for fig in ("731", "144", "549", "81.9", "183", "214", "22.5", "14.4"):
        assert fig in text, f"seed figure {fig} not cited anywhere in the deck"


def test_ui_bench_report_names_slow_controls_and_exempts_cold_compiles():
    from demos.deck.uibench import report

    rows = [{"demo": "a.fast", "control": "N", "median_s": 0.2, "run_button": False, "cold": False},
            {"demo": "a.slow", "control": "N", "median_s": 0.7, "run_button": False, "cold": False},
            {"demo": "a.sweep", "control": "n", "median_s": 4.0, "run_button": True, "cold": False},
            {"demo": "a.cold", "control": "w", "median_s": 40.0, "run_button": True, "cold": True}]
    text = report(rows)
    assert "over target (0.5 s a move, 5 s a Run): a.slow:N" in text
    assert "a.sweep" not in text.split("over target")[1].split("\n")[0] and "exempt" in text and "a.cold" in text
    assert "4 controls over 4 demos" in text


def test_the_authoring_rules_name_only_checks_and_code_that_exist():
    """docs/authoring.md explains each rule by the check that enforces it: every test, module,
    setting and make target it names exists, so the page cannot drift from what is enforced."""
    from pathlib import Path

    from demos.deck import nbtools as nt

    root = Path(nt.PROJECT_ROOT)
    text = (root / "docs" / "authoring.md").read_text()
    tests_src = "\n".join(p.read_text() for p in (root / "tests").glob("test_*.py"))
    named_tests = set(re.findall(r"`(test_\w+)`", text))
    assert named_tests, "the page names the tests that enforce its rules"
    for t in named_tests:
        assert f"def {t}(" in tests_src, f"docs/authoring.md names {t}, which no test defines"
    for path in re.findall(r"`((?:tests|demos|slides|assets)/[\w/.]+\.(?:py|css))`", text):
        if "NN_" not in path and "<" not in path:  # a pattern, not a file
            assert (root / path).exists(), f"docs/authoring.md names {path}, which does not exist"
    makefile = (root / "Makefile").read_text()
    for target in set(re.findall(r"`make ([\w-]+)", text)):
        assert re.search(rf"^{target}:", makefile, re.M), f"docs/authoring.md names make {target}"
    for key in ("width", "height", "theme", "autolaunch"):
        assert key in nt.RISE_SETTINGS
    assert "1280×720" in text and (nt.RISE_SETTINGS["width"], nt.RISE_SETTINGS["height"]) == (1280, 720)


def test_ui_bench_times_measuring_and_drawing_apart():
    """A move's seconds split into measuring and drawing + encoding (the targets differ)."""
    from demos.deck.uibench import bench_panel, report
    from demos.topics import fusion

    panel = fusion.memory.panel()
    rows = bench_panel(panel, repeats=2)
    assert rows and all(r["measure_s"] is not None and r["draw_s"] is not None for r in rows), rows
    for r in rows:
        assert 0 < r["draw_s"] and 0 <= r["measure_s"]
        assert r["measure_s"] <= r["max_s"] and r["draw_s"] <= r["max_s"], r  # each a part of a redraw
        assert 0 <= r["layouts"] <= r["n"], r
    # every redraw after the first drew into the panel's one kept figure
    assert len(panel.kept.figures) == 1 and panel.kept.reused == 4 * len(rows) - 1, panel.kept.reused
    rows = [{**r, "demo": "fusion.memory", "first_s": 0.1, "run_button": False, "cold": False} for r in rows]
    assert "drawing + encoding: median" in report(rows)
    slow = [{**rows[0], "draw_s": 0.2, "draw_max_s": 0.2, "view": True, "median_s": 0.3}]
    text = report(slow)
    assert "drawing over 0.1 s: fusion.memory" in text and "view-only controls over 0.15 s: fusion.memory" in text
