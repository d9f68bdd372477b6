"""torch's side of compiled communication: collectives written with ``torch.distributed``'s
functional collectives, traced by Dynamo into the graph, and called by Inductor's generated code
as ``torch.ops._c10d_functional`` ops, each result followed by a ``wait_tensor``.

torch's SPMD model is one process per rank: a process group needs them all. :func:`run_traced`
starts a fresh process that spawns ``spec["ranks"]`` ranks (gloo, on the CPU); every rank compiles
each split of the chain ``relu(x @ w1) @ w2`` on its own shards, and rank 0 reports, for each
split, the collectives in Inductor's code in order (:func:`functional_collectives`), its ``call``
body, the graphs compiled, and how far its output is from the unsharded chain. The splits mirror
:data:`demos.introspection.sharding.SHARDINGS`, written by hand here (in torch the program says
where to communicate; XLA's partitioner decides it from the shardings):

``megatron``  w1 split by columns, w2 by rows: each rank's output is a partial sum, added up by one
              ``all_reduce``
``fsdp``      every weight split by rows and gathered whole (``all_gather_tensor``) before its matmul

SPEC (JSON): ``{"ranks": 2, "batch": 256, "width": 512, "hidden": 1024}``.
"""
from __future__ import annotations

import json
import os
import re
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any

from demos.engine.errors import DemoError

SPLITS = ("megatron", "fsdp")
_OP = re.compile(r"^(?:(?P<out>\w+)\s*=\s*)?torch\.ops\._c10d_functional\.(?P<op>\w+)\.default\((?P<args>[^)]*)\)")


def functional_collectives(call_body: str) -> list[dict[str, Any]]:
    """The functional collectives a ``call`` body runs, in order: ``{"op", "buffer", "in_place",
    "result", "waited", "between"}``: ``buffer`` what it reads (and writes over when
    ``in_place``), ``waited`` whether a ``wait_tensor`` on its result follows, ``between`` how many
    launches (kernels, library calls, other collectives) run between the two: the work a
    collective could overlap with (0: it is waited on at once)."""
    lines = [ln.strip() for ln in call_body.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    launch = re.compile(r"^(?:\w+\s*=\s*)?(?:extern_kernels\.|torch\.ops\.|(?:cpp|triton)_\w+(?:\.run)?\()")
    found = []
    for i, line in enumerate(lines):
        m = _OP.match(line)
        if not m or m.group("op") == "wait_tensor":
            continue
        first = m.group("args").split(",")[0].strip()
        result = m.group("out") or first
        c = {"op": m.group("op"), "buffer": first, "in_place": m.group("op").endswith("_"), "result": result,
             "waited": False, "between": 0}
        for later in lines[i + 1:]:
            w = _OP.match(later)
            if w and w.group("op") == "wait_tensor" and w.group("args").split(",")[0].strip() == result:
                c["waited"] = True
                break
            c["between"] += bool(launch.match(later))
        found.append(c)
    return found


def _splits(fc, group):
    """The two splits as functions of (x, w1 shard, w2 shard): what every rank runs."""
    def megatron(x, w1, w2):
        y = (x @ w1).relu() @ w2           # a partial sum: this rank's columns of the hidden layer
        return fc.all_reduce(y, "sum", group)

    def fsdp(x, w1, w2):
        w1 = fc.all_gather_tensor(w1, 0, group)  # every rank holds rows of each weight
        w2 = fc.all_gather_tensor(w2, 0, group)
        return (x @ w1).relu() @ w2

    return {"megatron": megatron, "fsdp": fsdp}


def _rank(rank: int, spec: dict[str, Any], port: int, out: str) -> None:  # pragma: no cover - a spawned rank
    import torch
    import torch.distributed as dist
    import torch.distributed._functional_collectives as fc

    from demos.introspection.hooks import output_code
    from demos.introspection.inductor import call_body

    world = int(spec["ranks"])
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        torch.set_num_threads(1)
        g = torch.Generator().manual_seed(0)
        b, d, h = int(spec["batch"]), int(spec["width"]), int(spec["hidden"])
        x = torch.randn(b, d, generator=g)
        w1 = torch.randn(d, h, generator=g) / d ** 0.5
        w2 = torch.randn(h, d, generator=g) / h ** 0.5
        full = (x @ w1).relu() @ w2
        cols, rows = slice(rank * h // world, (rank + 1) * h // world), slice(rank * d // world, (rank + 1) * d // world)
        shards = {"megatron": (w1[:, cols].contiguous(), w2[cols].contiguous()),
                  "fsdp": (w1[rows].contiguous(), w2[rank * h // world:(rank + 1) * h // world].contiguous())}
        report = {}
        for name, fn in _splits(fc, dist.group.WORLD).items():
            with output_code() as codes:
                y = torch.compile(fn)(x, *shards[name])
            body = call_body(codes[-1]) if codes else ""
            report[name] = {"collectives": functional_collectives(body), "graphs": len(codes),
                            "code": [ln for ln in body.splitlines() if ln.strip() and not ln.strip().startswith(
                                ("assert_size_stride", "assert_alignment", "del ", "args.clear", "#"))],
                            "max_rel": float((y - full).abs().max() / full.abs().max())}
        if rank == 0:
            Path(out).write_text(json.dumps({"ranks": world, "splits": report, "torch": torch.__version__}))
    finally:
        dist.destroy_process_group()


def traced(spec: dict[str, Any]) -> dict[str, Any]:
    """In this process: spawn the ranks (gloo on a free local port) and return rank 0's report."""
    import torch.multiprocessing as mp

    world = int(spec.get("ranks", 2))
    if world < 2 or spec["hidden"] % world or spec["width"] % world:
        raise DemoError(f"ranks must be at least 2 and divide width and hidden, not {world}")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory(prefix="demos-ranks-") as tmp:
        out = os.path.join(tmp, "rank0.json")
        mp.spawn(_rank, args=({**spec, "ranks": world}, port, out), nprocs=world, join=True)
        return json.loads(Path(out).read_text())


def run_traced(spec: dict[str, Any], timeout: float = 300) -> dict[str, Any]:
    """:func:`traced` in a fresh process (the ranks are its children)."""
    from demos.engine.worker import fresh_json

    return fresh_json("demos.introspection.traced_collectives", json.dumps(spec), {}, timeout,
                      slow=f"the {spec.get('ranks', 2)} ranks took over {timeout:.0f} s",
                      failed="the ranks' process failed")


if __name__ == "__main__":
    from demos.engine.worker import json_child

    sys.exit(json_child("demos.introspection.traced_collectives", sys.argv[1:], traced))
