"""Shared fixtures: executed notebooks (each part runs once per session), GPU skips."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

# The tests keep `make warm`-style results in a folder of their own (never the developer's .cache/last,
# so no test depends on whether `make warm` ran); kernels the tests start inherit it.
if "DEMOS_WARMED_DIR" not in os.environ:
    import tempfile

    os.environ["DEMOS_WARMED_DIR"] = tempfile.mkdtemp(prefix="jitdeck-warmed-")

import demos  # noqa: F401  (environment before torch/JAX)

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
_EXECUTED: dict[str, tuple] = {}


def pytest_collection_modifyitems(config, items):
    from demos.engine.devices import torch_device

    if torch_device() != "cuda":
        skip = pytest.mark.skip(reason="needs an NVIDIA GPU (run `pytest -m gpu` on a GPU machine)")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)


def executed_notebook(name: str, timeout: int = 1200):
    """Execute slides/<name> headless once per test session; returns (nb, seconds)."""
    from demos.deck.nbtools import SLIDES_DIR, execute

    path = SLIDES_DIR / name
    if name not in _EXECUTED:
        nb, secs = execute(path, timeout=timeout)
        _EXECUTED[name] = (nb, secs)
        ARTIFACTS.mkdir(exist_ok=True)
        (ARTIFACTS / "notebook-times.txt").open("a").write(f"{name}\t{secs:.1f} s\n")
    return _EXECUTED[name]


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
