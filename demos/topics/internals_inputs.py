"""The inputs part 4's demos call their functions with: one seeded vector for the branch examples
(torch, on the torch device), and the guards demo's pair of inputs with one property changed
(:data:`CHANGES`, the demo's options). :mod:`demos.topics.internals` measures with them.
"""
from __future__ import annotations

from demos.engine.devices import require_torch, torch_device

# what the guards demo can change about its inputs before the third call (its control's options)
CHANGES = ("nothing (same properties)", "dtype → float64", "dtype → bfloat16", "shape → N/2",
           "requires_grad → True", "non-contiguous (stride 2)")


def inputs_1d(N: int, dtype: str, sign: float = 1.0):
    """One input vector for the branch examples (torch, on the torch device)."""
    torch_ = require_torch()
    x = torch_.randn(N, generator=torch_.Generator().manual_seed(1)) * sign
    return x.to(device=torch_device(), dtype=getattr(torch_, dtype))


def changed_inputs(change: str, x, y):
    """New inputs made from ``x, y`` with the property ``change`` names changed (one of
    :data:`CHANGES`; the first changes nothing)."""
    torch_ = require_torch()
    n = x.shape[0] // 2
    return {CHANGES[0]: lambda: (x.clone(), y.clone()),
            CHANGES[1]: lambda: (x.double(), y.double()),
            CHANGES[2]: lambda: (x.to(torch_.bfloat16), y.to(torch_.bfloat16)),
            CHANGES[3]: lambda: (x[:n].clone(), y[:n].clone()),
            CHANGES[4]: lambda: (x.clone().requires_grad_(True), y.clone()),
            CHANGES[5]: lambda: (torch_.stack([x, x], dim=1).reshape(-1)[::2], y.clone())}[change]()
