"""Every part executes headless (as exports and CI do) with no error, nothing but the panel's
figure under each live cell, and a figure under every live cell. Times land in
test-artifacts/notebook-times.txt."""
from __future__ import annotations

import pytest

from conftest import executed_notebook
from demos.deck.nbtools import parts

PARTS = [p.name for p in parts()]


@pytest.mark.slow
@pytest.mark.parametrize("name", PARTS)
def test_part_executes_headless_with_its_figures(name):
    nb, secs = executed_notebook(name)
    msg = f"{name} executed in {secs:.1f} s"
    live = [c for c in nb.cells if c.cell_type == "code"]
    assert live, msg
    for c in live:
        assert not [o for o in c.outputs if o.output_type == "error"], (c.source, msg)
        # nothing a framework prints natively (profiler log lines, warnings) reaches a slide
        assert not [o for o in c.outputs if o.output_type == "stream" and o.get("name") == "stderr"], \
            (c.source, [o.get("text", "")[:200] for o in c.outputs], msg)
        assert not any("⚠" in o.get("text", "") for o in c.outputs), (c.source, msg)
        if not c.source.strip().endswith("verdict()"):
            assert any("image/png" in o.get("data", {}) for o in c.outputs), (c.source, msg)
    assert secs < 600, msg
