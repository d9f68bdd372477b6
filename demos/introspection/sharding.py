"""What XLA's SPMD partitioner inserts when one jitted function runs over several devices.

``jax.jit`` with ``in_shardings``/``out_shardings`` compiles one program that every device runs on
its shard; where a
value's sharding does not match what an operation needs, the partitioner inserts a collective
(all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute). They are read here from
the optimized HLO, which is the program each device runs.

- :func:`collectives` — a pure function of optimized HLO text: each collective (its kind, how many
  values it carries, the bytes of its result) and, for an asynchronous pair (``all-reduce-start`` …
  ``all-reduce-done``, as GPU backends schedule them), how many instructions of the same
  computation are scheduled between the two (compute that may overlap it).
- :func:`partition` — what runs in the fresh process: the matmul chain of ``spec`` jitted with
  each sharding in :data:`SHARDINGS` over ``spec["devices"]`` devices; its collectives and its
  steady-state time.
- :func:`run_partitioned` — :func:`partition` in a fresh ``python -m demos.introspection.sharding
  SPEC``. Several devices on a machine that has fewer are simulated: XLA's
  ``--xla_force_host_platform_device_count`` makes the host CPU N devices, and it must be set
  before JAX starts, hence the fresh process. Simulated devices share the host's cores and
  memory: their times show the program's shape, not a network's speed.

``spec``: ``{"devices": N, "step": "forward" | "training", "batch", "width", "hidden", "dtype",
"budget_s"}``. The JAX APIs used are public (``jax.sharding``, ``Compiled.as_text``).
"""
from __future__ import annotations

import json
import re
import sys
from typing import Any

from demos.engine.errors import DemoError

KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")
_COLLECTIVE = re.compile(
    r"^\s*(?:ROOT\s+)?%?(?P<name>[\w.\-]+)\s*=\s*(?P<shape>\(.*?\)|\S+)\s+"
    r"(?P<kind>" + "|".join(KINDS) + r")(?P<phase>-start|-done)?\((?P<args>[^)]*)\)")
_ARRAY = re.compile(r"\b(?P<dtype>pred|[subf]\d+|bf16|c64|c128|f8e\w+)\[(?P<dims>[\d,]*)\]")
_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4, "f32": 4,
          "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16}
_INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=")
_COMPUTE = re.compile(r"\s(fusion|dot|convolution|custom-call)\(")

# The sharding choices, for x [batch, width] @ w1 [width, hidden] → relu → @ w2 [hidden, width]:
# name → (x, w1, w2, output), each a PartitionSpec over one mesh axis "d" (None: replicated).
SHARDINGS: dict[str, tuple[tuple, tuple, tuple, tuple]] = {
    "data parallel: batch split, weights copied": (("d", None), (), (), ("d", None)),
    "tensor parallel: hidden split (Megatron)": ((), (None, "d"), ("d", None), ()),
    "w1 split on its rows, x and w2 copied": ((), ("d", None), (), ()),
    "batch and weights split (FSDP-like)": (("d", None), ("d", None), ("d", None), ("d", None)),
}


def _result_bytes(shape: str) -> tuple[int, int]:
    """(arrays, bytes) of an HLO shape (a tuple's arrays summed)."""
    arrays = _ARRAY.findall(shape)
    total = 0
    for dtype, dims in arrays:
        n = 1
        for d in filter(None, dims.split(",")):
            n *= int(d)
        total += n * _BYTES.get(dtype, 1 if dtype.startswith("f8") else 4)
    return len(arrays), total


def collectives(hlo: str) -> list[dict[str, Any]]:
    """Every collective of an optimized HLO module, in program order: ``kind``, ``values`` (arrays
    it carries: a combined all-reduce carries several), ``bytes`` (its result's), ``async`` and,
    for an async pair, ``between`` (compute instructions scheduled between its start and done)."""
    found: list[dict[str, Any]] = []
    starts: dict[str, dict[str, Any]] = {}
    since_start: dict[str, int] = {}
    for line in hlo.splitlines():
        if re.match(r"^\s*(?:ENTRY\s+)?%?[\w.\-]+\s.*\{\s*$", line) and "=" not in line.split("{")[0]:
            since_start.clear()  # a new computation: a pair never spans two
        m = _COLLECTIVE.match(line)
        if m is None:
            if _INSTR.match(line) and _COMPUTE.search(line):
                for k in since_start:
                    since_start[k] += 1
            continue
        kind, phase = m.group("kind"), m.group("phase")
        if phase == "-start":
            entry = {"kind": kind, "values": 0, "bytes": 0, "async": True, "between": 0}
            starts[m.group("name")] = entry
            since_start[m.group("name")] = 0
            found.append(entry)
            continue
        values, nbytes = _result_bytes(m.group("shape"))
        if phase == "-done":  # the done's shape is the collective's result
            start = m.group("args").strip().lstrip("%")
            entry = starts.get(start)
            if entry is not None:
                entry.update(values=values, bytes=nbytes, between=since_start.pop(start, 0))
            continue
        found.append({"kind": kind, "values": values, "bytes": nbytes, "async": False, "between": 0})
    return found


def partition(spec: dict[str, Any]) -> dict[str, Any]:
    """In a process with enough devices: the chain jitted with each of :data:`SHARDINGS`; per
    sharding its collectives, compile time and steady-state time."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    from demos.engine.timing import first_call, measure, sync_jax

    n = int(spec["devices"])
    real = [d for d in jax.devices() if d.platform != "cpu"]
    devices = real[:n] if len(real) >= n else jax.devices("cpu")[:n]
    if len(devices) < n:
        raise DemoError(f"only {len(devices)} devices here, not {n}")
    simulated = devices[0].platform == "cpu" and n > 1
    mesh = Mesh(np.array(devices), ("d",))
    b, w, h = int(spec["batch"]), int(spec["width"]), int(spec["hidden"])
    dtype = jnp.dtype(spec.get("dtype", "float32"))
    rng = np.random.default_rng(0)
    host = [rng.standard_normal(s, dtype=np.float32).astype(dtype) for s in ((b, w), (w, h), (h, w))]

    def chain(x, w1, w2):
        return jnp.maximum(x @ w1, 0) @ w2

    def loss(w1, w2, x):
        return jnp.mean(chain(x, w1, w2).astype(jnp.float32) ** 2)

    training = spec.get("step") == "training"
    rows = {}
    for name, (sx, s1, s2, so) in SHARDINGS.items():
        put = [NamedSharding(mesh, PartitionSpec(*s)) for s in (sx, s1, s2, so)]
        if training:  # the weights' gradients, each left sharded as its weight is
            fn = jax.jit(jax.grad(loss, argnums=(0, 1)), in_shardings=(put[1], put[2], put[0]),
                         out_shardings=(put[1], put[2]))
            args = [jax.device_put(a, s) for a, s in ((host[1], put[1]), (host[2], put[2]), (host[0], put[0]))]
        else:
            fn = jax.jit(chain, in_shardings=tuple(put[:3]), out_shardings=put[3])
            args = [jax.device_put(a, s) for a, s in zip(host, put[:3])]
        compile_s, compiled = first_call(lambda: fn.lower(*args).compile())
        found = collectives(compiled.as_text())
        steady = measure(lambda: compiled(*args), sync_jax(), budget_s=float(spec.get("budget_s", 0.2)))
        rows[name] = {"collectives": found, "compile_s": compile_s, "steady": steady.to_dict()}
    return {"rows": rows, "devices": n, "platform": devices[0].platform, "simulated": simulated,
            "device_kind": devices[0].device_kind, "jax": jax.__version__, "step": "training" if training else "forward",
            "shapes": {"x": [b, w], "w1": [w, h], "w2": [h, w]}, "dtype": str(dtype)}


def run_partitioned(spec: dict[str, Any], timeout: float = 300) -> dict[str, Any]:
    """:func:`partition` in a fresh process that has ``spec["devices"]`` host devices (as well as
    any accelerator it has)."""
    from demos.engine.settings import raw
    from demos.engine.worker import fresh_json

    flags = [f for f in (raw("XLA_FLAGS") or "").split()
             if not f.startswith("--xla_force_host_platform_device_count")]
    env = {"XLA_FLAGS": " ".join(flags + [f"--xla_force_host_platform_device_count={int(spec['devices'])}"])}
    return fresh_json("demos.introspection.sharding", json.dumps(spec), env, timeout,
                      slow=f"partitioning took over {timeout:.0f} s; choose fewer devices or smaller sizes",
                      failed="the partitioning process failed")


if __name__ == "__main__":
    from demos.engine.worker import json_child

    sys.exit(json_child("demos.introspection.sharding", sys.argv[1:], partition))
