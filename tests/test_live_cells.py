"""A live cell never waits, with or without a front end: executed live (widgets on, no
DEMOS_STATIC) by plain nbclient, as `jupyter execute`, VS Code or a grader runs a part, every code
cell returns at once (its measurement takes its turn in the background, demos.deck.turns), three
executions of every part in a row, and the panels then measure one after another to a figure. The
seconds land in test-artifacts/live-cells.txt (the slowest cell per part)."""
from __future__ import annotations

import pytest

from conftest import ARTIFACTS
from demos.deck.nbtools import SLIDES_DIR, live_run, parts
from demos.deck.turns import NEVER_WAITS_S

PARTS = [p.name for p in parts()]


@pytest.mark.slow
@pytest.mark.parametrize("name", PARTS)
def test_a_part_executed_live_without_a_front_end_never_waits(name):
    # three executions; the first also waits for every panel's turn and reads how it ended
    runs = [live_run(SLIDES_DIR / name, cell_timeout_s=int(NEVER_WAITS_S), wait_s=600.0 if k == 0 else None)
            for k in range(3)]
    slowest = [max(r["cells"], key=lambda c: c["seconds"] if c["seconds"] is not None else 1e9) for r in runs]
    ARTIFACTS.mkdir(exist_ok=True)
    with (ARTIFACTS / "live-cells.txt").open("a") as f:
        for k, c in enumerate(slowest):
            f.write(f"{name}\trun {k + 1}\tslowest cell {c['cell']}: "
                    f"{'over the limit' if c['seconds'] is None else format(c['seconds'], '.2f') + ' s'}"
                    + (f"\tpanels done {runs[0]['done_s']:.1f} s after the start" if k == 0 else "") + "\n")
    for k, r in enumerate(runs):
        late = [c["cell"] for c in r["cells"] if c["seconds"] is None]
        assert not late, f"{name}, execution {k + 1}: these cells did not return within {NEVER_WAITS_S:.0f} s: {late}"
    panels = runs[0]["panels"]
    assert panels, f"{name}: no panel took a turn"
    for p in panels:  # each measured to its figure (the deck's own cells at their defaults: no error line)
        assert p["renders"] >= 1 and p["error"] is None, (name, p)
