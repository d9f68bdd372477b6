"""What part 4's slides show of each compiler's work, read through :mod:`demos.introspection`: a
workload's torch side (Dynamo's FX graph and guards, Inductor's generated code) and its JAX side
(jaxpr, StableHLO, optimized HLO), each as stages of excerpt lines plus counts; the slimmer copy
of those stages a record keeps; an example function's source as a slide shows it.
:mod:`demos.topics.internals` measures with them.
"""
from __future__ import annotations

import inspect
import json
import re
from typing import Any, Callable

from demos.engine.measurement import Progress
from demos.introspection import codegen, dynamo, hlo, inductor

MAX_LINES = 400  # kept per stage in a measurement (figures show the first ~24; a record keeps 60)


def torch_side(w, params: dict[str, int], dtype: str, device: str, progress: Progress) -> dict[str, Any]:
    """Workload ``w`` through torch.compile: Dynamo's capture, then Inductor's code; the stages
    (FX graph, guards, generated code), the counts and the generated kernels' names."""
    from demos.engine.workloads import prepare

    progress(0.05, f"Dynamo: capturing {w.name}…")
    cap = dynamo.capture(w.torch_fn, *prepare(w, "torch_eager", params, dtype, device).args)
    progress(0.3, f"Inductor: generating code for {w.name} (seconds when cold)…")
    code = codegen.workload_inductor_code(w.name, params, dtype, device)
    return {
        "stages": {"FX graph": "\n\n".join(cap["graphs"]).splitlines()[:MAX_LINES],
                   "guards": cap["guards_plain"], "generated code": inductor.generated_excerpt(code)[:MAX_LINES]},
        "counts": {"graphs": cap["graph_count"], "guards": cap["guard_count"],
                   "kernels": code.kernel_count, "library calls": len(code.extern_calls)},
        "kernels": list(code.kernels), "extern_calls": list(code.extern_calls),
        "kernel_lang": {"cuda": "Triton", "cpu": "C++/OpenMP"}.get(code.device, code.device),
    }


def jax_side(w, params: dict[str, int], dtype: str, device: str) -> dict[str, Any]:
    """Workload ``w`` through jax.jit: the stages (jaxpr, StableHLO, optimized HLO), the counts and
    XLA's fusions."""
    xc = codegen.workload_xla_code(w.name, params, dtype, device)
    return {
        "stages": {"jaxpr": xc.jaxpr.splitlines()[:MAX_LINES],
                   "StableHLO": hlo.stablehlo_excerpt(xc.stablehlo)[:MAX_LINES],
                   "optimized HLO": hlo.hlo_excerpt(xc.hlo)[:MAX_LINES]},
        "counts": {"jaxpr eqns": xc.jaxpr_eqns, "StableHLO ops": xc.stablehlo_ops,
                   "HLO fusions": xc.fusion_count, "HLO ops": xc.kernel_count},
        "fusions": list(xc.fusions), "backend": xc.backend,
    }


def slim_stages(data: dict[str, Any], keep: int = 60) -> dict[str, Any]:
    """A record keeps the first ``keep`` lines of each stage (a figure shows ~24)."""
    d = json.loads(json.dumps(data, default=str))
    for side in ("torch", "jax"):
        stages = d.get(side, {}).get("stages", {})
        stages.update({k: v[:keep] for k, v in stages.items()})
    return d


def source_lines(fn: Callable) -> list[str]:
    """The example's source as shown on the slide, without trailing comments."""
    return [re.sub(r"\s+#.*$", "", ln).rstrip() for ln in inspect.getsource(fn).rstrip("\n").splitlines()]
