"""Whether torch imports here, and which torch devices this machine has.

The bottom of the engine with :mod:`demos.engine.errors`: it reads no setting and imports nothing
of the deck, so the settings parser can check ``DEMOS_DEVICE`` against the machine
(:mod:`demos.engine.settings`), and :mod:`demos.engine.devices` builds on both.
"""
from __future__ import annotations

import functools


@functools.lru_cache(maxsize=None)
def torch_or_none():
    try:
        import torch
    except Exception:  # ImportError, or a broken install
        return None
    return torch


def present_devices() -> list[str]:
    """The torch devices this machine really has (cpu always)."""
    torch = torch_or_none()
    found = ["cpu"]
    if torch is None:
        return found
    try:
        if torch.cuda.is_available():
            found.insert(0, "cuda")
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            found.insert(0, "mps")
    except Exception:  # pragma: no cover - a broken driver is "no device"
        pass
    return found


def missing_device(name: str) -> str | None:
    """Why torch device ``name`` cannot be used here, in a few words (None when it can)."""
    if name == "cpu" or name in present_devices():
        return None
    return f"no {name.upper() if name == 'cuda' else name} device here"
