"""Part 6's compiled model: :class:`Bundle` (one configuration's model, AdamW, data and the
torch.compile'd model, whose Inductor hook records every graph AOTAutograd hands it and the code
generated for it, so counting costs no extra compile), :func:`graph_summary` (one such graph,
counted), :func:`bundle` (a demo's bundles, kept in its ``run.cache``), :func:`agreement` (each
form's forward output against eager's) and the model's torch threads on a CPU.
:mod:`demos.topics.model` measures with them.
"""
from __future__ import annotations

import contextlib
import operator
from collections import OrderedDict
from typing import Any, Callable

from demos.deck.conditions import measured, rounding_bound
from demos.engine import model_zoo as zoo
from demos.engine.convert import to_numpy
from demos.engine.devices import device_kind, require_torch, torch_device
from demos.engine.errors import DemoError, release_memory
from demos.engine.measurement import Run
from demos.engine.timing import sync_torch
from demos.engine.settings import get as get_setting
from demos.introspection.hooks import InductorBackend
from demos.introspection.inductor import parse_inductor


def cpu_threads() -> int:
    """torch threads for the model on a CPU (DEMOS_MODEL_THREADS, default 1)."""
    return get_setting("DEMOS_MODEL_THREADS")


def threads():
    """The model's torch threads on a CPU (one by default), restored afterwards."""
    return zoo.threads(cpu_threads() if torch_device() == "cpu" else None)


class Bundle:
    """One configuration: model, AdamW, data, the compiled model (compiled on first use) and
    what its compiles recorded: ``records["inference"|"training"]`` → one summary per graph."""

    def __init__(self, cfg: zoo.Config):
        torch = require_torch()
        self.cfg = cfg
        self.model = zoo.torch_model(cfg)
        self.opt = zoo.optimizer(self.model)
        self.x, self.t = zoo.torch_data(cfg)
        self.records: dict[str, list] = {}
        self.cache: dict[str, Any] = {}
        self._phase = "inference"
        backend = InductorBackend(on_graph=self._on_graph, on_inner=self._on_inner)
        self.compiled = torch.compile(self.model, backend=backend, dynamic=False)

    def _on_graph(self, _gm, _example_inputs) -> None:
        self._phase = "training" if require_torch().is_grad_enabled() else "inference"

    def _on_inner(self, graph, backward: bool, code: str | None) -> None:
        """Each graph AOTAutograd compiles (forward, then backward), with its generated code."""
        parsed = parse_inductor(code) if code else None
        self.records.setdefault(self._phase, []).append(graph_summary(graph, backward, parsed))

    def call(self, form: str, training: bool):
        """One forward (no grad) or training step of a form: torch_eager, torch_compile, or
        torch_compile_ro (reduce-overhead, CUDA only). The compiled form's first call compiles
        with the AOTAutograd cache off, so the graphs reach the hook (the FX-graph cache applies)."""
        torch = require_torch()
        if form == "torch_compile_ro" and form not in self.cache:
            self.cache[form] = torch.compile(self.model, mode="reduce-overhead", dynamic=False)
        m = self.cache[form] if form == "torch_compile_ro" else self.compiled if form == "torch_compile" else self.model
        first = form == "torch_compile" and ("training" if training else "inference") not in self.records
        with torch._functorch.config.patch(enable_autograd_cache=False) if first else contextlib.nullcontext():
            if training:
                return zoo.train_step(m, self.opt, self.x, self.t)
            with torch.no_grad():
                return m(self.x)


def graph_summary(gm, backward: bool, code) -> dict[str, Any]:
    """An FX graph AOTAutograd produced and the Inductor code for it, counted."""
    nodes = [n for n in gm.graph.nodes if n.op == "call_function" and n.target is not operator.getitem]
    names = [getattr(getattr(n.target, "overloadpacket", n.target), "__name__", str(n.target)) for n in nodes]
    ph = [n for n in gm.graph.nodes if n.op == "placeholder"]
    saved = [p for p in ph if not p.name.startswith(("tangents", "primals"))] if backward else []
    nbytes = sum(int(v.numel()) * v.element_size() for v in (p.meta.get("val") for p in saved) if hasattr(v, "numel"))
    return {"backward": backward, "nodes": len(nodes), "layout": sum(n in zoo.LAYOUT_OPS for n in names),
            "saved": len(saved), "saved_bytes": nbytes, "kernels": code.kernel_count if code else 0,
            "library": len(code.extern_calls) if code else 0, "kernel_names": list(code.kernels) if code else [],
            "extern": list(code.extern_calls) if code else []}


def bundle(run: Run, cfg: zoo.Config) -> Bundle:
    """The configuration's bundle, kept in the demo's cache (the least recently used dropped
    beyond 8 on a CPU, 2 on a GPU)."""
    bundles = run.cached("bundles", OrderedDict)
    if cfg not in bundles:
        while len(bundles) >= (8 if device_kind() == "cpu" else 2):
            bundles.popitem(last=False)
            release_memory()
        bundles[cfg] = Bundle(cfg)
    bundles.move_to_end(cfg)
    return bundles[cfg]


def agreement(b: Bundle) -> dict[str, float]:
    """Max |difference| from eager of every form's forward output ÷ max |output|, same weights."""
    import numpy as np

    ref = to_numpy(b.call("torch_eager", False))
    outs = {"torch_compile": to_numpy(b.call("torch_compile", False))}
    with contextlib.suppress(DemoError):  # no JAX: the torch forms still agree, or not
        outs |= zoo.jax_outputs(b.model, b.x, b.cfg.heads)
    scale = float(np.abs(ref).max())
    return {k: float(np.abs(v - ref).max()) / scale for k, v in outs.items()}


# =======================================================================================
# The speed slide's regimes: where compiling the step pays (op-bound) and where it cannot (GEMM-bound)
# =======================================================================================
GEMM_N = 512  # the n × n float32 matmul whose rate the step is compared with


def gemm_form(n: int = GEMM_N) -> tuple[Callable[[], Any], Callable[[Any], None]]:
    """An n × n float32 matmul on this device, as a form to time in turn with the step's forms:
    2n³ ÷ its median is the rate a step that is all matmuls could reach on the threads in force.
    Timed in turn with the step, a busy spell of the machine slows both alike: timed on its own,
    beside another pytest worker, its rate once came out at half, and an op-heavy step read as
    GEMM-bound."""
    torch = require_torch()
    g = torch.Generator().manual_seed(0)
    a, b = (torch.randn(n, n, generator=g).to(torch_device()) for _ in range(2))
    return (lambda: a @ b), sync_torch()


def agreement_bound(d: dict) -> float:
    """Two orders of the forward's float32 sums (D terms each, a few per layer) drift apart by at
    most 2·D·u per sum (conditions.rounding_bound): one sum per layer is the scale used."""
    return rounding_bound(d["cfg"]["dtype"], d["cfg"]["width"], d["cfg"]["layers"])


def gemm_share(d: dict) -> float:
    """Eager's step in FLOP/s ÷ this device's float32 GEMM rate: how much of the step is arithmetic."""
    return d["flops"] / d["rows"]["torch_eager"]["median_s"] / d["gemm_flops_per_s"]


GEMM_SHARE = 0.25  # under a quarter of the GEMM rate: the step's time is its ops, not its matmuls
OP_BOUND = measured(gemm_share, "<", GEMM_SHARE,
                    "op-bound: eager's step runs at {x:.0%} of this device's float32 GEMM rate, {cmp} {t:.0%}")
GEMM_BOUND = measured(gemm_share, ">=", GEMM_SHARE,
                      "GEMM-bound: eager's step runs at {x:.0%} of this device's float32 GEMM rate, {cmp} {t:.0%}")
