"""Part 3 — when compilation pays, and the roofline that explains why.

Four live demos, each declared once (:class:`demos.deck.demo.Demo`) from a ``measure_*``
(JSON-able data) and a pure ``figure_*``:

``payoff()``     two_matmuls, chain and mlp_block in torch eager, torch.compile and jax.jit: median
                 latency (p10–p90), speedups, the seed's A100 numbers beside each group. A slider
                 re-measures only the workloads it changes.
``roofline()``   this machine's roofline (measured; the spec sheet dashed on a known GPU) with one
                 workload's eager and compiled points.
``predicted()``  each point's roofline prediction beside its measured time, the ratio and why.
``overheads()``  torch.compile ``mode="reduce-overhead"`` (CUDA graphs) vs the default mode at
                 small sizes. The workload fuses into one kernel, so a CUDA graph has one launch
                 to replace: no floor drops, on a GPU or (with no launches at all) on a CPU.

The roofs, the spec sheets and the model (analytic FLOPs and bytes; max(FLOPs ÷ peak, bytes ÷
bandwidth)) are the engine's (:mod:`demos.engine.peaks`): measured once per process and stored
in every measurement that uses them, so a recorded run carries its own machine's roofs.
Workload latencies are medians. The torch.compile forms compile *fresh copies* of the workload
functions, so this part's sliders never spend another part's Dynamo recompile budget; the
persistent Inductor cache is shared, so ``make warm`` still pays off.
"""
from __future__ import annotations

import math
import statistics
import textwrap
from typing import Any, Callable

from demos.deck.claims import Claim, Claims
from demos.deck.demo import Choice, Demo, Pow2, Progress
from demos.engine import plots
from demos.engine.devices import check_dtype, device_kind, dtype_supported, require_torch, torch_device
from demos.engine.errors import DemoError, is_oom, release_memory, unknown_name
from demos.engine.peaks import cost, is_fused, jax_same_device, peak_flops, peaks, peaks_for, predict, ridge, \
    spec_sheet
from demos.engine.timing import first_call, fmt_seconds, measure, measure_interleaved
from demos.engine.workloads import available, get as get_workload, prepare
from demos.engine.protocol import fresh_function, kept

PART = 3

PAYOFF_WORKLOADS = ("two_matmuls", "chain", "mlp_block")
ROOF_WORKLOADS = ("chain", "two_matmuls", "mlp_block", "complex_activation")
BACKENDS3 = ("torch_eager", "torch_compile", "jax_jit")
DTYPES = ("float32", "bfloat16")
TICKS = {"torch_eager": "eager", "torch_compile": "compile", "jax_jit": "jax.jit"}
MARKERS = {"torch_eager": "o", "torch_compile": "s", "jax_jit": "D"}
WARM_SCALES = (0.25, 0.5, 1.0, 2.0)  # the size control's neighbours of the default, compiled by `make warm`

# What the seed published (seed lecture notebook 003 'PyTorch and JAX', float32 on an A100: its
# Triton metadata says compute capability 8.0, 108 SMs), drawn beside the live numbers. Shapes:
# two_matmuls X 256×1024, A 1024×2048, B 2048×1024; chain N = 10,000,000; mlp_block
# B,S,D,H = 256,1024,512,2048 (torch with TF32 matmuls).
SEED = {"two_matmuls": {"torch_eager": 183e-6, "torch_compile": 214e-6, "jax_jit": 205e-6},
        "chain": {"torch_eager": 549e-6, "torch_compile": 81.9e-6, "jax_jit": 124e-6},
        "mlp_block": {"torch_eager": 22.5e-3, "torch_compile": 14.4e-3, "jax_jit": 14.8e-3}}


# =======================================================================================
# A point on the roofline (the model itself: demos.engine.peaks)
# =======================================================================================
def make_point(workload: str, backend: str, params: dict, dtype: str, timing: dict[str, Any],
               peaks: dict[str, Any]) -> dict[str, Any]:
    """A roofline point: cost, measured time, achieved FLOP/s, the prediction and the ratio."""
    c = cost(workload, params, dtype, backend)
    pred, bound = predict(c["flops"], c["bytes"], peak_flops(peaks, dtype), peaks["bandwidth"]["bytes_per_s"])
    pt: dict[str, Any] = {"workload": workload, "backend": backend, "params": dict(params), "dtype": dtype,
                          **c, "predicted_s": pred, "bound": bound}
    pt.update({k: timing.get(k) for k in ("median_s", "p10_s", "p90_s", "n", "first_s", "error")})
    if timing.get("median_s"):
        pt["achieved"] = c["flops"] / timing["median_s"]
        pt["ratio"] = timing["median_s"] / pred
    pt["why"] = explain(pt)
    return pt


def explain(pt: dict[str, Any]) -> str:
    """Why measured and predicted differ (one short phrase for the figure)."""
    r = pt.get("ratio")
    if r is None:
        return pt.get("error") or "not measured"
    if r < 0.7:
        return "faster than the model: the data stayed in cache"
    if r <= 2.0:
        return f"near the {pt['bound']} roof"
    if pt.get("median_s", 1) < 50e-6 or pt["predicted_s"] < 10e-6:
        return "fixed per-call overhead (dispatch, launches) dominates"
    w, fused = pt["workload"], is_fused(pt["backend"])
    if w in ("chain", "complex_activation"):
        return ("tanh/exp/sin cost many FLOPs each; the model counts 1" if fused
                else "per-op passes + transcendental math")
    if w == "mlp_block":
        return "LayerNorm reductions and GELU run far below the GEMM peak"
    if w == "two_matmuls":
        return "GEMMs this small run below the big-GEMM peak"
    return "below both roofs"


# =======================================================================================
# Running the workloads (fresh compiled copies: this part's own Dynamo cache)
# =======================================================================================
_COMPILED: dict[tuple[str, str | None], Callable] = kept("topics.roofline._COMPILED", {})
_SEEN: set[tuple] = kept("topics.roofline._SEEN", set())


def compiled_fn(workload: str, mode: str | None = None) -> Callable:
    key = (workload, mode)
    if key not in _COMPILED:
        torch = require_torch()
        tag = "part3_" + (mode or "default").replace("-", "_")
        kwargs = {"mode": mode} if mode else {}
        _COMPILED[key] = torch.compile(fresh_function(get_workload(workload).torch_fn, tag), **kwargs)
    return _COMPILED[key]


def runner(workload: str, backend: str, params: dict, dtype: str, mode: str | None = None):
    """(zero-arg fn, sync, resolved params) for one form of a workload."""
    if backend == "torch_compile":
        prep = prepare(workload, "torch_eager", params, dtype)
        f, args = compiled_fn(workload, mode), prep.args
        if mode == "reduce-overhead" and prep.device.startswith("cuda"):
            torch = require_torch()

            def graphed():  # each call is a new CUDA-graph generation (outputs of the last may be dropped)
                torch.compiler.cudagraph_mark_step_begin()
                return f(*args)

            return graphed, prep.sync, prep.params
        return (lambda: f(*args)), prep.sync, prep.params
    prep = prepare(workload, backend, params, dtype)
    return prep.fn, prep.sync, prep.params


def measure_one(workload: str, backend: str, params: dict, dtype: str = "float32", budget_s: float = 0.05,
                mode: str | None = None, min_samples: int = 3, max_samples: int | None = None) -> dict[str, Any]:
    """Median/p10/p90 seconds per call of one form (first call, which compiles, kept apart).

    Live budgets (≤ 0.1 s) take at most 12 samples: on a loaded machine one call can be many
    times slower than the estimate ``measure`` sizes its loop by, and a redraw must stay quick."""
    if max_samples is None:
        max_samples = 12 if budget_s <= 0.1 else 200
    try:
        fn, sync, p = runner(workload, backend, params, dtype, mode)
        key = (workload, backend, tuple(sorted(p.items())), dtype, mode)
        first = None
        if key not in _SEEN:  # the call that compiles (or allocates) is timed apart, once
            first, _ = first_call(fn, sync)
            _SEEN.add(key)
        t = measure(fn, sync, warmup=0, budget_s=budget_s, min_samples=min_samples,
                    max_samples=max(max_samples, min_samples))
    except DemoError:
        raise
    except Exception as exc:
        _raise_oom(exc, workload, params, dtype)
        raise
    return {"median_s": t.median, "p10_s": t.p10, "p90_s": t.p90, "n": t.n, "first_s": first, "params": p}


def measure_forms(workload: str, backends: tuple[str, ...], params: dict, dtype: str = "float32",
                  budget_s: float = 0.05, mode: str | None = None, min_samples: int = 3,
                  progress: Callable[[str], None] | None = None) -> dict[str, dict[str, Any]]:
    """Every available form of one workload timed interleaved (:func:`measure_interleaved`): each
    form's first call (compile, first allocations) is timed apart, then one sample of each form
    per round, so a busy spell of the machine falls on eager, compiled and jax.jit alike."""
    rows: dict[str, dict[str, Any]] = {}
    forms: dict[str, tuple] = {}
    firsts: dict[str, float | None] = {}
    resolved = params
    for b in backends:
        why = _unavailable(b)
        if why:
            rows[b] = {"error": why}
            continue
        if progress:
            progress(b)
        try:
            fn, sync, resolved = runner(workload, b, params, dtype, mode)
            key = (workload, b, tuple(sorted(resolved.items())), dtype, mode)
            firsts[b] = None
            if key not in _SEEN:  # the call that compiles (or allocates) is timed apart, once
                firsts[b], _ = first_call(fn, sync)
                _SEEN.add(key)
        except DemoError:
            raise
        except Exception as exc:
            _raise_oom(exc, workload, params, dtype)
            raise
        forms[b] = (fn, sync)
    if forms:
        max_samples = 12 if budget_s <= 0.1 else 200
        try:
            timings = measure_interleaved(forms, warmup=0, budget_s=budget_s * len(forms),
                                          min_samples=min_samples, max_samples=max(max_samples, min_samples))
        except DemoError:
            raise
        except Exception as exc:
            _raise_oom(exc, workload, params, dtype)
            raise
        for b, t in timings.items():
            rows[b] = {"median_s": t.median, "p10_s": t.p10, "p90_s": t.p90, "n": t.n, "first_s": firsts[b],
                       "params": resolved}
    return {b: rows[b] for b in backends}


def _raise_oom(exc: BaseException, workload: str, params: dict, dtype: str) -> None:
    if is_oom(exc):
        release_memory()
        sizes = ", ".join(f"{k}={v:,}" for k, v in params.items())
        raise DemoError(f"out of memory at {workload} {sizes} ({dtype}) — pick a smaller size") from None


def _unavailable(backend: str) -> str | None:
    if not available(backend):
        return "JAX is not installed here"
    if backend.startswith("jax") and not jax_same_device():
        return "JAX sees no GPU here (pip install 'jax[cuda12]')"
    return None


def check_dtype_here(dtype: str) -> str:
    if dtype not in DTYPES:
        raise unknown_name("dtype", dtype, DTYPES)
    check_dtype(dtype)
    return dtype


def dtype_options() -> list[str]:
    return [d for d in DTYPES if dtype_supported(d)[0]]


def _points(workloads, backends, scale: float, dtype: str, budget_s: float, progress: Progress | None,
            start: float = 0.0) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The peaks, and a roofline point per workload × backend at the size control's scale."""
    check_dtype_here(dtype)
    sizes = scaled_sizes(scale)
    pk = peaks((dtype,), progress=progress)
    points = []
    for i, w in enumerate(workloads):
        def said(b: str, i=i, w=w) -> None:
            if progress:
                progress(start + (1 - start) * i / len(workloads), f"{w} · {plots.label(b)}")

        params = get_workload(w).resolve(workload_params(w, sizes))
        rows = measure_forms(w, tuple(backends), params, dtype, budget_s, progress=said)
        points.extend(make_point(w, b, params, dtype, rows[b], pk) for b in backends)
    return pk, points


def _compile(workloads, size_sets, backends=BACKENDS3, mode: str | None = None) -> None:
    """`make warm`: call every form once at each set of sizes, in every dtype here (compiles)."""
    done = set()
    for dt in dtype_options():
        for sizes in size_sets:
            for w in workloads:
                params = get_workload(w).resolve(workload_params(w, sizes))
                if (w, tuple(sorted(params.items())), dt) in done:
                    continue
                done.add((w, tuple(sorted(params.items())), dt))
                for b in backends:
                    if _unavailable(b) is None:
                        fn, sync, _ = runner(w, b, params, dt, mode)
                        sync(fn())


# =======================================================================================
# Sizes
# =======================================================================================
def payoff_defaults(kind: str | None = None) -> dict[str, int]:
    """Panel sizes: N (chain length), T (rows of X / tokens B·S), D (model dim), H (hidden)."""
    if (kind or device_kind()) == "gpu":
        # N: at 2^23 an H100's compiled chain (a ~12 µs kernel) read 96–152 µs of host time per
        # call, so "compiling pays" hung on the host; at 2^25 the kernel's bytes dominate again
        return {"N": 2**25, "T": 8192, "D": 1024, "H": 2048, "S": 1024}
    return {"N": 2**20, "T": 256, "D": 512, "H": 1024, "S": 128}


def workload_params(workload: str, sizes: dict[str, int], kind: str | None = None) -> dict[str, int]:
    """One set of panel sizes mapped onto a workload's parameters."""
    d = {**payoff_defaults(kind), **{k: int(v) for k, v in sizes.items()}}
    if workload in ("chain", "complex_activation"):
        return {"N": d["N"]}
    if workload == "two_matmuls":
        return {"B": d["T"], "D": d["D"], "H": d["H"]}
    if workload == "mlp_block":
        S = max(1, min(d["T"], d["S"]))
        return {"B": max(1, d["T"] // S), "S": S, "D": d["D"], "H": d["H"]}
    raise DemoError(f"workload {workload!r} is not part of this demo; valid: {', '.join(ROOF_WORKLOADS)}")


def scaled_sizes(scale: float, kind: str | None = None) -> dict[str, int]:
    """The default sizes with the 'size' control applied (N and T scale, D and H stay)."""
    if not (isinstance(scale, (int, float)) and scale > 0 and math.isfinite(scale)):
        raise DemoError(f"size scale must be a positive number, not {scale!r}")
    d = payoff_defaults(kind)
    return {"N": max(1024, int(d["N"] * scale)), "T": max(1, int(d["T"] * scale)), "D": d["D"], "H": d["H"],
            "S": d["S"]}


def _short(workload: str, params: dict) -> str:
    return ",".join(f"{k}={_pow(v)}" for k, v in params.items())


def _pow(v: int) -> str:
    if v >= 1024 and v & (v - 1) == 0:
        return f"2^{int(math.log2(v))}"
    return f"{v:,}"


def _dtype_control() -> Choice:
    return Choice("dtype", "float32", options=dtype_options())


def _lean(ax, which: str = "xy") -> None:
    """Fewer tick objects (matplotlib builds each one slowly): no minor ticks, ≤ 6 major ones.
    Keeps a redraw well inside the deck's 0.5 s budget on a 2-core CPU."""
    from matplotlib.ticker import LogLocator, MaxNLocator, NullLocator

    for axis in [a for n, a in (("x", ax.xaxis), ("y", ax.yaxis)) if n in which]:
        if axis.get_scale() == "log":
            axis.set_major_locator(LogLocator(base=axis._scale.base if hasattr(axis, "_scale") else 10,
                                              numticks=7))
        else:
            axis.set_major_locator(MaxNLocator(5))
        axis.set_minor_locator(NullLocator())


def _fmt_rate(x: float, unit: str) -> str:
    for f, p in ((1e12, "T"), (1e9, "G"), (1e6, "M")):
        if x >= f:
            return f"{x / f:.3g} {p}{unit}"
    return f"{x:.3g} {unit}"


def _ref_name(reference: dict[str, Any]) -> str:
    return reference.get("machine_short") or "recorded"


# =======================================================================================
# 1. Three workloads, three outcomes
# =======================================================================================
_PAYOFF_LAST: dict[str, tuple] = kept("topics.roofline._PAYOFF_LAST", {})  # workload -> (what it was measured at, its measurement)


def measure_payoff(N: int | None = None, T: int | None = None, D: int | None = None, H: int | None = None,
                   dtype: str = "float32", budget_s: float = 0.05, backends: tuple[str, ...] = BACKENDS3,
                   workloads: tuple[str, ...] = PAYOFF_WORKLOADS, progress: Progress | None = None) -> dict[str, Any]:
    """Latency of each workload × backend. A workload whose sizes, dtype and budget equal its last
    measurement's is taken from it: a slider re-measures only the workloads it changes."""
    check_dtype_here(dtype)
    sizes = {**payoff_defaults(), **{k: v for k, v in dict(N=N, T=T, D=D, H=H).items() if v is not None}}
    out: dict[str, Any] = {"dtype": dtype, "sizes": sizes, "backends": list(backends), "workloads": {},
                           "device": torch_device(),
                           "extra": f"{dtype} · " + ", ".join(f"{k}={_pow(sizes[k])}" for k in "NTDH")}
    total, done = len(workloads) * len(backends), 0
    for w in workloads:
        params = get_workload(w).resolve(workload_params(w, sizes))
        at = (params, dtype, budget_s, tuple(backends))
        last = _PAYOFF_LAST.get(w)
        if last is not None and last[0] == at:
            out["workloads"][w] = last[1]
            done += len(backends)
            continue
        def said(b: str, w=w) -> None:
            if progress:
                progress(done / total, f"{w} · {plots.label(b)}")

        rows = measure_forms(w, tuple(backends), params, dtype, budget_s, progress=said)
        for r in rows.values():
            r.pop("params", None)
        done += len(backends)
        out["workloads"][w] = {"params": params, "rows": rows}
        _PAYOFF_LAST[w] = (at, out["workloads"][w])
    return out


def speedup(rows: dict[str, Any], backend: str, base: str = "torch_eager") -> float | None:
    a, b = rows.get(base, {}), rows.get(backend, {})
    if a.get("median_s") and b.get("median_s"):
        return a["median_s"] / b["median_s"]
    return None


def _unit(seconds: float) -> tuple[float, str]:
    if seconds < 1e-3:
        return 1e6, "µs"
    if seconds < 1:
        return 1e3, "ms"
    return 1.0, "s"


def figure_payoff(data: dict[str, Any], reference: dict[str, Any] | None = None):
    """One panel per workload: bars per backend (median, p10–p90), speedups vs torch eager,
    the seed's A100 numbers and (if any) a recorded run's speedups written above."""
    names = list(data["workloads"])
    fig, axes = plots.figure(1, len(names))
    axes = [axes] if len(names) == 1 else list(axes)
    backends = data["backends"]
    for ax, w in zip(axes, names):
        wd = data["workloads"][w]
        rows = wd["rows"]
        meds = [rows.get(b, {}).get("median_s") for b in backends]
        top = max([r.get("p90_s") or 0 for r in rows.values()] + [m or 0 for m in meds]) or 1e-6
        scale, unit = _unit(top)
        for i, b in enumerate(backends):
            r = rows.get(b, {})
            if not r.get("median_s"):
                ax.text(i, 0, "n/a", ha="center", va="bottom", fontsize=12, color="#777")
                continue
            m = r["median_s"] * scale
            lo, hi = max(m - r["p10_s"] * scale, 0), max(r["p90_s"] * scale - m, 0)
            ax.bar(i, m, 0.7, color=plots.color(b), yerr=[[lo], [hi]], capsize=4,
                   label=plots.label(b) if w == names[0] else None)
            s = speedup(rows, b)
            if b != "torch_eager" and s is not None:
                ax.text(i, m + hi, f"{s:.2f}×", ha="center", va="bottom", fontsize=14, fontweight="bold")
        ax.set_xticks(range(len(backends)), [TICKS.get(b, b) for b in backends], fontsize=12.5)
        ax.set_ylabel(f"median per call ({unit})")
        ax.set_ylim(0, top * scale * 1.45)
        _lean(ax, "y")
        ax.grid(axis="x", visible=False)
        ax.set_title(f"{w}\n{_short(w, wd['params'])}", fontsize=14)
        lines = []
        seed = SEED.get(w)
        if seed:
            parts = [fmt_seconds(seed[b]).split(" ") for b in backends if b in seed]
            if len({u for _, u in parts}) == 1:  # one unit: "22.5 / 14.4 / 14.8 ms" fits the panel
                nums = [v.rstrip("0").rstrip(".") if "." in v else v for v, _ in parts]
                vals = " / ".join(nums) + f" {parts[0][1]}"
            else:
                vals = " / ".join(f"{v} {u}" for v, u in parts)
            lines.append(f"A100 (seed): {vals}")
        if reference is not None and w in reference.get("workloads", {}):
            rr = reference["workloads"][w]["rows"]
            sp = [speedup(rr, b) for b in backends if b != "torch_eager"]
            who = _ref_name(reference).split(" ")[0]  # "H100"; the stamp below names it in full
            lines.append(f"{who} (recorded): {' / '.join(f'{s:.2f}×' if s else '—' for s in sp)}")
        if lines:
            ax.text(0.02, 0.98, "\n".join(lines), transform=ax.transAxes, ha="left", va="top", fontsize=11.5,
                    color=plots.PALETTE["reference"])
    fig.legend(loc="outside upper center", ncols=len(backends), fontsize=12, frameon=False)
    plots.stamp_figure(fig, data, reference)
    return fig


def _payoff_controls(kind: str) -> list:
    d, gpu = payoff_defaults(kind), kind == "gpu"
    return [Pow2("N", d["N"], label="chain N", lo=12, hi=26 if gpu else 23),
            Pow2("T", d["T"], label="rows / tokens", lo=4, hi=16 if gpu else 11),
            Pow2("D", d["D"], label="model dim D", lo=6, hi=13 if gpu else 11),
            Pow2("H", d["H"], label="hidden H", lo=6, hi=14 if gpu else 12),
            _dtype_control()]


def _warm_payoff() -> None:
    """The defaults, the size control's scales (N and T) and D or H halved (a slider's neighbour)."""
    d = payoff_defaults()
    _compile(PAYOFF_WORKLOADS, [scaled_sizes(s) for s in WARM_SCALES]
             + [{**d, "D": d["D"] // 2}, {**d, "H": d["H"] // 2}])


def _compile_speedup(d: dict[str, Any], workload: str) -> float | None:
    return speedup(d["workloads"][workload]["rows"], "torch_compile")


# The speaker notes' bands. The chain's is also the roofline arrow's "up" (roofline_claims).
payoff_claims = Claims(
    Claim("chain: torch.compile more than {threshold:g}× faster than eager", lambda d: _compile_speedup(d, "chain"),
          ">", {"cpu": 1.5, "gpu": 2.0}, key="chain"),
    Claim("two_matmuls gain little from compiling (compiled ÷ eager time within {lo:g}–{hi:g})",
          lambda d: 1 / _compile_speedup(d, "two_matmuls"), "within", {"gpu": (0.7, 1.4)}, key="matmuls_band"),
    # a CPU's GEMM is the same library call either way; only "not much" is claimed there
    Claim("two_matmuls gain little from compiling (torch.compile under {threshold:g}× faster than eager)",
          lambda d: _compile_speedup(d, "two_matmuls"), "<", {"cpu": 3.0}, key="matmuls"),
)


payoff = Demo(
    "payoff", "Three workloads, three outcomes",
    controls=_payoff_controls, measure=measure_payoff, figure=figure_payoff, match=("dtype",),
    warm=_warm_payoff, record={"budget_s": 0.3}, record_quick={"budget_s": 0.1}, claims=payoff_claims,
)


# =======================================================================================
# 2. The roofline
# =======================================================================================
def measure_roofline(workload: str = "chain", scale: float = 1.0, dtype: str = "float32",
                     budget_s: float = 0.05, backends: tuple[str, ...] = BACKENDS3,
                     progress: Progress | None = None) -> dict[str, Any]:
    """The peaks plus the workload's points (eager costed unfused, compiled costed fused)."""
    if workload not in ROOF_WORKLOADS:
        raise unknown_name("workload", workload, ROOF_WORKLOADS)
    pk, points = _points((workload,), backends, scale, dtype, budget_s, progress, start=0.3)
    params = points[0]["params"]
    return {"peaks": peaks_for(pk, dtype), "workload": workload, "params": params, "dtype": dtype,
            "scale": scale, "points": points, "extra": f"{dtype} · {workload} {_short(workload, params)}"}


def _roof(ax, pk: dict[str, Any], dtype: str, xs, **kw) -> None:
    import numpy as np

    p, bw = peak_flops(pk, dtype), pk["bandwidth"]["bytes_per_s"]
    ax.plot(xs, np.minimum(p, xs * bw), **kw)


def figure_roofline(data: dict[str, Any], reference: dict[str, Any] | None = None):
    """Log-log roofline: measured roofs (solid), spec sheet (dashed, known GPUs), a recorded
    run's roofs (dotted, its own peaks) and its points for the same workload (hollow), and this
    workload's eager → compiled points."""
    import numpy as np

    pk, dtype = data["peaks"], data["dtype"]
    pts = [p for p in data["points"] if p.get("achieved")]
    fig, ax = plots.figure()
    p, bw = peak_flops(pk, dtype), pk["bandwidth"]["bytes_per_s"]
    spec = spec_sheet(pk.get("device_name"))
    ref_pk = (reference or {}).get("peaks")
    if not (ref_pk and dtype in ref_pk.get("compute", {})):
        ref_pk = None
    ref_pts = [q for q in reference.get("points", []) if q.get("achieved") and q.get("dtype") == dtype] \
        if ref_pk and reference.get("workload") == data["workload"] else []
    intens = [q["intensity"] for q in data["points"]] + [ridge(p, bw)]
    if spec and dtype in spec:
        intens.append(ridge(spec[dtype], spec["bandwidth"]))
    if ref_pk:
        intens.append(ridge(peak_flops(ref_pk, dtype), ref_pk["bandwidth"]["bytes_per_s"]))
    lo, hi = min(intens) / 4, max(intens) * 6
    xs = np.logspace(math.log10(lo), math.log10(hi), 60)
    where = "recorded" if data.get("recorded") else "this machine"
    _roof(ax, pk, dtype, xs, color=plots.PALETTE["floor"], lw=2.5,
          label=f"{where} (measured):\n{_fmt_rate(bw, 'B/s')} copy, {_fmt_rate(p, 'FLOP/s')} {dtype} GEMM")
    ax.axvline(ridge(p, bw), color=plots.PALETTE["floor"], lw=1, ls=":", alpha=0.6)
    if spec and dtype in spec:
        ax.plot(xs, np.minimum(spec[dtype], xs * spec["bandwidth"]), color=plots.PALETTE["accent"], lw=2, ls="--",
                label=f"{spec['name']} spec sheet:\n{_fmt_rate(spec['bandwidth'], 'B/s')}, "
                      f"{_fmt_rate(spec[dtype], 'FLOP/s')}")
    if ref_pk:
        _roof(ax, ref_pk, dtype, xs, color=plots.PALETTE["reference"], lw=1.5, ls=":",
              label=f"recorded{' (hollow points)' if ref_pts else ''}:\n{ref_pk.get('device_name', '?')[:30]}, "
                    f"{str(ref_pk.get('created', ''))[:10]}")
        for q in ref_pts:
            ax.scatter(q["intensity"], q["achieved"], s=70, marker=MARKERS.get(q["backend"], "o"),
                       facecolors="none", edgecolors=plots.color(q["backend"]), linewidths=1.5, zorder=3)
    for q in pts:
        ax.scatter(q["intensity"], q["achieved"], s=120, marker=MARKERS.get(q["backend"], "o"),
                   color=plots.color(q["backend"]), edgecolors="black", linewidths=0.6, zorder=4,
                   label=f"{plots.label(q['backend'])}: {fmt_seconds(q['median_s'])}")
    by = {q["backend"]: q for q in pts}
    if "torch_eager" in by and "torch_compile" in by:
        e, c = by["torch_eager"], by["torch_compile"]
        ax.annotate("", xy=(c["intensity"], c["achieved"]), xytext=(e["intensity"], e["achieved"]),
                    arrowprops=dict(arrowstyle="->", color=plots.color("torch_compile"), lw=1.8), zorder=3)
        ax.annotate(f"torch.compile: intensity ×{c['intensity'] / e['intensity']:.1f}, "
                    f"FLOP/s ×{c['achieved'] / e['achieved']:.1f}", xy=(c["intensity"], c["achieved"]),
                    xytext=(12, -26), textcoords="offset points", ha="left", fontsize=12.5,
                    color=plots.color("torch_compile"))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ys = [q["achieved"] for q in pts + ref_pts] + [p]
    if spec and dtype in spec:
        ys.append(spec[dtype])
    if ref_pk:
        ys.append(peak_flops(ref_pk, dtype))
    ax.set_ylim(min(min(ys) / 5, lo * bw), max(ys) * 3)
    _lean(ax)
    ax.set_xlabel("arithmetic intensity (FLOP / byte, analytic)")
    ax.set_ylabel("FLOP/s (achieved)")
    ax.set_title(f"{data['workload']} ({_short(data['workload'], data['params'])}, {dtype}) on the roofline", fontsize=15)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=11.5, frameon=False)
    plots.stamp_figure(fig, data, reference)
    return fig


SCALES = [("×1/16", 1 / 16), ("×1/4", 0.25), ("×1/2", 0.5), ("×1 (default)", 1.0), ("×2", 2.0), ("×4", 4.0)]


def _warm_roofline() -> None:
    peaks(dtype_options())
    _compile(ROOF_WORKLOADS, [scaled_sizes(s) for s in WARM_SCALES])


def _by_backend(d: dict[str, Any]) -> dict[str, dict]:
    return {p["backend"]: p for p in d["points"]}


def _moved_right(d: dict[str, Any]) -> int | None:
    """Compiled ÷ eager arithmetic intensity, rounded (None unless the FLOPs are the same)."""
    by = _by_backend(d)
    e, c = by["torch_eager"], by["torch_compile"]
    return round(c["intensity"] / e["intensity"]) if c["flops"] == e["flops"] else None


# The chain's eager → compiled arrow (the default workload); "up" is the payoff chain claim's speedup
roofline_claims = Claims(
    Claim("{d[workload]}: torch.compile moves the point ×{threshold} to the right (same FLOPs, 1/{threshold} of "
          "the bytes)", _moved_right, "==", 22, key="right"),
    Claim("{d[workload]}: and up, torch.compile reaches over {threshold:g}× eager's FLOP/s",
          lambda d: speedup(_by_backend(d), "torch_compile"), ">", payoff_claims["chain"].threshold, key="up"),
    Claim("the eager chain sits on the bandwidth slope (memory-bound)",
          lambda d: _by_backend(d)["torch_eager"]["bound"] == "memory", key="memory_bound"),
)


roofline = Demo(
    "roofline", "A measured roofline",
    controls=lambda kind: [Choice("scale", 1.0, label="size", options=SCALES),
                           Choice("workload", "chain", options=ROOF_WORKLOADS), _dtype_control()],
    measure=measure_roofline, figure=figure_roofline,
    # the recorded roofs are drawn beside any workload; its points only beside the same workload
    match=("dtype",), warm=_warm_roofline, record={"budget_s": 0.3}, record_quick={"budget_s": 0.1},
    claims=roofline_claims,
)


# =======================================================================================
# 3. Predicted vs measured
# =======================================================================================
def measure_predicted(scale: float = 1.0, dtype: str = "float32", budget_s: float = 0.05,
                      workloads: tuple[str, ...] = PAYOFF_WORKLOADS, backends: tuple[str, ...] = BACKENDS3,
                      progress: Progress | None = None) -> dict[str, Any]:
    pk, points = _points(workloads, backends, scale, dtype, budget_s, progress)
    shown = "; ".join(dict.fromkeys(f"{q['workload']} " + ",".join(_pow(v) for v in q["params"].values())
                                    for q in points))
    return {"peaks": peaks_for(pk, dtype), "dtype": dtype, "scale": scale, "points": points,
            "extra": f"{dtype} · {shown}"}


def figure_predicted(data: dict[str, Any], reference: dict[str, Any] | None = None):
    """One row per point: predicted (grey diamond) and measured (coloured marker) time on a log
    axis, joined by a line; measured ÷ predicted and the reason in the right-hand column."""
    pts = data["points"]
    fig, (ax, tx) = plots.figure(1, 2, width_ratios=[1.25, 1], sharey=True)
    ys = list(range(len(pts)))[::-1]
    times = [q["predicted_s"] for q in pts] + [q["median_s"] for q in pts if q.get("median_s")]
    lo, hi = min(times) / 3, max(times) * 3
    ref_label = f"recorded run, {_ref_name(reference)} (its sizes)" if reference is not None else ""
    for y, q in zip(ys, pts):
        ax.scatter(q["predicted_s"], y, marker="D", s=60, color=plots.PALETTE["reference"], zorder=3,
                   label="predicted" if y == ys[0] else None)
        if q.get("median_s"):
            ax.plot([q["predicted_s"], q["median_s"]], [y, y], color="#999", lw=1.2, zorder=2)
            ax.scatter(q["median_s"], y, s=80, color=plots.color(q["backend"]), zorder=4,
                       marker=MARKERS.get(q["backend"], "o"))
            tx.text(0.0, y, f"×{q['ratio']:.1f}", va="center", fontsize=12.5, fontweight="bold")
        else:
            tx.text(0.0, y, q.get("error") or "not measured", va="center", fontsize=12, color="#b00020")
        r = next((p for p in (reference or {}).get("points", []) if p["workload"] == q["workload"]
                  and p["backend"] == q["backend"] and p.get("median_s")), None)
        if r is not None:
            ax.scatter(r["median_s"], y, s=60, facecolors="none", edgecolors=plots.PALETTE["reference"], zorder=3,
                       label=ref_label if ref_label not in ax.get_legend_handles_labels()[1] else None)
            lo, hi = min(lo, r["median_s"] / 3), max(hi, r["median_s"] * 3)
    # the reasons: one per run of rows that share it (two backends often do), centred on the run
    runs: list[list] = []
    for y, q in zip(ys, pts):
        if q.get("median_s"):
            if runs and runs[-1][1] == q["why"] and runs[-1][0][-1] == y + 1:
                runs[-1][0].append(y)
            else:
                runs.append([[y], q["why"]])
    for yy, why in runs:
        tx.text(0.19, sum(yy) / len(yy), textwrap.fill(why, 46), va="center", fontsize=11.5, linespacing=1.0)
        if len(yy) > 1:  # a bracket: the reason holds for every row it spans
            tx.plot([0.17, 0.17], [min(yy) - 0.3, max(yy) + 0.3], color="#999999", lw=1.5)
    ax.set_yticks(ys, [f"{q['workload']} · {plots.label(q['backend'])}" for q in pts], fontsize=12)
    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(-0.6, len(pts) - 0.4)
    _lean(ax, "x")  # the y ticks are the rows: every one labelled
    ax.set_xlabel("seconds per call (log)")
    pk = data["peaks"]
    roofs = f"{_fmt_rate(pk['bandwidth']['bytes_per_s'], 'B/s')}, {_fmt_rate(peak_flops(pk, data['dtype']), 'FLOP/s')}"
    ax.set_title(f"◆ max(FLOPs÷peak, bytes÷bandwidth) vs measured\n({data['dtype']}; roofs {roofs})", fontsize=14)
    ax.grid(axis="y", visible=False)
    from matplotlib.lines import Line2D

    handles, labels = ax.get_legend_handles_labels()
    handles.insert(1, Line2D([], [], marker="o", ls="none", ms=8, color="#555555"))
    labels.insert(1, "measured median (backend's colour)")
    # above both panels: inside the left one, a recorded run's third entry squeezed its axes
    fig.legend(handles, labels, loc="outside upper left", ncols=len(labels), fontsize=11.5, frameon=False,
               columnspacing=1.0, handletextpad=0.3)
    tx.set_xlim(0, 1)
    tx.axis("off")
    tx.set_title("measured ÷ predicted, and why", fontsize=14)
    plots.stamp_figure(fig, data, reference)
    return fig


PREDICTED_SCALES = [("×1/64", 1 / 64), ("×1/16", 1 / 16), ("×1/4", 0.25), ("×1 (default)", 1.0), ("×4", 4.0)]


def _warm_predicted() -> None:
    """The default and the size control's neighbour (×1/4); other sizes compile on Run."""
    peaks(dtype_options())
    _compile(PAYOFF_WORKLOADS, [scaled_sizes(1.0), scaled_sizes(0.25)])


def _p10_ratios(d: dict[str, Any]) -> dict[tuple[str, str], float]:
    """Best-decile time ÷ prediction per (workload, backend). Best deciles: load only slows a run
    down, so it cannot push a point towards its roof."""
    return {(p["workload"], p["backend"]): p["p10_s"] / p["predicted_s"] for p in d["points"] if p.get("p10_s")}


# GEMMs near the compute roof; on a CPU the compiled chain well above it (costly math)
predicted_claims = Claims(
    Claim("big GEMMs sit near the compute roof: two_matmuls' best form within {threshold:g}× of its prediction",
          lambda d: min(r for (w, _), r in _p10_ratios(d).items() if w == "two_matmuls"), "<=", 4.0, key="gemm"),
    Claim("tanh/exp/sin cost many FLOPs, the model counts 1: the compiled chain over {threshold:g}× its prediction",
          lambda d: _p10_ratios(d)[("chain", "torch_compile")], ">", {"cpu": 2.0}, key="chain"),
)


predicted = Demo(
    "predicted", "Predicted vs measured",
    controls=lambda kind: [Choice("scale", 1.0, label="size", options=PREDICTED_SCALES), _dtype_control()],
    measure=measure_predicted, figure=figure_predicted, run_button=True, opens="kept", match=("dtype",),
    warm=_warm_predicted, record={"budget_s": 0.3}, record_quick={"budget_s": 0.1}, claims=predicted_claims,
)


# =======================================================================================
# 4. Overheads removed differently: reduce-overhead (CUDA graphs) vs default
# =======================================================================================
OVERHEAD_MODES = ("eager", "default", "reduce-overhead")
MODE_COLORS = {"eager": plots.PALETTE["torch_eager"], "default": plots.PALETTE["torch_compile"],
               "reduce-overhead": "#56B4E9"}
MODE_LABELS = {"eager": "torch eager", "default": "torch.compile (default)",
               "reduce-overhead": 'torch.compile(mode="reduce-overhead")'}


def overhead_sizes(kind: str | None = None, largest: int | None = None) -> list[int]:
    """Sizes of the sweep: every second power of two from the smallest up to ``largest``."""
    lo, hi = (10, 22) if (kind or device_kind()) == "gpu" else (8, 18)
    if largest is not None:
        hi = int(math.log2(largest))
    if hi < lo:
        raise DemoError(f"largest N must be at least 2^{lo}")
    return [2**k for k in range(lo, hi + 1, 2)]


def measure_overheads(largest: int | None = None, dtype: str = "float32", budget_s: float = 0.04,
                      workload: str = "complex_activation", sizes: list[int] | None = None,
                      progress: Progress | None = None) -> dict[str, Any]:
    """Latency vs size of eager, default compile and reduce-overhead compile at small sizes
    (where fixed per-call costs dominate): the sweep ``overhead_sizes(largest)``, or ``sizes``."""
    check_dtype_here(dtype)
    sizes = [int(n) for n in (sizes or overhead_sizes(largest=largest))]
    rows: dict[str, list] = {m: [] for m in OVERHEAD_MODES}
    todo, k = len(sizes) * len(OVERHEAD_MODES), 0
    # sizes outer, modes inner: a burst of load on a shared machine hits every mode alike
    for n in sizes:
        for mode in OVERHEAD_MODES:
            if progress:
                progress(k / todo, f"{MODE_LABELS[mode]} · N={_pow(n)}")
            b = "torch_eager" if mode == "eager" else "torch_compile"
            r = measure_one(workload, b, {"N": n}, dtype, budget_s, mode=None if mode in ("eager", "default") else mode,
                            min_samples=5)
            r.pop("params", None)
            rows[mode].append(r)
            k += 1
    return {"workload": workload, "dtype": dtype, "sizes": sizes, "device": torch_device(), "modes": rows,
            "extra": f"{dtype} · {workload} N={_pow(sizes[0])}…{_pow(sizes[-1])}"}


def overhead_floor(data: dict[str, Any], mode: str) -> float:
    """The smallest size's median: the fixed cost per call of that mode."""
    return data["modes"][mode][0]["median_s"]


def figure_overheads(data: dict[str, Any], reference: dict[str, Any] | None = None):
    fig, ax = plots.figure()
    sizes = data["sizes"]
    for mode, rows in data["modes"].items():
        ls = "--" if mode == "reduce-overhead" else "-"
        ax.plot(sizes, [r["median_s"] * 1e6 for r in rows], ls, marker="o", color=MODE_COLORS[mode], lw=2.2,
                label=f"{MODE_LABELS[mode]}: floor {fmt_seconds(rows[0]['median_s'])}")
        ax.fill_between(sizes, [r["p10_s"] * 1e6 for r in rows], [r["p90_s"] * 1e6 for r in rows],
                        color=MODE_COLORS[mode], alpha=0.12, lw=0)
    if reference is not None and reference.get("modes"):
        for mode, rows in reference["modes"].items():
            ax.plot(reference["sizes"], [r["median_s"] * 1e6 for r in rows], ":", color=MODE_COLORS.get(mode, "#777"),
                    lw=1.5, alpha=0.8)
        ax.text(0.99, 0.02, f"dotted: recorded on {_ref_name(reference)}", transform=ax.transAxes,
                ha="right", va="bottom", fontsize=11.5, color=plots.PALETTE["reference"])
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    _lean(ax)
    ax.set_xlabel(f"N (elements of x and y), {data['workload']}")
    ax.set_ylabel("median per call (µs)")
    if data["device"] == "cuda":
        note = ("GPU: fusion already left one launch per call, so a CUDA graph has nothing to batch; "
                "its replay and checks cost about as much as the launch they replace, or more")
    else:
        note = ("CPU: no kernel launches to batch, so reduce-overhead has nothing to remove "
                "(CUDA graphs need a GPU); both compiled modes run the same C++")
    ax.set_title(textwrap.fill(note, 95), fontsize=13)
    ax.legend(loc="upper left", fontsize=12)
    plots.stamp_figure(fig, data, reference)
    return fig


def _warm_overheads() -> None:
    for mode in (None, "reduce-overhead"):
        _compile(("complex_activation",), [{"N": n} for n in overhead_sizes()], ("torch_compile",), mode)


def _ro_ratios(d: dict[str, Any]) -> list[float]:
    """reduce-overhead ÷ default best-decile time at each N, smallest first."""
    return [a["p10_s"] / b["p10_s"] for a, b in zip(d["modes"]["reduce-overhead"], d["modes"]["default"])]


overheads_claims = Claims(
    # One fused kernel leaves one launch per call: a CUDA graph replaces it with one replay plus the
    # graph tree's own checks. An H100 (assets/results) read 168 µs against the default's 75 µs.
    Claim("one fused kernel, nothing to batch: reduce-overhead's floor is not below {threshold:g}× the default's",
          lambda d: _ro_ratios(d)[0], ">=", {"gpu": 0.9}, key="floor"),
    Claim("no launches to replay: reduce-overhead within {lo:g}–{hi:g}× of the default mode (median over N)",
          lambda d: statistics.median(_ro_ratios(d)), "within", {"cpu": (0.5, 2.0)}, key="same"),
)


overheads = Demo(
    "overheads", "Overheads removed differently",
    controls=lambda kind: [Pow2("largest", 2**(22 if kind == "gpu" else 18), label="largest N",
                                lo=10 if kind == "gpu" else 8, hi=22 if kind == "gpu" else 18),
                           _dtype_control()],
    measure=measure_overheads, figure=figure_overheads, run_button=True, opens="kept", match=("dtype",),
    warm=_warm_overheads, record={"budget_s": 0.3}, record_quick={"budget_s": 0.1}, claims=overheads_claims,
)