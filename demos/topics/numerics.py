"""Part 5 — numerics: compiled and eager results differ slightly, within a stated tolerance.

A fused kernel keeps intermediates in registers (Inductor: in float32 even when the tensors are
bfloat16; ``torch._inductor.config.emulate_precision_casts`` keeps eager's roundings) while eager
rounds every intermediate tensor to the storage dtype; its sin, exp, tanh come from another math
library (Inductor's C++ calls ATen's ``at::vec`` functions, SLEEF: ``Sleef_sinf16_u35`` for sin
with AVX-512; eager's x86 build uses MKL's VML for them, ``ATen/cpu/vml.h``); on a GPU Triton contracts
a·b+c into one rounding (FMA), while Inductor's C++ is built with ``-ffp-contract=off``; and its
reductions add in another order (reassociation). So the two outputs differ in the last bits — and
the compiled one is often the *closer* to an exact float64 evaluation of the same inputs. For a
long reduction (``chain``) the measurement also sums the same float32 terms (its input) in a
permuted order: reassociation alone, against the bound 2·n·u·Σ|terms| (:func:`reordered_sum`).

One live demo (:class:`demos.deck.demo.Demo`), ``numerics.live()``: ``measure_numerics(run, …)``
compares torch.compile with torch eager and jax.jit with JAX op-by-op, and every form with a
float64 reference, keeping each (workload, dtype) it measured in the demo's cache (toggling back
is instant); ``figure_numerics`` (:mod:`demos.topics.numerics_figures`) draws it (one figure per
slide: its bars carry the numbers).
"""
from __future__ import annotations

from typing import Any, Callable

from demos.deck import asks
from demos.deck.claims import Claim, Claims, regime
from demos.deck.conditions import rounding_bound, rounding_text
from demos.deck.demo import Choice, Configs, Demo
from demos.engine.devices import jax_or_none, require_torch
from demos.engine.errors import DemoError
from demos.engine.measurement import Run
from demos.engine.workload_defs import get, tolerance, unit_roundoff
from demos.engine.workloads import prepare
from demos.topics.numerics_figures import figure_numerics

WORKLOADS = ("complex_activation", "chain", "mlp_block", "two_matmuls")
DTYPES = ("float32", "bfloat16")
PAIRS = (("torch_compile", "torch_eager"), ("jax_jit", "jax_eager"))


def roundings(workload: str, params: dict[str, int]) -> int:
    """The roundings on a workload's longest path: its eager ops, plus the terms of its sums (the
    chain sums its N elements; a GEMM sums D terms, the next H): the n of the tolerance 2·n·u."""
    p, ops = params, len(get(workload).eager_ops)
    sums = {"chain": lambda: p["N"], "two_matmuls": lambda: p["D"] + p["H"], "mlp_block": lambda: p["D"] + p["H"]}
    return ops + (sums[workload]() if workload in sums else 0)


def diff_stats(a, b, dtype: str, n: int = 8) -> dict[str, float]:
    """How far ``a`` is from ``b`` (numpy arrays): max |a−b|, max relative difference
    |a−b| / max(|b|, atol), and the share of the allclose tolerance used (≤ 1 passes)."""
    import numpy as np

    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise DemoError(f"outputs differ in shape: {a.shape} vs {b.shape}")
    tol = tolerance(dtype, n)
    d = np.abs(a - b)
    return {
        "max_abs": float(d.max()) if d.size else 0.0,
        "max_rel": float((d / np.maximum(np.abs(b), tol["atol"])).max()) if d.size else 0.0,
        "tol_used": float((d / (tol["atol"] + tol["rtol"] * np.abs(b))).max()) if d.size else 0.0,
        "differ_frac": float((d > 0).mean()) if d.size else 0.0,
        "n": int(d.size),
    }


def reordered_sum(x) -> dict[str, float]:
    """Reassociation alone: the same float32 terms (``x``, flattened) summed by torch in their order
    and in a fixed random permutation; |Δ| against the bound two orders obey, 2·n·u·Σ|terms|."""
    torch = require_torch()
    t = x.detach().reshape(-1).float()
    perm = torch.randperm(t.numel(), generator=torch.Generator().manual_seed(0)).to(t.device)
    in_order, permuted = float(t.sum()), float(t[perm].sum())
    n = t.numel()
    return {"n": n, "in_order": in_order, "permuted": permuted, "float64": float(t.double().sum()),
            "diff": abs(in_order - permuted), "bound": rounding_bound("float32", n) * float(t.double().abs().sum())}


def _float64_reference(w, prep_eager):
    torch = require_torch()
    args = [a.detach().to("cpu", torch.float64) for a in prep_eager.args]
    with torch.no_grad():
        return w.torch_fn(*args).numpy()


def measure_numerics(run: Run, workload: str = "complex_activation", dtype: str = "bfloat16",
                     params: dict | None = None) -> dict[str, Any]:
    """Max abs / rel difference compiled vs eager (torch and JAX) and each form vs float64; each
    (workload, dtype, params) measured once per ``run.cache``."""
    w = get(workload)
    if dtype not in DTYPES:
        from demos.engine.errors import unknown_name

        raise unknown_name("dtype", dtype, DTYPES)
    key = ("numerics", w.name, dtype, tuple(sorted((params or {}).items())))
    if key in run.cache:
        return dict(run.cache[key])
    run.progress(0.1, "running eager and compiled forms (compiles on first use)…")
    backends = ["torch_eager", "torch_compile"] + (["jax_eager", "jax_jit"] if jax_or_none() is not None else [])
    outs: dict[str, Any] = {}
    preps = {}
    for b in backends:
        p = prepare(w, b, params, dtype)
        preps[b] = p
        outs[b] = p.output_numpy()
    ref = _float64_reference(w, preps["torch_eager"])
    sizes = ", ".join(f"{k}={v:,}" for k, v in preps["torch_eager"].params.items())
    n = roundings(w.name, preps["torch_eager"].params)
    data: dict[str, Any] = {
        "workload": w.name, "dtype": dtype, "params": preps["torch_eager"].params, "roundings": n,
        "tolerance": tolerance(dtype, n), "pairs": {}, "vs_float64": {}, "extra": f"{w.name} {sizes}, {dtype}",
    }
    for a, b in PAIRS:
        if a in outs and b in outs:
            data["pairs"][f"{a}|{b}"] = diff_stats(outs[a], outs[b], dtype, n)
    for b in backends:
        data["vs_float64"][b] = diff_stats(outs[b], ref, dtype, n)
    import numpy as np

    data["scale"] = float(np.abs(np.asarray(outs["torch_eager"], dtype=np.float64)).max())
    if outs["torch_eager"].size == 1:  # a scalar (a long reduction): show the values themselves
        data["scalars"] = {b: float(outs[b].ravel()[0]) for b in backends}
        data["scalars"]["float64"] = float(ref.ravel()[0])
        data["reordered"] = reordered_sum(preps["torch_eager"].args[0])  # its input's terms, in another order
    run.cache[key] = data
    return dict(data)


def _example(dtype: str) -> Callable[[dict], bool]:
    """The slide's example (complex_activation) in ``dtype``."""
    return lambda d: d["workload"] == "complex_activation" and d["dtype"] == dtype


# The numerics slides: compiled agrees with eager within the stated tolerance (the share of
# allclose's budget used, ≤ 1 passes); for the slide's example (complex_activation) float32
# differences are tiny, and in bfloat16 they are visible and torch.compile is the closer to float64
# (the fused kernel skips eager's roundings)
def _closer(d: dict[str, Any]) -> int:
    """0: eager is closer to float64, 1: torch.compile is, 2: they agree exactly."""
    if d["pairs"]["torch_compile|torch_eager"]["max_abs"] == 0:
        return 2
    v = d["vs_float64"]
    return 1 if v["torch_compile"]["max_abs"] < v["torch_eager"]["max_abs"] else 0


def _bound(d: dict[str, Any]) -> tuple[bool, str]:
    """The tolerance's derivation: the dtype's unit roundoff and the roundings on the longest path."""
    return True, rounding_text(d["dtype"], d["roundings"], what="roundings and summed terms")


def _roundings_skipped(d: dict[str, Any]) -> tuple[bool, str]:
    """bfloat16's closer-to-float64 regime: eager rounds every op's result to bfloat16, the fused
    kernel computes in float32 and rounds once, so several roundings are skipped."""
    ops = len(get(d["workload"]).eager_ops)
    return ops >= 2, f"eager rounds each of the {ops} ops' results to bfloat16; the fused kernel rounds once"


def _sum_bound(d: dict[str, Any]) -> tuple[bool, str]:
    """The reordered sum's condition: n float32 terms, two orders within 2·n·u·Σ|terms|."""
    r = d["reordered"]
    return True, (f"|Δ| = {r['diff']:.2g}; {r['n']:,} terms, so two orders differ by at most "
                  f"2·n·u·Σ|terms| = {r['bound']:.2g}")


_sum_bound.measures = True  # the footer states it on every machine: the measured |Δ| beside its bound


numerics_claims = Claims(
    Claim("compiled output agrees with eager within tolerance (rtol={d[tolerance][rtol]:.2g}, "
          "atol={d[tolerance][atol]:.2g})", lambda d: max(s["tol_used"] for s in d["pairs"].values()), "<=", 1.0,
          key="tolerance", **regime(when=_bound)),
    Claim("float32: compiled and eager differ by less than {threshold:g} of eager's largest output "
          "(max|Δ| ÷ max|y|)", lambda d: max(s["max_abs"] for s in d["pairs"].values()) / d["scale"], "<",
          2 * len(get("complex_activation").eager_ops) * unit_roundoff("float32"), applies=_example("float32"),
          key="float32", **regime(when=_bound)),
    Claim("bfloat16: torch.compile and eager visibly differ",
          lambda d: d["pairs"]["torch_compile|torch_eager"]["max_abs"], ">", 0, applies=_example("bfloat16"),
          key="bfloat16_differ", **regime(when=_roundings_skipped)),
    Claim("bfloat16: torch.compile is closer to float64 than eager",
          lambda d: d["vs_float64"]["torch_compile"]["max_abs"] < d["vs_float64"]["torch_eager"]["max_abs"],
          applies=_example("bfloat16"), key="bfloat16_closer", **regime(when=_roundings_skipped)),
    # a long reduction (chain): its float32 inputs summed in order and permuted, reassociation alone
    Claim("reassociation: the same float32 inputs, summed in another order, give another sum",
          lambda d: (d["reordered"]["diff"], d["reordered"]["diff"] / d["reordered"]["bound"]), (">", "<="), (0, 1.0),
          applies=lambda d: "reordered" in d, key="reordered", **regime(when=_sum_bound)),
)


live = Demo(
    "live", "Numerics: compiled vs eager",
    controls=[Choice("dtype", "bfloat16", options=DTYPES, toggle=True, match=True),
              Choice("workload", "complex_activation", options=WORKLOADS, match=True)],
    measure=measure_numerics, figure=figure_numerics,
    configs=Configs(warm=[{"workload": w, "dtype": d} for w in WORKLOADS for d in DTYPES]), claims=numerics_claims,
    ask=asks.among("complex_activation in bfloat16, eager and compiled, each against a float64 reference: "
                   "which is closer?", ("eager", "torch.compile", "neither: the two give the same numbers"),
                   _closer, lambda d: f"off by {d['vs_float64']['torch_eager']['max_abs']:.2g} vs "
                                      f"{d['vs_float64']['torch_compile']['max_abs']:.2g}"),
)
