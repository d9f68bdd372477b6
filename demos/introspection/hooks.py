"""The places the deck hooks into Inductor, each written once.

``output_code()``      Inductor's generated source for every graph compiled inside the block: a
                       patch of ``torch._inductor.graph.GraphLowering.save_output_code``, which
                       receives each generated module's code.
``autotuned()``        what max-autotune benchmarked, for each GEMM it tuned inside the block: a
                       feedback saver on Inductor's algorithm selector (``select_algorithm``),
                       which hands each saver the timing of every candidate it benchmarked, and
                       the selector's call timed (the seconds autotuning took).
``cold_frozen()``      compiling with Inductor's caches off (every compile, and every autotuning,
                       really runs) and parameters frozen into constants (``freezing``: what
                       Inductor's CPU GEMM templates need to pack the weights), its stderr report kept off the slide.
``cache_folder()``     compiling with one folder as Inductor's cache and none of its in-memory
                       caches: emptied first (every kernel built, as on a new machine), or as the
                       last compile there left it (what a second run pays).
``InductorBackend``    a ``torch.compile`` backend that runs Inductor (``compile_fx``) and counts the
                       graphs Dynamo hands it, times Inductor's share of each compile, and can see
                       each graph AOTAutograd passes on (forward, backward) with its generated code.

All are private APIs of torch (2.13 here); this is the one module that names them.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from demos.engine.timing import Stopwatch


@contextlib.contextmanager
def output_code(unique: bool = True) -> Iterator[list[str]]:
    """Collect Inductor's generated code for each graph compiled in the block (once each when
    ``unique``)."""
    from unittest import mock

    from torch._inductor.graph import GraphLowering

    codes: list[str] = []

    def save(code: str, *_a: Any, **_k: Any) -> None:
        if not unique or code not in codes:
            codes.append(code)

    with mock.patch.object(GraphLowering, "save_output_code", staticmethod(save)):
        yield codes


@contextlib.contextmanager
def autotuned() -> Iterator[list[dict[str, Any]]]:
    """Each autotuning Inductor does in the block, in order: ``{"op", "shapes", "candidates",
    "seconds"}``, the candidates ``{"name", "ms"}`` fastest first (the first is the one chosen),
    ``seconds`` the wall time of that selection (compiling and benchmarking its candidates).
    Nothing is reported for a GEMM whose choice came from a cache, or that had one candidate."""
    from unittest import mock

    from torch._inductor.select_algorithm import AlgorithmSelectorCache, get_algorithm_selector_cache

    found: list[dict[str, Any]] = []

    def saver(timings: dict, name: str, input_nodes: list, *_rest: Any) -> None:
        shapes = []
        for node in input_nodes:
            try:
                shapes.append([int(x) for x in node.get_size()])
            except (TypeError, ValueError, AttributeError):  # a symbolic size: shown as text
                shapes.append([str(x) for x in getattr(node, "get_size", lambda: [])()])
        cands = sorted(({"name": str(getattr(c, "name", c)), "ms": float(t)} for c, t in timings.items()),
                       key=lambda c: c["ms"])
        found.append({"op": name, "shapes": shapes, "candidates": cands, "seconds": None})

    select = AlgorithmSelectorCache.__call__

    def timed_select(self, *args: Any, **kwargs: Any):
        before = len(found)
        with Stopwatch() as watch:
            try:
                return select(self, *args, **kwargs)
            finally:
                if len(found) > before:
                    found[-1]["seconds"] = watch.seconds

    savers = get_algorithm_selector_cache().feedback_saver_fns
    savers.append(saver)
    try:
        with mock.patch.object(AlgorithmSelectorCache, "__call__", timed_select):
            yield found
    finally:
        if saver in savers:
            savers.remove(saver)


@contextlib.contextmanager
def cold_frozen() -> Iterator[None]:
    """Compiles in the block skip every Inductor cache and freeze parameters into constants.
    Autotuning's own report (written to stderr) and its warnings stay off the slide: the figure
    shows what it benchmarked (:func:`autotuned`)."""
    import io
    import warnings

    from torch._inductor import config

    with config.patch(freezing=True, force_disable_caches=True), warnings.catch_warnings(), \
            contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        yield


@contextlib.contextmanager
def cache_folder(folder: Path, empty: bool) -> Iterator[None]:
    """Compiles in the block keep their caches in ``folder`` (Inductor's FX graph cache,
    AOTAutograd's cache, built kernels; Triton's cache inside it unless TRITON_CACHE_DIR is set),
    with both graph caches on and Inductor's in-memory caches cleared on entry and exit
    (``torch._inductor.runtime.cache_dir_utils.temporary_cache_dir``): nothing compiled before the
    block answers inside it. ``empty``: the folder is emptied first, so every graph is compiled and
    every kernel built, as on a new machine; otherwise what the folder holds answers, as in a
    second run of a script. The folder keeps what the block filled; what was compiled before the
    block keeps running."""
    import shutil

    from torch._functorch import config as functorch_config
    from torch._inductor import config
    from torch._inductor.runtime.cache_dir_utils import temporary_cache_dir

    if empty:
        shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
    with temporary_cache_dir(str(folder)), config.patch(fx_graph_cache=True), \
            functorch_config.patch(enable_autograd_cache=True):
        yield


def symbolic(example_inputs: Iterable[Any]) -> bool:
    """Whether a graph's example inputs (as a backend receives them) have symbolic sizes."""
    import torch

    return any(isinstance(e, torch.SymInt) or any(isinstance(s, torch.SymInt) for s in getattr(e, "shape", ()))
               for e in example_inputs)


@dataclass(frozen=True)
class Graph:
    """One graph Dynamo handed a backend: its FX code, its node count, and whether its sizes are
    symbolic (a dynamic graph)."""
    code: str
    nodes: int
    symbolic: bool


class CountingBackend:
    """The one way the deck counts compiles: a Dynamo backend that records every graph Dynamo hands
    it (``graphs``; ``compiles`` is their number, a recompile is one more) and calls ``on_graph(gm,
    example_inputs)`` with each. :class:`CaptureBackend` runs the graph as captured (Dynamo alone),
    :class:`InductorBackend` compiles it with Inductor. The one other count is Dynamo's own
    ``unique_graphs`` counter, for part 6's compile cost (``model_compile_cost.unique_graphs``),
    which compiles through ``torch.compile``'s own Inductor wrapper as a user does, because it times
    that compile."""

    def __init__(self, on_graph: Callable[[Any, list], None] | None = None):
        self.on_graph = on_graph
        self.graphs: list[Graph] = []

    @property
    def compiles(self) -> int:
        return len(self.graphs)

    def record(self, gm, example_inputs) -> None:
        self.graphs.append(Graph(gm.code.strip("\n"), len(gm.graph.nodes), symbolic(example_inputs)))
        if self.on_graph is not None:
            self.on_graph(gm, example_inputs)


class CaptureBackend(CountingBackend):
    """``torch.compile(fn, backend=CaptureBackend())``: Dynamo's capture alone, each graph run as
    captured (no Inductor), counted."""

    def __call__(self, gm, example_inputs):
        self.record(gm, example_inputs)
        return gm.forward


class InductorBackend(CountingBackend):
    """``torch.compile(fn, backend=InductorBackend())``: Inductor, counted and timed.

    ``compiles`` is the number of graphs Dynamo asked it to compile (a recompile is one more);
    ``seconds`` the time spent inside Inductor (AOTAutograd included); ``on_graph(gm,
    example_inputs)`` is called before each compile; ``on_inner(graph, is_backward, code)`` with
    each graph AOTAutograd compiles (the forward, then the backward) and its generated code (None
    when none was saved)."""

    def __init__(self, on_graph: Callable[[Any, list], None] | None = None,
                 on_inner: Callable[[Any, bool, str | None], None] | None = None):
        # Inductor's import (seconds in a fresh process) is paid here, before any clock starts: a
        # first call timed around this backend would otherwise count it as Dynamo's capture
        import torch._inductor.compile_fx  # noqa: F401

        super().__init__(on_graph)
        self.on_inner = on_inner
        self._inside = Stopwatch()  # every compile's seconds, added up

    def __call__(self, gm, example_inputs):
        from torch._inductor.compile_fx import compile_fx, compile_fx_inner

        self.record(gm, example_inputs)
        kwargs: dict[str, Any] = {}
        if self.on_inner is not None:
            def inner(g, ex, **kw):
                with output_code(unique=False) as codes:
                    out = compile_fx_inner(g, ex, **kw)
                self.on_inner(g, bool(kw.get("is_backward")), codes[-1] if codes else None)
                return out

            kwargs["inner_compile"] = inner
        with self._inside:
            return compile_fx(gm, example_inputs, **kwargs)

    @property
    def seconds(self) -> float:
        """Seconds spent inside Inductor so far, every compile added up."""
        return self._inside.seconds
