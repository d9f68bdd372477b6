"""Run All in the real JupyterLab page (not RISE), in headless chromium, on every part: every cell
returns at once, the panels measure one after another (one said "waiting for the panel above"
meanwhile), each panel's question is answered (A) and its figure comes, with no error and no cell
left running (demos.deck.labrun). Times and screenshots: test-artifacts/lab/."""
from __future__ import annotations

import json

import pytest

from conftest import ARTIFACTS
from demos.deck.labrun import run_all
from demos.deck.nbtools import parts
from demos.deck.turns import NEVER_WAITS_S

pytestmark = [pytest.mark.slow, pytest.mark.browser]


@pytest.mark.parametrize("name", [p.name for p in parts()])
def test_run_all_in_jupyterlab_measures_each_panel_in_turn(name, server, browser_ctx):
    out = ARTIFACTS / "lab"
    run = run_all(browser_ctx, server, f"slides/{name}", shots=out)
    with (out / "run-all.jsonl").open("a") as f:
        f.write(json.dumps(run) + "\n")
    assert run["returned_s"] is not None and run["returned_s"] < NEVER_WAITS_S, run
    assert not run["running"], run["running"]
    assert run["panels"], f"{name}: no live panel"
    for p in run["panels"]:
        assert p["figure"] and not p["error"], (name, p)
    if len(run["panels"]) > 1:  # the second panel waited for the first: one measurement at a time
        assert run["waited"], run
