"""Part 6's compile-cost instruments: a fresh model's first training step compiled whole or
block by block (regional), a shape-varying loop of one compiled block under a
``torch.compiler.set_stance``, and Dynamo's graph counter they read; which of the two compiles faster, as the slide's question
bins it.
:mod:`demos.topics.model` measures ``compile_cost()`` with them.
"""
from __future__ import annotations

import time
from typing import Any

from demos.engine import model_zoo as zoo
from demos.engine.devices import require_torch
from demos.engine.errors import one_line
from demos.engine.measurement import Run


def unique_graphs() -> int:
    """Dynamo's count of distinct graphs this process compiled (a difference counts a step's)."""
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])


def warm_compiler(run: Run) -> None:
    """One tiny compile with a backward: the compiler's one-time imports, kept out of the timings."""
    torch = require_torch()
    f = run.compile(lambda a: (a * 2 + 1).sum(), dynamic=False)
    f(torch.ones(4, requires_grad=True)).backward()


def first_step(run: Run, cfg: zoo.Config, how: str, caches: str) -> tuple[Any, dict[str, Any]]:
    """A fresh model (fresh code objects: a fresh Dynamo state while every other demo's compiled
    code stays), compiled whole or block by block; its first training step timed. Returns the
    step and {first_s, graphs}."""
    torch = require_torch()
    model = zoo.torch_model(cfg)
    opt, (x, t) = zoo.optimizer(model), zoo.torch_data(cfg)
    if how == "whole":
        stepped = torch.compile(model, dynamic=False)
    else:  # regional: every block compiled in place; one code object, so a compile serves every layer
        for blk in model.layers:
            blk.compile(dynamic=False)
        stepped = model
    on = caches == "warm"
    g0 = unique_graphs()
    with torch._inductor.config.patch(fx_graph_cache=on), torch._functorch.config.patch(enable_autograd_cache=on):
        first, _ = run.first_call(lambda: zoo.train_step(stepped, opt, x, t))
    return (lambda: zoo.train_step(stepped, opt, x, t)), {"first_s": first, "graphs": unique_graphs() - g0}


def stance_loop(cfg: zoo.Config, stance: str) -> dict[str, Any]:
    """One compiled block (dynamic=False) called at several sequence lengths: the first call
    compiles under the default stance, the rest run under ``stance``."""
    torch = require_torch()
    one = zoo.Config(1, cfg.width, cfg.heads, cfg.batch, cfg.seq, cfg.dtype)
    cm = torch.compile(zoo.torch_model(one), dynamic=False)
    seqs = [cfg.seq * k // 4 for k in (4, 2, 3, 5, 6, 8)]
    g0, calls, error = unique_graphs(), 0, None
    t0 = time.perf_counter()
    with torch.no_grad():
        cm(zoo.torch_data(one, seq=seqs[0])[0])
        calls += 1
        with torch.compiler.set_stance(stance):
            for s in seqs[1:]:
                try:
                    cm(zoo.torch_data(one, seq=s)[0])
                    calls += 1
                except Exception as exc:
                    error = one_line(exc)[:70]
                    break
    return {"compiles": unique_graphs() - g0, "calls": calls, "shapes": len(seqs), "seconds": time.perf_counter() - t0,
            "error": error, "seqs": seqs}


def faster_compile(d: dict[str, Any]) -> int:
    """0: the whole stack compiles faster, 1: regional does, 2: within 10% of each other (a quiz's bin)."""
    whole, regional = d["whole"]["compile_s"], d["regional"]["compile_s"]
    if abs(whole - regional) <= 0.1 * max(whole, regional):
        return 2
    return 1 if regional < whole else 0
