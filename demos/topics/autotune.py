"""Part 3 — specialisation: a GEMM chosen for exactly this problem, and a ReLU that may ride on it.

The seed card's second step of a compiler, "a tile configuration chosen for exactly that
problem", made visible on the seed's two matmuls, ``relu(X @ A) @ B``, as an inference module
(A and B its weights). Default Inductor sends each GEMM to a library (cuBLAS; on a CPU, with its
weights frozen, MKL's packed linear) and runs the ReLU as a kernel of its own between them.
``mode="max-autotune-no-cudagraphs"`` also writes GEMMs of its own (Triton templates on a GPU,
C++ micro-GEMM templates on a CPU), benchmarks every candidate against the library at these exact
shapes, and keeps the fastest. Where a generated GEMM wins, the ReLU becomes its epilogue: the
pass between the two matmuls goes away. Where the library wins, it stays.

One live demo, ``gemms()`` (pacing "cold": each Run compiles both modes with Inductor's caches off,
so the autotuning really runs): ``measure_gemms(run)`` compiles a fresh module per mode with
its weights frozen (:func:`demos.introspection.hooks.cold_frozen`; Inductor's CPU templates need
constant weights), records what autotuning benchmarked (:func:`demos.introspection.hooks.autotuned`)
and reads the launches from the generated code (:func:`demos.introspection.inductor.parse_inductor`);
then times eager and both compiled forms interleaved. ``figure_gemms``
(:mod:`demos.topics.autotune_figures`) draws the launches, the candidates and the times.
"""
from __future__ import annotations

import re
from typing import Any

from demos.deck import asks
from demos.deck.claims import Claim, Claims
from demos.deck.demo import Configs, Demo
from demos.engine.devices import jax_or_none, require_torch, torch_device
from demos.engine.measurement import Run
from demos.engine.peaks import oom_is_one_line
from demos.engine.timing import compile_seconds
from demos.engine.workload_defs import get
from demos.engine.workloads import prepare
from demos.introspection.codegen import workload_xla_code
from demos.introspection.hooks import autotuned, cold_frozen, output_code
from demos.introspection.inductor import MATMUL_EXTERNS, parse_inductor
from demos.topics.autotune_figures import figure_gemms

MODES = {"default": {}, "max-autotune": {"mode": "max-autotune-no-cudagraphs"}}


def _forward(self, x):
    """The seed's two matmuls as a module: relu(x @ A) @ B."""
    return (x @ self.a).relu() @ self.b


def two_gemms(run: Run, a, b, tag: str):
    """A module of its own class (a fresh ``forward``: its own Dynamo cache), weights ``a`` and ``b``."""
    torch = require_torch()
    cls = type(f"TwoGemms_{tag}", (torch.nn.Module,), {"forward": run.fresh(_forward, tag)})
    m = cls()
    m.a = torch.nn.Parameter(a, requires_grad=False)
    m.b = torch.nn.Parameter(b, requires_grad=False)
    return m.eval()


def launches(code) -> list[dict[str, str]]:
    """What the compiled module launches per call, in order: library GEMMs, generated GEMMs
    (templates) and other generated kernels."""
    out: list[dict[str, str]] = []
    templates = set(code.gemm_templates)
    for line in code.wrapper.splitlines():
        s = line.strip()
        if s.startswith("#"):
            continue
        for name in code.kernels:
            if s.startswith(f"{name}(") or s.startswith(f"{name}.run("):
                out.append({"name": name, "kind": "generated GEMM" if name in templates else "generated kernel"})
                break
        else:
            for op in MATMUL_EXTERNS:
                if f"extern_kernels.{op}(" in s or (("." in op) and f"torch.ops.{op}." in s):
                    out.append({"name": op, "kind": "library GEMM"})
                    break
    return out


def xla_launches(entry: str) -> list[dict[str, str]]:
    """What XLA's optimized entry computation runs, in order: GEMMs it hands to a library (a
    cuBLAS custom call; YNNPACK or oneDNN fusions on a CPU), GEMMs it generates (Triton GEMM
    fusions on a GPU) and its other fusions."""
    out: list[dict[str, str]] = []
    for line in entry.splitlines():
        m = re.match(r"^\s*(?:ROOT\s+)?%(?P<name>[\w.-]+)\s*=.*?\s(?P<op>fusion|custom-call|dot)\(", line)
        if not m:
            continue
        config = re.search(r'"fusion(?:_backend)?_config":\{"kind":"(?P<k>[^"]+)"', line)  # XLA:CPU, XLA:GPU
        target = re.search(r'custom_call_target="(?P<t>[^"]+)"', line)
        what = (config.group("k") if config else target.group("t") if target else "").lower()
        if "triton" in what:
            kind = "generated GEMM"
        elif m.group("op") == "dot" or re.search(r"ynn|onednn|gemm|cublas|matmul|dot", what):
            kind = "library GEMM"
        else:
            kind = "generated kernel"
        out.append({"name": m.group("name"), "kind": kind})
    return out


def measure_gemms(run: Run, budget_s: float = 0.1) -> dict[str, Any]:
    """Both modes compiled from cold (what autotuning benchmarked, what each launches, the first
    call's seconds and the compile's), then eager and both compiled forms timed interleaved."""
    torch = require_torch()
    device = torch_device()
    params = get("two_matmuls").resolve({})
    rows: dict[str, dict[str, Any]] = {}
    with oom_is_one_line("two_matmuls", params, "float32"), torch.no_grad():
        prep = prepare("two_matmuls", "torch_eager", params, "float32")
        x, a, b = prep.args
        forms = {"torch_eager": (prep.fn, prep.sync)}
        n = run.cached("runs", lambda: [0])
        n[0] += 1
        for i, (mode, options) in enumerate(MODES.items()):
            run.progress(0.05 + 0.4 * i, f"{mode}: compiling, Inductor's caches off"
                         + (" — benchmarking every GEMM candidate…" if options else "…"))
            compiled = torch.compile(two_gemms(run, a, b, f"{mode.replace('-', '_')}_{n[0]}"), **options)
            with cold_frozen(), autotuned() as tuned, output_code() as codes:
                first_s, _ = run.first_call(lambda: compiled(x), prep.sync)
            code = parse_inductor(codes, device)
            rows[mode] = {"first_s": first_s, "launches": launches(code), "autotuned": tuned}
            forms[mode] = (lambda c=compiled: c(x), prep.sync)
        if jax_or_none() is not None:  # XLA's choice for the same program: lowering only, nothing runs
            rows["jax_jit"] = {"launches": xla_launches(workload_xla_code("two_matmuls", params).entry)}
        run.progress(0.9, "timing eager and both compiled forms in turn…")
        timings = run.time_forms(forms, warmup=0, budget_s=budget_s * len(forms), min_samples=5, max_samples=200)
    for form, t in timings.items():
        rows.setdefault(form, {})["steady"] = t.to_dict()
        if "first_s" in rows[form]:
            rows[form]["compile_s"] = compile_seconds(rows[form]["first_s"], t.median)
    B, D, H = (params[k] for k in "BDH")
    return {"device": device, "params": params, "rows": rows,
            "extra": f"relu(X @ A) @ B, X {B}×{D}, A {D}×{H}, B {H}×{D}, float32, weights frozen, Inductor caches off"}


# =======================================================================================
# What the slide claims
# =======================================================================================
def kinds(d: dict, mode: str) -> list[str]:
    return [x["kind"] for x in d["rows"][mode]["launches"]]


def _default_launches(d: dict) -> tuple[int, int]:
    """(library GEMMs, generated kernels) default Inductor launches per call."""
    k = kinds(d, "default")
    return k.count("library GEMM"), k.count("generated kernel")


def _xla_launches(d: dict) -> tuple[int, int] | None:
    """(library GEMMs, other fusions) XLA runs, where JAX is installed."""
    k = kinds(d, "jax_jit") if "jax_jit" in d["rows"] else None
    return None if k is None else (k.count("library GEMM"), k.count("generated kernel"))


def _tuned(d: dict) -> tuple[int, int]:
    """(GEMMs autotuning benchmarked, the fewest candidates any of them had)."""
    tuned = d["rows"]["max-autotune"]["autotuned"]
    return len(tuned), min((len(t["candidates"]) for t in tuned), default=0)


def _epilogue_on_generated(d: dict) -> bool:
    """A ReLU with no kernel of its own rides on a generated first GEMM (a library call cannot
    take an epilogue). The converse is not claimed: on a GPU Inductor benchmarks the template with
    the ReLU fused against the template plus a separate kernel, and keeps the faster
    (``benchmark_epilogue_fusion``)."""
    k = kinds(d, "max-autotune")
    return k.count("generated kernel") > 0 or (bool(k) and k[0] == "generated GEMM")


def autotuning_s(d: dict) -> float:
    """Seconds max-autotune spent choosing (compiling and benchmarking candidates), all GEMMs."""
    return sum(t.get("seconds") or 0.0 for t in d["rows"]["max-autotune"]["autotuned"])


gemms_claims = Claims(
    Claim("default Inductor: {0} library GEMMs and {1} generated kernel (the ReLU, a pass of its own)",
          _default_launches, "==", (2, 1), key="default"),
    Claim("max-autotune benchmarked {0} GEMMs, at least {1} candidates each (library and generated)",
          _tuned, ("==", ">="), (2, 2), key="tuned"),
    Claim("XLA on a CPU: {0} library GEMMs and the ReLU as {1} fusion of its own",
          _xla_launches, "==", {"cpu": (2, 1)}, applies=lambda d: "jax_jit" in d["rows"], key="xla"),
    Claim("where the ReLU has no kernel of its own, a generated GEMM carries it as its epilogue",
          _epilogue_on_generated, key="epilogue"),
)


def _first_winner(d: dict) -> int | None:
    """0: the library's GEMM won the first matmul; 1: a generated one; 2: nothing was benchmarked."""
    tuned, k = d["rows"]["max-autotune"]["autotuned"], kinds(d, "max-autotune")
    if not tuned:
        return 2
    return None if not k else (0 if k[0] == "library GEMM" else 1)


gemms = Demo(
    "gemms", "Autotuning: a GEMM chosen for this shape",
    controls=[], measure=measure_gemms, figure=figure_gemms, panel="cold",
    configs=Configs(record={"budget_s": 0.3}, quick={"budget_s": 0.05}), claims=gemms_claims,
    ask=asks.among("max-autotune benchmarks the library's GEMM against GEMMs Inductor writes itself, at exactly "
                   "these shapes. Which wins the first matmul here?",
                   ("the library's GEMM", "a GEMM Inductor generated for this shape",
                    "neither: there was only one candidate to run"), _first_winner),
)
