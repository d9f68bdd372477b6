"""Part 6's compile-cost instruments: a fresh model's first training step compiled whole or
block by block (regional), a shape-varying loop of one compiled block under a
``torch.compiler.set_stance``, each from the caches the slide names (``compile_caches``: empty, or
warm in this machine's folder of .cache/), and Dynamo's graph counter they read; which of the two
compiles faster, as the slide's question bins it.
:mod:`demos.topics.model` measures ``compile_cost()`` with them.
"""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Iterator

from demos.engine import model_zoo as zoo
from demos.engine.devices import device_kind, require_torch, torch_device
from demos.engine.errors import one_line
from demos.engine.env import compile_root, temporary_root
from demos.engine.measurement import Run
from demos.engine.timing import Stopwatch, first_call, sync_output
from demos.introspection.hooks import cache_folder
from demos.topics.model_figures import STANCES

# The stance loop's sequence lengths, in quarters of the slide's: from empty caches each length
# builds a block's kernels again (about 3 s each on a 2-core CPU), so 3 on a CPU
STANCE_LENGTHS = {"cpu": (4, 2, 8), "gpu": (4, 2, 3, 5, 6, 8)}
# The slide's cache states, by the value the records carry: "bypassed" compiles from an empty cache
# folder, "warm" from the one the last empty run filled
CACHES = {"bypassed": "empty", "warm": "warm"}


def unique_graphs() -> int:
    """Dynamo's count of distinct graphs this process compiled (a difference counts a step's)."""
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])


def cache_of(cfg: zoo.Config, form: str) -> Path:
    """The cache folder of one form at one size: each form has its own, so no form reuses a kernel
    another built (in this machine's folder of the project's .cache/, or of the system's temporary
    folder where that cannot be written)."""
    root = compile_root() or temporary_root()
    size = f"{torch_device()}-{cfg.layers}x{cfg.width}-{cfg.batch}x{cfg.seq}-{cfg.dtype}"
    return root / "compile-cost" / size / form


def filled(cfg: zoo.Config, form: str) -> bool:
    """Whether an earlier run left anything in the form's cache folder."""
    folder = cache_of(cfg, form)
    return folder.is_dir() and any(p.is_file() for p in folder.rglob("*"))


@contextlib.contextmanager
def compile_caches(caches: str, cfg: zoo.Config, form: str) -> Iterator[None]:
    """The caches a form compiles from (:func:`demos.introspection.hooks.cache_folder`).
    "bypassed": its folder emptied, so it compiles every graph and builds every kernel, as on a new
    machine, whatever ran before it; "warm": its folder as the last run left it, as in a second
    run of a script."""
    with cache_folder(cache_of(cfg, form), empty=caches == "bypassed"):
        yield


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
    g0 = unique_graphs()
    with compile_caches(caches, cfg, how):
        first, _ = run.first_call(lambda: zoo.train_step(stepped, opt, x, t))
    return (lambda: zoo.train_step(stepped, opt, x, t)), {"first_s": first, "graphs": unique_graphs() - g0}


def stance_config(cfg: zoo.Config) -> zoo.Config:
    """The stance loop's model: one block of the stack."""
    return zoo.Config(1, cfg.width, cfg.heads, cfg.batch, cfg.seq, cfg.dtype)


# The order the stances run in after the shared first call: neither of the first two adds a compiled
# graph (one raises at a recompile, the other runs it eagerly), so each starts from the same state
STANCE_ORDER = ("fail_on_recompile", "eager_on_recompile", "default")


def stance_loops(cfg: zoo.Config, caches: str = "bypassed") -> dict[str, dict[str, Any]]:
    """One compiled block (dynamic=False) called at several sequence lengths, from ``caches``. Its
    first call compiles under the default stance; then each stance calls the other lengths from
    that same state (one graph, for the first length): fail_on_recompile, eager_on_recompile, then
    default, which compiles each new length. A stance's seconds are the first call's and its own."""
    torch = require_torch()
    one = stance_config(cfg)
    cm = torch.compile(zoo.torch_model(one), dynamic=False)
    seqs = [cfg.seq * k // 4 for k in STANCE_LENGTHS[device_kind()]]
    out: dict[str, dict[str, Any]] = {}
    with torch.no_grad(), compile_caches(caches, one, "stance"):
        g0 = unique_graphs()
        first_s, _ = first_call(lambda: cm(zoo.torch_data(one, seq=seqs[0])[0]), sync_output)
        first_graphs = unique_graphs() - g0
        for stance in STANCE_ORDER:
            g1, calls, error = unique_graphs(), 1, None
            with Stopwatch() as watch, torch.compiler.set_stance(stance):
                for s in seqs[1:]:
                    try:
                        sync_output(cm(zoo.torch_data(one, seq=s)[0]))  # its kernels done before the next
                        calls += 1
                    except Exception as exc:
                        error = one_line(exc)[:70]
                        break
            out[stance] = {"compiles": first_graphs + unique_graphs() - g1, "calls": calls, "shapes": len(seqs),
                           "seconds": first_s + watch.seconds, "error": error, "seqs": seqs}
    return {s: out[s] for s in STANCES}


def fill_caches(run: Run, cfg: zoo.Config, caches: str) -> None:
    """A warm cache is one an empty run filled: for a "warm" run, each form's folder that no run
    has filled yet is filled now, by an empty run not timed."""
    if caches != "warm":
        return
    for how in [h for h in ("regional", "whole") if not filled(cfg, h)]:
        run.progress(0.04, f"{how}: no earlier run filled its cache; filling it first…")
        first_step(run, cfg, how, "bypassed")
    if not filled(stance_config(cfg), "stance"):
        run.progress(0.04, "the stance loop: no earlier run filled its cache; filling it first…")
        stance_loops(cfg, "bypassed")


def faster_compile(d: dict[str, Any]) -> int:
    """0: the whole stack compiles faster, 1: regional does, 2: within 10% of each other (a quiz's bin)."""
    whole, regional = d["whole"]["compile_s"], d["regional"]["compile_s"]
    if abs(whole - regional) <= 0.1 * max(whole, regional):
        return 2
    return 1 if regional < whole else 0
