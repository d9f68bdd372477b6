"""Part 7's presets: code as a student might write it, and its fix. A function ``name_jax`` beside
``name`` is its jax.numpy twin, inspected under jax.jit on the same values."""
from __future__ import annotations

import textwrap
from typing import Any

_IMPORTS = "import torch\nimport jax\nimport jax.numpy as jnp\n\n"

# Each preset: the code as a student might write it, and its fix. A function ``name_jax`` beside
# ``name`` is its jax.numpy twin, inspected under jax.jit on the same values.
PRESETS: dict[str, dict[str, Any]] = {
    "chain": {
        "title": "a pointwise chain",
        "shape": "1024x1024",
        "code": _IMPORTS + textwrap.dedent("""\
            def chain(x):
                y = torch.sin(x) * 2 + 1
                return torch.relu(y).exp() - x

            def chain_jax(x):
                y = jnp.sin(x) * 2 + 1
                return jnp.exp(jnp.maximum(y, 0)) - x
            """),
        "fix": None,
        "fix_title": "nothing to fix: the compiler's best case",
    },
    "item": {
        "title": ".item() in the middle",
        "shape": "1024x1024",
        "code": _IMPORTS + textwrap.dedent("""\
            def scale(x):
                y = torch.sin(x) * 2
                s = y.abs().max().item()      # a Python float
                return y / s

            def scale_jax(x):
                y = jnp.sin(x) * 2
                s = float(jnp.abs(y).max())
                return y / s
            """),
        "fix": _IMPORTS + textwrap.dedent("""\
            def scale(x):
                y = torch.sin(x) * 2
                s = y.abs().max()             # stays a tensor
                return y / s

            def scale_jax(x):
                y = jnp.sin(x) * 2
                s = jnp.abs(y).max()
                return y / s
            """),
        "fix_title": "keep the scalar a tensor",
    },
    "print": {
        "title": "print() while debugging",
        "shape": "1024x1024",
        "code": _IMPORTS + textwrap.dedent("""\
            def debug(x):
                y = torch.sin(x) * 2
                print("max so far:", y.max())
                return torch.relu(y) - 1

            def debug_jax(x):
                y = jnp.sin(x) * 2
                print("max so far:", y.max())
                return jnp.maximum(y, 0) - 1
            """),
        "fix": _IMPORTS + textwrap.dedent("""\
            def debug(x):
                y = torch.sin(x) * 2
                return torch.relu(y) - 1      # print the result outside

            def debug_jax(x):
                y = jnp.sin(x) * 2
                jax.debug.print("max so far: {m}", m=y.max())
                return jnp.maximum(y, 0) - 1
            """),
        "fix_title": "print outside (torch), jax.debug.print (JAX)",
    },
    "branch": {
        "title": "an if on the data",
        "shape": "1024x1024",
        "code": _IMPORTS + textwrap.dedent("""\
            def clip(x):
                y = torch.sin(x) * 2
                if y.sum() > 0:               # needs the value
                    return torch.relu(y)
                return y - 1

            def clip_jax(x):
                y = jnp.sin(x) * 2
                if y.sum() > 0:
                    return jnp.maximum(y, 0)
                return y - 1
            """),
        "fix": _IMPORTS + textwrap.dedent("""\
            def clip(x):
                y = torch.sin(x) * 2
                return torch.where(y.sum() > 0, torch.relu(y), y - 1)

            def clip_jax(x):
                y = jnp.sin(x) * 2
                return jnp.where(y.sum() > 0, jnp.maximum(y, 0), y - 1)
            """),
        "fix_title": "the branch as data: torch.where / jnp.where",
    },
    "loop": {
        "title": "a loop over a varying length",
        "shape": "16x1024",
        "code": _IMPORTS + textwrap.dedent("""\
            def total(x):                     # x: (steps, features)
                h = torch.zeros_like(x[0])
                for t in range(x.shape[0]):   # unrolled while tracing
                    h = h + torch.sin(x[t]) * 0.5
                return h

            def total_jax(x):
                h = jnp.zeros_like(x[0])
                for t in range(x.shape[0]):
                    h = h + jnp.sin(x[t]) * 0.5
                return h
            """),
        "fix": _IMPORTS + textwrap.dedent("""\
            def total(x):                     # one op over every step:
                return (torch.sin(x) * 0.5).sum(dim=0)   # the length is only a size

            def total_jax(x):
                return (jnp.sin(x) * 0.5).sum(axis=0)
            """),
        "fix_title": "one op over every step, no Python loop",
    },
    "mutation": {
        "title": "changing the input in place",
        "shape": "1024x1024",
        "code": _IMPORTS + textwrap.dedent("""\
            def bump(x):
                x.add_(1)                     # the caller's tensor changes
                return torch.sin(x) * 2

            def bump_jax(x):
                x = x + 1                     # JAX arrays cannot change
                return jnp.sin(x) * 2
            """),
        "fix": _IMPORTS + textwrap.dedent("""\
            def bump(x):
                y = x + 1                     # a new tensor
                return torch.sin(y) * 2

            def bump_jax(x):
                y = x + 1
                return jnp.sin(y) * 2
            """),
        "fix_title": "out of place: a new tensor",
    },
    "cond": {
        "title": "two branches on the data",
        "shape": "1024x1024",
        "code": _IMPORTS + textwrap.dedent("""\
            def pick(x):
                if x.mean() > 0:              # which branch runs depends on the data
                    return torch.sin(x) * 2
                return torch.cos(x) - 1

            def pick_jax(x):
                if x.mean() > 0:
                    return jnp.sin(x) * 2
                return jnp.cos(x) - 1
            """),
        "fix": _IMPORTS + textwrap.dedent("""\
            def pick(x):
                return torch.cond(x.mean() > 0, lambda x: torch.sin(x) * 2,
                                  lambda x: torch.cos(x) - 1, (x,))

            def pick_jax(x):
                return jax.lax.cond(x.mean() > 0, lambda x: jnp.sin(x) * 2,
                                    lambda x: jnp.cos(x) - 1, x)
            """),
        "fix_title": "torch.cond / jax.lax.cond: both branches in one graph",
    },
}


def preset_code(preset: str, version: str = "as written") -> str:
    """The preset's code as written, or its fix (``version="fixed"``, where it has one)."""
    p = PRESETS[preset]
    return p["fix"] if version == "fixed" and p["fix"] else p["code"]
