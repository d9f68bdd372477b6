"""What every part of the deck must be (shared/DECK.md), checked on the stored notebooks."""
from __future__ import annotations

import json
import re
import runpy
from pathlib import Path

import nbformat
import pytest

from demos.deck import nbtools

PARTS = nbtools.parts()
NAMES = [p.name for p in PARTS]


def test_the_deck_has_its_five_parts_in_order():
    assert [n[:2] for n in NAMES] == ["01", "02", "03", "04", "05"], NAMES


def _slide_type(cell) -> str:
    return cell.get("metadata", {}).get("slideshow", {}).get("slide_type", "-")


@pytest.mark.parametrize("path", PARTS, ids=NAMES)
def test_stored_without_outputs(path):
    raw = json.loads(path.read_text())
    for cell in raw["cells"]:
        if cell["cell_type"] == "code":
            assert cell.get("outputs") == [] and cell.get("execution_count") is None, cell["source"]


@pytest.mark.parametrize("path", PARTS, ids=NAMES)
def test_generator_and_notebook_agree(path, monkeypatch):
    src = path.parent / "src" / (path.stem + ".py")
    assert src.exists(), f"{src} generates {path.name}"
    captured = {}

    def fake_write(out, cells, title):
        captured.update(out=Path(out), cells=cells, title=title)
        return Path(out)

    monkeypatch.setattr(nbtools, "write", fake_write)
    runpy.run_path(str(src), run_name="__main__")
    assert captured, f"{src.name} did not call demos.deck.nbtools.write"
    assert captured["out"].name == path.name
    stored = nbformat.read(str(path), as_version=4)
    assert [c.source for c in captured["cells"]] == [c.source for c in stored.cells], \
        f"{path.name} is out of date: run .venv/bin/python {src.relative_to(path.parent.parent)}"
    assert [_slide_type(c) for c in captured["cells"]] == [_slide_type(c) for c in stored.cells]


@pytest.mark.parametrize("path", PARTS, ids=NAMES)
def test_part_structure(path):
    nb = nbformat.read(str(path), as_version=4)
    cells = nb.cells
    assert nb.metadata.get("rise", {}).get("width") == 1280 and nb.metadata["rise"].get("height") == 720
    assert cells[0].cell_type == "markdown" and cells[0].source.lstrip().startswith("#"), "title slide first"
    text = "\n".join(c.source for c in cells if c.cell_type == "markdown").lower()
    assert "agenda" in text
    assert "remember" in text, "a 'what to remember' slide"
    # live cells are a line or two calling demos, and each live slide has speaker notes
    groups, current = [], []
    for c in cells:
        if _slide_type(c) in ("slide", "subslide") and current:
            groups.append(current)
            current = []
        current.append(c)
    groups.append(current)
    live = 0
    for g in groups:
        codes = [c for c in g if c.cell_type == "code" and _slide_type(c) != "skip"]
        for c in codes:
            lines = [ln for ln in c.source.splitlines() if ln.strip() and not ln.strip().startswith("#")]
            assert len(lines) <= 2, f"live cell longer than two lines:\n{c.source}"
        if codes:
            live += 1
            assert any(_slide_type(c) == "notes" for c in g), f"live slide without speaker notes: {codes[0].source}"
    assert live >= 3, "each part has live cells"
    n = nbtools.slide_count(nb)
    assert 10 <= n <= 18, f"{n} slides"


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
