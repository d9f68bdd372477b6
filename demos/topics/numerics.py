"""Part 5 — numerics: compiled and eager results differ slightly, within a stated tolerance.

A fused kernel computes the same formula in a different order and keeps intermediates in
registers (in float32 even when the tensors are bfloat16), while eager rounds every
intermediate tensor to the storage dtype. So the two outputs differ in the last bits — and
the compiled one is often the *closer* to an exact float64 evaluation of the same inputs.

One live demo (:class:`demos.deck.demo.Demo`), ``numerics.live()``: ``measure_numerics``
compares torch.compile with torch eager and jax.jit with JAX op-by-op, and every form with a
float64 reference; ``figure_numerics`` draws it (one figure per slide: its bars carry the numbers).
"""
from __future__ import annotations

from typing import Any, Callable

from demos.deck.claims import Claim, Claims
from demos.deck.demo import Choice, Demo, Progress
from demos.engine import plots
from demos.engine.devices import jax_or_none, require_torch
from demos.engine.errors import DemoError
from demos.engine.workloads import get, prepare, tolerance
from demos.engine.protocol import kept

PART = 5

WORKLOADS = ("complex_activation", "chain", "mlp_block", "two_matmuls")
DTYPES = ("float32", "bfloat16")
PAIRS = (("torch_compile", "torch_eager"), ("jax_jit", "jax_eager"))

_CACHE: dict[tuple, dict[str, Any]] = kept("topics.numerics._CACHE", {})  # every (workload, dtype) measured: toggling back is instant


def diff_stats(a, b, dtype: str) -> dict[str, float]:
    """How far ``a`` is from ``b`` (numpy arrays): max |a−b|, max relative difference
    |a−b| / max(|b|, atol), and the share of the allclose tolerance used (≤ 1 passes)."""
    import numpy as np

    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise DemoError(f"outputs differ in shape: {a.shape} vs {b.shape}")
    tol = tolerance(dtype)
    d = np.abs(a - b)
    return {
        "max_abs": float(d.max()) if d.size else 0.0,
        "max_rel": float((d / np.maximum(np.abs(b), tol["atol"])).max()) if d.size else 0.0,
        "tol_used": float((d / (tol["atol"] + tol["rtol"] * np.abs(b))).max()) if d.size else 0.0,
        "differ_frac": float((d > 0).mean()) if d.size else 0.0,
        "n": int(d.size),
    }


def _float64_reference(w, prep_eager):
    torch = require_torch()
    args = [a.detach().to("cpu", torch.float64) for a in prep_eager.args]
    with torch.no_grad():
        return w.torch_fn(*args).numpy()


def measure_numerics(workload: str = "complex_activation", dtype: str = "bfloat16", params: dict | None = None,
                     use_cache: bool = True, progress: Progress | None = None) -> dict[str, Any]:
    """Max abs / rel difference compiled vs eager (torch and JAX) and each form vs float64."""
    w = get(workload)
    if dtype not in DTYPES:
        from demos.engine.errors import unknown_name

        raise unknown_name("dtype", dtype, DTYPES)
    key = (w.name, dtype, tuple(sorted((params or {}).items())))
    if use_cache and key in _CACHE:
        return dict(_CACHE[key])
    if progress:
        progress(0.1, "running eager and compiled forms (compiles on first use)…")
    backends = ["torch_eager", "torch_compile"] + (["jax_eager", "jax_jit"] if jax_or_none() is not None else [])
    outs: dict[str, Any] = {}
    preps = {}
    for b in backends:
        p = prepare(w, b, params, dtype)
        preps[b] = p
        outs[b] = p.output_numpy()
    ref = _float64_reference(w, preps["torch_eager"])
    sizes = ", ".join(f"{k}={v:,}" for k, v in preps["torch_eager"].params.items())
    data: dict[str, Any] = {
        "workload": w.name, "dtype": dtype, "params": preps["torch_eager"].params,
        "tolerance": tolerance(dtype), "pairs": {}, "vs_float64": {}, "extra": f"{w.name} {sizes}, {dtype}",
    }
    for a, b in PAIRS:
        if a in outs and b in outs:
            data["pairs"][f"{a}|{b}"] = diff_stats(outs[a], outs[b], dtype)
    for b in backends:
        data["vs_float64"][b] = diff_stats(outs[b], ref, dtype)
    if outs["torch_eager"].size == 1:  # a scalar (a long reduction): show the values themselves
        data["scalars"] = {b: float(outs[b].ravel()[0]) for b in backends}
        data["scalars"]["float64"] = float(ref.ravel()[0])
    _CACHE[key] = data
    return dict(data)


def _pair_label(key: str) -> str:
    a, b = key.split("|")
    return f"{plots.label(a)} vs {plots.label(b)}"


def figure_numerics(data: dict[str, Any], reference: dict[str, Any] | None = None):
    """Left: compiled vs eager, as a share of the stated tolerance. Right: every form's error
    against float64 (who is closer to the exact answer)."""
    fig, (a1, a2) = plots.figure(1, 2, size=(plots.SLIDE_SIZE[0], 4.1))  # shorter: its slide has a long title and two control rows
    pairs = list(data["pairs"].items())
    ys = list(range(len(pairs)))
    floor = 1e-6  # the left edge of the log axis; a zero difference draws no bar
    used = [s["tol_used"] for _, s in pairs]
    a1.barh(ys, [max(u, floor) for u in used], color=[plots.color(k.split("|")[0]) for k, _ in pairs], height=0.4)
    for y, (k, s) in zip(ys, pairs):
        txt = ("  identical, bit for bit" if s["max_abs"] == 0 else
               f"  max |Δ| {s['max_abs']:.2g}, max rel {s['max_rel']:.2g}\n  {100 * s['differ_frac']:.0f}% of elements differ")
        a1.text(floor * 1.3, y + 0.26, txt.replace("\n  ", "\n").strip(), va="top", fontsize=12)  # 2 lines: left of the tolerance line
    a1.invert_yaxis()
    if reference:
        rp = reference.get("pairs", {})
        for y, (k, _) in zip(ys, pairs):
            if k in rp:
                a1.plot([max(rp[k]["tol_used"], floor)], [y - 0.35], marker="v", color=plots.PALETTE["reference"],
                        ms=9, ls="none", label="recorded" if y == 0 else None)
        a1.legend(loc="lower right", fontsize=11.5, title=reference.get("machine_short", "recorded"), title_fontsize=11)
    tol = data["tolerance"]
    a1.axvline(1.0, color="#b00020", ls="--", lw=1.5)
    a1.text(1.0, -0.45, f" tolerance\n rtol={tol['rtol']:g}\n atol={tol['atol']:g}",
            color="#b00020", fontsize=12, va="top")
    a1.set_xscale("log")
    a1.set_xlim(floor, 30)
    a1.set_xticks([1e-6, 1e-4, 1e-2, 1])  # every decade labelled was 8 crowded labels
    a1.set_ylim(len(pairs) - 0.4, -0.6)
    a1.set_yticks(ys, [_pair_label(k) for k, _ in pairs], fontsize=12)
    a1.set_xlabel("max |Δ| / (atol + rtol·|eager|)   (≤ 1 passes)")
    a1.set_title("compiled vs eager", loc="left", fontsize=15)
    vs = list(data["vs_float64"].items())
    y2 = list(range(len(vs)))
    errs = [max(s["max_abs"], 1e-12) for _, s in vs]
    a2.barh(y2, errs, color=[plots.color(b) for b, _ in vs], height=0.55)
    a2.set_yticks(y2, [plots.label(b) for b, _ in vs], fontsize=12)
    a2.invert_yaxis()
    a2.set_xscale("log")
    a2.set_xlabel("max |output − float64 result|")
    a2.set_title("distance from the exact answer", loc="left", fontsize=15)
    vals = data.get("scalars")
    for y, (b, s) in zip(y2, vs):
        txt = f" {s['max_abs']:.2g}"
        if vals:
            txt += f"  (= {vals[b]:,.6g})"
        a2.text(max(s["max_abs"], 1e-12), y, txt, va="center", fontsize=12)
    if vals:
        a2.set_title(f"distance from float64 = {vals['float64']:,.8g}", loc="left", fontsize=15)
    a2.set_xlim(min(errs) / 3, max(errs) * 30)
    plots.stamp_figure(fig, data, reference)
    return fig


def _example(dtype: str) -> Callable[[dict], bool]:
    """The slide's example (complex_activation) in ``dtype``."""
    return lambda d: d["workload"] == "complex_activation" and d["dtype"] == dtype


# The numerics slides: compiled agrees with eager within the stated tolerance (the share of
# allclose's budget used, ≤ 1 passes); for the slide's example (complex_activation) float32
# differences are tiny, and in bfloat16 they are visible and torch.compile is the closer to float64
# (the fused kernel skips eager's roundings)
numerics_claims = Claims(
    Claim("compiled output agrees with eager within tolerance (rtol={d[tolerance][rtol]:g}, "
          "atol={d[tolerance][atol]:g})", lambda d: max(s["tol_used"] for s in d["pairs"].values()), "<=", 1.0,
          key="tolerance"),
    Claim("float32: compiled and eager differ by less than {threshold:g}",
          lambda d: max(s["max_abs"] for s in d["pairs"].values()), "<", 1e-4, applies=_example("float32"),
          key="float32"),
    Claim("bfloat16: torch.compile and eager visibly differ",
          lambda d: d["pairs"]["torch_compile|torch_eager"]["max_abs"], ">", 0, applies=_example("bfloat16"),
          key="bfloat16_differ"),
    Claim("bfloat16: torch.compile is closer to float64 than eager",
          lambda d: d["vs_float64"]["torch_compile"]["max_abs"] < d["vs_float64"]["torch_eager"]["max_abs"],
          applies=_example("bfloat16"), key="bfloat16_closer"),
)


live = Demo(
    "live", "Numerics: compiled vs eager",
    controls=[Choice("dtype", "bfloat16", options=DTYPES, toggle=True),
              Choice("workload", "complex_activation", options=WORKLOADS)],
    measure=measure_numerics, figure=figure_numerics, match=("workload", "dtype"),
    warm=[{"workload": w, "dtype": d} for w in WORKLOADS for d in DTYPES], claims=numerics_claims,
)
