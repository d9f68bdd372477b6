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


def _sysfs_caches(cpu: str = "/sys/devices/system/cpu/cpu0/cache") -> dict[str, int]:
    """Linux: each data (or unified) cache level of the first CPU, in bytes ("L1d", "L2", "L3")."""
    import glob
    import os

    units = {"K": 2**10, "M": 2**20, "G": 2**30}
    out: dict[str, int] = {}
    for idx in sorted(glob.glob(os.path.join(cpu, "index*"))):
        try:
            with open(os.path.join(idx, "level")) as f:
                level = f.read().strip()
            with open(os.path.join(idx, "type")) as f:
                kind = f.read().strip()
            with open(os.path.join(idx, "size")) as f:
                size = f.read().strip()
        except OSError:
            continue
        if kind == "Instruction" or not size:
            continue
        n = int(size.rstrip("KMG")) * units.get(size[-1], 1) if size[-1] in units else int(size)
        out[f"L{level}" + ("d" if kind == "Data" else "")] = n
    return out


def _sysctl_caches() -> dict[str, int]:
    """macOS: hw.l1dcachesize, hw.l2cachesize, hw.l3cachesize (the ones the machine reports)."""
    import subprocess

    out: dict[str, int] = {}
    for name, key in (("L1d", "hw.l1dcachesize"), ("L2", "hw.l2cachesize"), ("L3", "hw.l3cachesize")):
        try:
            v = subprocess.run(["sysctl", "-n", key], capture_output=True, text=True, timeout=2).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            continue
        if v.isdigit() and int(v) > 0:
            out[name] = int(v)
    return out


@functools.lru_cache(maxsize=None)
def caches(device: str = "cpu") -> dict:
    """The cache levels a measurement on ``device`` streams through: ``{"device": "CPU"|"GPU",
    "levels": {"L1d": bytes, "L2": bytes, "L3": bytes}}`` (a GPU: its L2, from torch). Empty
    ``levels`` where they cannot be read. What a regime's condition compares a working set with
    (:mod:`demos.deck.conditions`)."""
    if device.startswith("cuda"):
        torch = torch_or_none()
        try:
            l2 = int(torch.cuda.get_device_properties(0).L2_cache_size)
        except Exception:  # pragma: no cover - no driver
            l2 = 0
        return {"device": "GPU", "levels": {"L2": l2} if l2 > 0 else {}}
    if device != "cpu":
        return {"device": device.upper(), "levels": {}}
    import sys

    return {"device": "CPU", "levels": _sysctl_caches() if sys.platform == "darwin" else _sysfs_caches()}
