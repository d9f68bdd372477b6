"""Part 4's example functions: a data-dependent branch and a print, and their fixes, as torch /
JAX twins (what the graph-breaks and capture-cost demos compile). What they print is caught
(``dynamo.prints_caught``): it is data for the slide, never text under the cell."""
from __future__ import annotations

from typing import Any

from demos.engine.devices import require_jax, require_torch
from demos.engine.errors import unknown_name

def branch_torch(x):
    y = torch.sin(x) * 2.0
    if y.sum() > 0:  # a Python bool of a tensor value
        return torch.relu(torch.cos(y) * x + 1.0)
    return torch.relu(torch.tanh(y) * x - 1.0)


def print_torch(x):
    y = torch.sin(x) * 2.0
    print("checkpoint:", y.shape)
    return torch.relu(torch.cos(y) * x + 1.0)


def where_torch(x):
    y = torch.sin(x) * 2.0
    pos = torch.relu(torch.cos(y) * x + 1.0)
    neg = torch.relu(torch.tanh(y) * x - 1.0)
    return torch.where(y.sum() > 0, pos, neg)


def _pos_torch(y, x):
    return torch.relu(torch.cos(y) * x + 1.0)


def _neg_torch(y, x):
    return torch.relu(torch.tanh(y) * x - 1.0)


def cond_torch(x):
    y = torch.sin(x) * 2.0
    return torch.cond(y.sum() > 0, _pos_torch, _neg_torch, (y, x))


def branch_jax(x):
    y = jnp.sin(x) * 2.0
    if y.sum() > 0:  # a Python bool of a traced value
        return jax.nn.relu(jnp.cos(y) * x + 1.0)
    return jax.nn.relu(jnp.tanh(y) * x - 1.0)


def print_jax(x):
    y = jnp.sin(x) * 2.0
    print("checkpoint:", y)
    return jax.nn.relu(jnp.cos(y) * x + 1.0)


def where_jax(x):
    y = jnp.sin(x) * 2.0
    pos = jax.nn.relu(jnp.cos(y) * x + 1.0)
    neg = jax.nn.relu(jnp.tanh(y) * x - 1.0)
    return jnp.where(y.sum() > 0, pos, neg)


def _pos_jax(y, x):
    return jax.nn.relu(jnp.cos(y) * x + 1.0)


def _neg_jax(y, x):
    return jax.nn.relu(jnp.tanh(y) * x - 1.0)


def cond_jax(x):
    y = jnp.sin(x) * 2.0
    return jax.lax.cond(y.sum() > 0, _pos_jax, _neg_jax, y, x)


def _bind_frameworks(need_jax: bool = False) -> None:
    """torch / jax / jnp become this module's globals on first use (importing demos stays cheap)."""
    g = globals()
    if "torch" not in g:
        g["torch"] = require_torch()
    if need_jax and "jax" not in g:
        g["jax"] = require_jax()
        import jax.numpy as _jnp

        g["jnp"] = _jnp


VARIANTS: dict[str, dict[str, Any]] = {
    "branch": dict(torch=branch_torch, jax=branch_jax, fixed=False, title="data-dependent branch"),
    "print": dict(torch=print_torch, jax=print_jax, fixed=False, title="side effect: print"),
    "where": dict(torch=where_torch, jax=where_jax, fixed=True, title="fixed: torch.where / jnp.where"),
    "cond": dict(torch=cond_torch, jax=cond_jax, fixed=True, title="fixed: torch.cond / lax.cond"),
}


def _variant(name: str) -> dict[str, Any]:
    if name not in VARIANTS:
        raise unknown_name("function", name, VARIANTS)
    return VARIANTS[name]
