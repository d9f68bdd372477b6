"""Between frameworks: a torch tensor as a NumPy array or a JAX array, written once.

NumPy has no bfloat16, so a tensor crosses as float32 and the JAX array is cast back to the
tensor's own dtype (or the one asked for). Used wherever the deck gives JAX the same values torch
got (the workloads' inputs, the model's weights, part 4's examples, the roofline's GEMMs)."""
from __future__ import annotations

from typing import Any


def to_numpy(x: Any):
    """A torch tensor or a JAX/NumPy array as a float32 NumPy array on the host."""
    import numpy as np

    if hasattr(x, "detach"):
        return x.detach().float().cpu().numpy()
    return np.asarray(x).astype("float32")


def to_jax(t: Any, dtype: str | None = None, put: bool = True):
    """A torch tensor as a JAX array of the same values, in ``dtype`` (default: the tensor's own),
    placed on JAX's default device when ``put``."""
    import jax
    import jax.numpy as jnp

    arr = jnp.asarray(t.detach().float().cpu().numpy()).astype(dtype or str(t.dtype).replace("torch.", ""))
    return jax.device_put(arr) if put else arr
