"""What part 2's claims and questions read of a measurement: counts, elements moved, buffers and
the compiled kernel's name. :mod:`demos.topics.fusion` declares the claims that use them.
"""
from __future__ import annotations

from typing import Any

from demos.engine.workload_defs import ITEMSIZE


def kernel_counts(d: dict[str, Any]) -> tuple:
    """Eager ops (kernels on a GPU), torch.compile's launches, jax.jit's entry ops and its fusions."""
    f = d["forms"]
    return (f["torch_eager"]["count"], f["torch_compile"]["count"], f.get("jax_jit", {}).get("count"),
            f.get("jax_jit", {}).get("fusions"))


def kernel_named(d: dict[str, Any]) -> int | None:
    """Which choice the compiled lane's one kernel name matches (None: not one kernel)."""
    names = d["runs"][1]["kernel_names"]
    if len(names) != 1:
        return None
    parts = set(names[0].split("_"))
    if {"add", "cos", "mul", "relu", "sin"} <= parts:
        return 1
    return 0 if "complex" in parts else 2


def elements_moved(d: dict[str, Any]) -> tuple:
    """Elements each torch form must move, in units of N (bytes ÷ N ÷ itemsize)."""
    n = d["N"] * ITEMSIZE[d["dtype"]]
    return tuple(d["forms"][b]["bytes"] / n for b in ("torch_eager", "torch_compile"))


def buffers(d: dict[str, Any]) -> tuple | None:
    """N-sized buffers eager allocates (None if any is another size) and buffers in torch.compile's code."""
    f, nbytes = d["forms"], d["N"] * ITEMSIZE[d["dtype"]]
    eager = [b["bytes"] for b in f["torch_eager"]["buffers"]]
    if any(b != nbytes for b in eager):
        return None
    return len(eager), len(f["torch_compile"].get("code_buffers", []))


def jax_memory(d: dict[str, Any]) -> tuple:
    """jax.jit's temporary bytes and its output in units of N elements."""
    j, nbytes = d["forms"].get("jax_jit", {}), d["N"] * ITEMSIZE[d["dtype"]]
    return j["temp_bytes"], j["output_bytes"] / nbytes
