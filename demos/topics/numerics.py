"""Part 5 — numerics: compiled and eager results differ slightly, within a stated tolerance.

A fused kernel computes the same formula in a different order and keeps intermediates in
registers (in float32 even when the tensors are bfloat16), while eager rounds every
intermediate tensor to the storage dtype. So the two outputs differ in the last bits — and
the compiled one is often the *closer* to an exact float64 evaluation of the same inputs.

``measure(workload, dtype)`` compares torch.compile with torch eager and jax.jit with JAX
op-by-op, and every form with a float64 reference; ``figure(data)`` draws it.
"""
from __future__ import annotations

import html
from typing import Any

from demos.engine import plots

from demos.deck import ui
from demos.engine.devices import jax_or_none, require_torch
from demos.engine.errors import DemoError
from demos.engine.workloads import get, prepare, tolerance

WORKLOADS = ("complex_activation", "chain", "mlp_block", "two_matmuls")
DTYPES = ("float32", "bfloat16")
PAIRS = (("torch_compile", "torch_eager"), ("jax_jit", "jax_eager"))

_CACHE: dict[tuple, dict[str, Any]] = {}


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


def measure(workload: str = "chain", dtype: str = "bfloat16", params: dict | None = None,
            use_cache: bool = True) -> dict[str, Any]:
    """Max abs / rel difference compiled vs eager (torch and JAX) and each form vs float64."""
    w = get(workload)
    if dtype not in DTYPES:
        from demos.engine.errors import unknown_name

        raise unknown_name("dtype", dtype, DTYPES)
    key = (w.name, dtype, tuple(sorted((params or {}).items())))
    if use_cache and key in _CACHE:
        return _CACHE[key]
    backends = ["torch_eager", "torch_compile"] + (["jax_eager", "jax_jit"] if jax_or_none() is not None else [])
    outs: dict[str, Any] = {}
    preps = {}
    for b in backends:
        p = prepare(w, b, params, dtype)
        preps[b] = p
        outs[b] = p.output_numpy()
    ref = _float64_reference(w, preps["torch_eager"])
    data: dict[str, Any] = {
        "workload": w.name, "dtype": dtype, "params": preps["torch_eager"].params,
        "tolerance": tolerance(dtype), "pairs": {}, "vs_float64": {},
    }
    for a, b in PAIRS:
        if a in outs and b in outs:
            data["pairs"][f"{a}|{b}"] = diff_stats(outs[a], outs[b], dtype)
    for b in backends:
        data["vs_float64"][b] = diff_stats(outs[b], ref, dtype)
    if outs["torch_eager"].size == 1:  # a scalar (a long reduction): show the values themselves
        data["values"] = {b: float(outs[b].ravel()[0]) for b in backends}
        data["values"]["float64"] = float(ref.ravel()[0])
    _CACHE[key] = data
    return data


def measure_all(quick: bool = False) -> dict[str, Any]:
    params = {}
    out: dict[str, Any] = {}
    for wname in WORKLOADS:
        if quick:
            w = get(wname)
            params = {p.name: p.quick for p in w.params}
        for dt in DTYPES:
            try:
                out[f"{wname}|{dt}"] = measure(wname, dt, params or None, use_cache=False)
            except DemoError as exc:
                out[f"{wname}|{dt}"] = {"error": str(exc)}
    return out


def warm() -> None:
    for wname in WORKLOADS:
        for dt in DTYPES:
            measure(wname, dt)


def _pair_label(key: str) -> str:
    a, b = key.split("|")
    return f"{plots.label(a)} vs {plots.label(b)}"


def figure(data: dict[str, Any], reference: dict[str, Any] | None = None, ref_stamp: str = "",
           *, stamp: str | None = None, where: str = "Measured on"):
    """Left: compiled vs eager, as a share of the stated tolerance. Right: every form's error
    against float64 (who is closer to the exact answer)."""
    fig, (a1, a2) = plots.figure(1, 2, size=(10.5, 4.1))  # 50 px shorter: its slide has a long title and two control rows
    pairs = list(data["pairs"].items())
    ys = list(range(len(pairs)))
    floor = 1e-6  # the left edge of the log axis; a zero difference draws no bar
    used = [s["tol_used"] for _, s in pairs]
    a1.barh(ys, [max(u, floor) for u in used], color=[plots.color(k.split("|")[0]) for k, _ in pairs], height=0.4)
    for y, (k, s) in zip(ys, pairs):
        txt = ("  identical, bit for bit" if s["max_abs"] == 0 else
               f"  max |Δ| {s['max_abs']:.2g}, max rel {s['max_rel']:.2g}\n  {100 * s['differ_frac']:.0f}% of elements differ")
        a1.text(floor * 1.3, y + 0.28, txt.replace("\n  ", "; ").strip(), va="top", fontsize=10)
    a1.invert_yaxis()
    if reference:
        rp = reference.get("pairs", {})
        for y, (k, _) in zip(ys, pairs):
            if k in rp:
                a1.plot([max(rp[k]["tol_used"], floor)], [y - 0.35], marker="v", color=plots.PALETTE["reference"],
                        ms=9, ls="none", label="recorded" if y == 0 else None)
        a1.legend(loc="lower right", fontsize=9, title=ref_stamp[:40], title_fontsize=8)
    tol = data["tolerance"]
    a1.axvline(1.0, color="#b00020", ls="--", lw=1.5)
    a1.text(1.0, -0.45, f" tolerance\n rtol={tol['rtol']:g}\n atol={tol['atol']:g}",
            color="#b00020", fontsize=10, va="top")
    a1.set_xscale("log")
    a1.set_xlim(floor, 30)
    a1.set_ylim(len(pairs) - 0.4, -0.6)
    a1.set_yticks(ys, [_pair_label(k) for k, _ in pairs], fontsize=10)
    a1.set_xlabel("max |Δ| / (atol + rtol·|eager|)   (≤ 1 passes)")
    a1.set_title("compiled vs eager", loc="left")
    vs = list(data["vs_float64"].items())
    y2 = list(range(len(vs)))
    errs = [max(s["max_abs"], 1e-12) for _, s in vs]
    a2.barh(y2, errs, color=[plots.color(b) for b, _ in vs], height=0.55)
    a2.set_yticks(y2, [plots.label(b) for b, _ in vs], fontsize=10)
    a2.invert_yaxis()
    a2.set_xscale("log")
    a2.set_xlabel("max |output − float64 result|")
    a2.set_title("distance from the exact answer", loc="left")
    vals = data.get("values")
    for y, (b, s) in zip(y2, vs):
        txt = f" {s['max_abs']:.2g}"
        if vals:
            txt += f"  (= {vals[b]:,.6g})"
        a2.text(max(s["max_abs"], 1e-12), y, txt, va="center", fontsize=10)
    if vals:
        a2.set_title(f"distance from float64 = {vals['float64']:,.8g}", loc="left", fontsize=13)
    a2.set_xlim(min(errs) / 3, max(errs) * 30)
    sizes = ", ".join(f"{k}={v:,}" for k, v in data["params"].items())
    plots.stamp(fig, stamp or plots.live_stamp(f"{data['workload']} {sizes}, {data['dtype']}"), where=where)
    return fig


def table(data: dict[str, Any]) -> str:
    rows = []
    for k, s in data["pairs"].items():
        rows.append(f"<tr><td>{html.escape(_pair_label(k))}</td><td>{s['max_abs']:.3g}</td>"
                    f"<td>{s['max_rel']:.3g}</td><td>{s['tol_used']:.3g}</td><td>{100 * s['differ_frac']:.0f}%</td></tr>")
    head = ("<tr><th></th><th>max |Δ|</th><th>max rel Δ</th><th>share of tolerance</th>"
            "<th>elements that differ</th></tr>")
    return f"<table class='jitdeck-table' style='font-size:15px'>{head}{''.join(rows)}</table>"


def live(show: bool = True, workload: str = "complex_activation", dtype: str = "bfloat16"):
    """Compiled vs eager outputs for a workload and dtype, against the stated tolerance."""
    controls = {
        "dtype": ui.toggle("dtype", list(DTYPES), dtype),
        "workload": ui.choice("workload", list(WORKLOADS), workload),
    }

    def render(values, progress):
        from demos.topics.recompilation import _reference_section

        ref, ref_stamp = _reference_section()
        key = f"{values['workload']}|{values['dtype']}"
        refd = (ref or {}).get("numerics", {}).get(key)
        if refd is not None and "error" in refd:
            refd = None
        if ui.recorded_only():
            if refd is None:
                raise DemoError(f"the recorded run has no numerics for {key}")
            return figure(refd, stamp=ref_stamp, where="Recorded on"), table(refd)
        progress(0.1, "running eager and compiled forms (compiles on first use)…")
        data = measure(values["workload"], values["dtype"])
        return figure(data, refd, ref_stamp), table(data)

    panel = ui.Panel("Numerics: compiled vs eager", controls, render)
    if show:
        return panel.show()
    return panel
