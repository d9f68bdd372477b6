"""This machine's roofs, the spec-sheet roofs of known GPUs, the roofline model, and the
measured points: a workload's forms (eager, compiled, jax.jit) timed side by side.

Peaks are best-decile throughputs (bytes or FLOPs ÷ the 10th-percentile time): contention on a
shared machine only ever slows a run down. :func:`bandwidth` and :func:`peaks` measure once per
process and device, so every demo that draws a roof or a bandwidth line uses the same numbers
(a measurement stores the ones it used: a recorded run carries its own machine's roofs);
``measure_*`` measure afresh.

Cost model (:mod:`demos.engine.workloads`): eager forms pay every op's reads and writes,
compiled forms (torch.compile, jax.jit) read inputs once and write outputs once.
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterable, Iterator

from demos.engine.devices import device_kind, device_name, dtype_supported, jax_backend, jax_or_none, \
    require_torch, set_threads, torch_device
from demos.engine.convert import to_jax
from demos.engine.errors import DemoError, is_oom, release_memory
from demos.engine.timing import measure, sync_jax, sync_torch
from demos.engine.workload_defs import get as get_workload
from demos.engine.workloads import available, prepare
from demos.engine.measurement import Run, quiet
from demos.engine.protocol import engine_cache

Progress = Callable[[float, str], None]
FUSED = frozenset({"torch_compile", "jax_jit"})

# Spec-sheet peaks (NVIDIA H200/H100/A100 datasheets; dense, no structured sparsity). FP32 is the
# non-tensor-core rate, which full-precision fp32 matmuls get (the deck disables TF32 in both
# frameworks). Rows: name, keywords all found in the device name, bandwidth, fp32, bf16 (= fp16),
# L2 cache (the whitepapers: 50 MB on the GH100 parts, 40 MB on the A100; torch's
# L2_cache_size reads 50 MiB on an H100).
SPEC_SHEETS: tuple[dict[str, Any], ...] = tuple(
    {"name": n, "match": m, "bandwidth": bw, "float32": f32, "bfloat16": b16, "float16": b16, "l2": l2}
    for n, m, bw, f32, b16, l2 in (("H200 SXM", ("h200",), 4.8e12, 67e12, 989e12, 50 * 2**20),
                                   ("H100 PCIe", ("h100", "pcie"), 2.0e12, 51e12, 756e12, 50 * 2**20),
                                   ("H100 SXM", ("h100",), 3.35e12, 67e12, 989e12, 50 * 2**20),
                                   ("A100 40GB", ("a100", "40gb"), 1.555e12, 19.5e12, 312e12, 40 * 2**20),
                                   ("A100 80GB SXM", ("a100",), 2.039e12, 19.5e12, 312e12, 40 * 2**20)))


def recorded_caches(machine: dict[str, Any]) -> dict[str, Any] | None:
    """The cache levels of a recorded machine that did not store them (records made before
    measurements carried ``caches``): a known GPU's L2 from its spec sheet; None otherwise."""
    spec = spec_sheet(machine.get("device_name"))
    if machine.get("device") in (None, "cpu") or spec is None:
        return None
    return {"device": "GPU", "levels": {"L2": spec["l2"]}, "source": f"{spec['name']} spec sheet"}


def spec_sheet(name: str | None) -> dict[str, Any] | None:
    """The spec-sheet entry whose keywords all occur in a device name, or None."""
    low = (name or "").lower().replace("-", " ").replace("_", " ")
    squashed = low.replace(" ", "")
    for spec in SPEC_SHEETS:
        if all(k in low or k in squashed for k in spec["match"]):
            return spec
    return None


def inferred_fp32_matmul(machine: dict[str, Any], peaks: dict[str, Any] | None) -> str | None:
    """For a GPU record made before records said so: whether its float32 matmuls ran in full
    fp32, read from its measured fp32 GEMM rate. At or under the spec sheet's non-tensor-core
    fp32 peak (×1.1 for a sheet's rounding) they did: TF32 would have run them several times
    faster. None where it cannot tell."""
    spec = spec_sheet(machine.get("device_name"))
    rate = ((peaks or {}).get("compute", {}).get("float32") or {}).get("flops_per_s")
    if machine.get("device") == "cpu" or spec is None or not rate:
        return None
    if rate <= 1.1 * spec["float32"]:
        return f"no TF32 (its fp32 GEMM: {rate / 1e12:.0f} TFLOP/s)"
    return None


def machine_with_precision(record) -> dict[str, Any]:
    """A record's machine, saying how its fp32 matmuls ran (read from its GEMM peak, by
    :func:`inferred_fp32_matmul`, where an older record does not say)."""
    machine = dict(record.machine)
    if "fp32_matmul" not in machine:
        peaks = record.sections.get("roofline", {}).get("roofline", {}).get("peaks")
        machine["fp32_matmul"] = inferred_fp32_matmul(machine, peaks)
    return machine


# =======================================================================================
# The roofline model
# =======================================================================================
def is_fused(backend: str) -> bool:
    """Compiled forms are costed as fused (intermediates never touch memory)."""
    return backend in FUSED


def attainable(intensity: float, peak_flops: float, bandwidth: float) -> float:
    """The roof: min(peak FLOP/s, intensity × bandwidth)."""
    return min(peak_flops, intensity * bandwidth)


def ridge(peak_flops: float, bandwidth: float) -> float:
    """Intensity (FLOP/byte) where the bandwidth slope meets the compute roof."""
    return peak_flops / bandwidth


def predict(flops: float, nbytes: float, peak_flops: float, bandwidth: float) -> tuple[float, str]:
    """Roofline time: max(FLOPs ÷ peak, bytes ÷ bandwidth), and which roof binds."""
    t_compute, t_memory = flops / peak_flops, nbytes / bandwidth
    return (t_compute, "compute") if t_compute >= t_memory else (t_memory, "memory")


def cost(workload: str, params: dict, dtype: str, backend: str) -> dict[str, float]:
    """Analytic FLOPs, bytes and intensity of one form (fused for compiled backends)."""
    w = get_workload(workload)
    flops, nbytes = w.flops(params, is_fused(backend)), w.bytes(params, dtype, is_fused(backend))
    return {"flops": flops, "bytes": nbytes, "intensity": flops / nbytes}


# =======================================================================================
# Measuring the peaks
# =======================================================================================
_BANDWIDTH: dict[tuple[str, int | None], dict[str, Any]] = engine_cache("engine.peaks._BANDWIDTH", {})  # (device, threads) -> measure_bandwidth()
_PEAKS: dict[str, dict[str, Any]] = engine_cache("engine.peaks._PEAKS", {})                         # device -> bandwidth + GEMM peak per dtype


@contextlib.contextmanager
def torch_threads(n: int | None) -> Iterator[int]:
    """Run the block with ``n`` torch intra-op threads (None: the deck's setting), then restore."""
    torch = require_torch()
    deck = set_threads()
    want = int(n) if n else deck
    torch.set_num_threads(want)
    try:
        yield want
    finally:
        torch.set_num_threads(deck)


def copy_elems(kind: str | None = None) -> int:
    """float32 elements per copy buffer: well beyond the last-level cache."""
    return 2**25 if (kind or device_kind()) == "cpu" else 2**28  # 128 MiB / 1 GiB


def gemm_size(kind: str | None = None) -> int:
    return 1024 if (kind or device_kind()) == "cpu" else 8192


def measure_bandwidth(elems: int | None = None, budget_s: float = 0.3, threads: int | None = None) -> dict[str, Any]:
    """Copy bandwidth: bytes read + written by ``dst.copy_(src)`` ÷ time (best decile), with
    ``threads`` torch threads (None: the deck's setting)."""
    torch = require_torch()
    from demos.engine.devices import free_memory_bytes

    dev = torch_device()
    elems = int(elems or copy_elems())
    free = free_memory_bytes(dev)
    while free is not None and elems > 2**20 and 2 * elems * 4 > 0.4 * free:
        elems //= 2
    src = torch.ones(elems, device=dev)
    dst = torch.empty_like(src)
    with torch_threads(threads):
        t = measure(lambda: dst.copy_(src), sync_torch(dev), warmup=2, budget_s=budget_s, min_samples=7)
    moved = 2 * elems * 4
    del src, dst
    return {"bytes_per_s": moved / t.p10, "median_bytes_per_s": moved / t.median, "buffer_bytes": elems * 4,
            "moved_bytes": moved, "n": t.n, "threads": threads,
            "method": f"torch copy_ of a {elems * 4 / 2**20:.0f} MiB buffer (read + write), best decile"}


def jax_same_device() -> bool:
    """JAX measures the same hardware as torch (not JAX-on-CPU beside a torch GPU)."""
    jb = jax_backend()
    return jb is not None and ((jb == "cpu") == (torch_device() == "cpu"))


def _mm(a, b):
    return a @ b


def measure_gemm(dtype: str = "float32", n: int | None = None, budget_s: float = 0.3) -> dict[str, Any]:
    """Best GEMM throughput for ``dtype``: 2n³ FLOPs ÷ time (best decile), torch and JAX; the
    faster framework sets the compute roof (both run on the same hardware)."""
    torch = require_torch()
    ok, why = dtype_supported(dtype)
    if not ok:
        raise DemoError(why)
    dev = torch_device()
    set_threads()
    n = int(n or gemm_size())
    flops = 2.0 * n**3
    rates, medians = {}, {}
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(n, n, generator=gen).to(device=dev, dtype=getattr(torch, dtype))
    b = torch.randn(n, n, generator=gen).to(device=dev, dtype=getattr(torch, dtype))
    t = measure(lambda: a @ b, sync_torch(dev), warmup=1, budget_s=budget_s, min_samples=5)
    rates["torch"], medians["torch"] = flops / t.p10, flops / t.median
    if jax_or_none() is not None and jax_same_device():
        from demos.engine.workloads import jitted

        ja, jb = to_jax(a, dtype), to_jax(b, dtype)
        f = jitted(_mm)
        t = measure(lambda: f(ja, jb), sync_jax(), warmup=1, budget_s=budget_s, min_samples=5)
        rates["jax"], medians["jax"] = flops / t.p10, flops / t.median
    del a, b
    best = max(rates, key=rates.get)
    return {"flops_per_s": rates[best], "by_framework": rates, "median_by_framework": medians, "n": n,
            "best": best, "method": f"{n}×{n} @ {n}×{n} GEMM, best decile of torch and JAX"}


def _entry(bw: dict[str, Any]) -> dict[str, Any]:
    from demos.engine.results import now_iso

    return {"device": torch_device(), "device_name": device_name(), "created": now_iso(), "bandwidth": bw,
            "compute": {}}


def _add_gemms(pk: dict[str, Any], dtypes, budget_s: float, progress: Progress) -> dict[str, Any]:
    for i, dt in enumerate(dtypes):
        if dt not in pk["compute"]:
            progress(0.3 + 0.6 * i / max(len(dtypes), 1), f"measuring {dt} GEMM peak…")
            pk["compute"][dt] = measure_gemm(dt, budget_s=budget_s)
    return pk


def measure_peaks(dtypes: tuple[str, ...] | list[str] = ("float32",), budget_s: float = 0.3,
                  progress: Progress | None = None) -> dict[str, Any]:
    """This machine's roofs, measured now: copy bandwidth and a GEMM peak per dtype."""
    progress = progress or quiet
    progress(0.05, "measuring copy bandwidth…")
    return _add_gemms(_entry(measure_bandwidth(budget_s=budget_s)), dtypes, budget_s, progress)


def bandwidth(threads: int | None = None, refresh: bool = False) -> dict[str, Any]:
    """Copy bandwidth of this device with ``threads`` torch threads, measured once per process."""
    threads = threads or set_threads()  # None: the thread policy in force (the roofline's measurement)
    key = (torch_device(), threads)
    if refresh or key not in _BANDWIDTH:
        _BANDWIDTH[key] = measure_bandwidth(threads=threads)
    return _BANDWIDTH[key]


def peaks(dtypes: tuple[str, ...] | list[str] = ("float32",), refresh: bool = False,
          progress: Progress | None = None) -> dict[str, Any]:
    """This device's roofs, each measured once per process: :func:`bandwidth` and a GEMM peak
    per dtype (shared by every demo that draws them)."""
    progress = progress or quiet
    dev, threads = torch_device(), set_threads()
    key = f"{dev}:{threads}"   # the roofs of the thread policy in force
    if refresh:
        _PEAKS.pop(key, None)
        _BANDWIDTH.pop((dev, threads), None)
    if key not in _PEAKS:
        if (dev, threads) not in _BANDWIDTH:
            progress(0.05, "measuring copy bandwidth…")
        _PEAKS[key] = _entry(bandwidth(threads))
    return _add_gemms(_PEAKS[key], dtypes, 0.3, progress)


def clear_peaks() -> None:
    _PEAKS.clear()
    _BANDWIDTH.clear()


def peak_flops(pk: dict[str, Any], dtype: str) -> float:
    try:
        return pk["compute"][dtype]["flops_per_s"]
    except KeyError:
        raise DemoError(f"no {dtype} GEMM peak measured for {pk.get('device_name', 'this device')}") from None


def peaks_for(pk: dict[str, Any], dtype: str) -> dict[str, Any]:
    """A JSON-able copy of the peaks with just the dtype a figure needs (stored in the measurement)."""
    return {"device": pk["device"], "device_name": pk["device_name"], "created": pk.get("created", ""),
            "bandwidth": dict(pk["bandwidth"]), "compute": {dtype: dict(pk["compute"][dtype])}}


# =======================================================================================
# The measured points: a workload's forms timed side by side (part 3's demos)
# =======================================================================================
def compiled_copy(run: Run, workload: str, mode: str | None = None) -> Callable:
    """``torch.compile`` of a fresh copy of the workload (``<fn>_part3_<mode>``), one per (workload,
    mode) in the demo's cache (``run.cache``): its own Dynamo cache and recompile budget, never
    another part's (the persistent Inductor cache is shared)."""
    tag = "part3_" + (mode or "default").replace("-", "_")
    options = {"mode": mode} if mode else {}
    return run.cached(("compiled", workload, mode),
                    lambda: run.compile(get_workload(workload).torch_fn, tag, **options))


def form_runner(run: Run, workload: str, backend: str, params: dict, dtype: str, mode: str | None = None):
    """(zero-arg fn, sync, resolved params) for one form of a workload."""
    if backend == "torch_compile":
        prep = prepare(workload, "torch_eager", params, dtype)
        f, args = compiled_copy(run, workload, mode), prep.args
        if mode == "reduce-overhead" and prep.device.startswith("cuda"):
            torch = require_torch()

            def graphed():  # each call is a new CUDA-graph generation (outputs of the last may be dropped)
                torch.compiler.cudagraph_mark_step_begin()
                return f(*args)

            return graphed, prep.sync, prep.params
        return (lambda: f(*args)), prep.sync, prep.params
    prep = prepare(workload, backend, params, dtype)
    return prep.fn, prep.sync, prep.params


def form_unavailable(backend: str) -> str | None:
    """Why this form cannot be measured here, in one line (None: it can)."""
    if not available(backend):
        return "JAX is not installed here"
    if backend.startswith("jax") and not jax_same_device():
        return "JAX sees no GPU here (pip install 'jax[cuda12]')"
    return None


def compile_forms(forms: Iterable[tuple[str, dict]], dtypes: Iterable[str], backends: tuple[str, ...],
                  mode: str | None = None) -> None:
    """`make warm`: call each form of each (workload, params) once in each dtype (it compiles; the
    persistent caches keep it)."""
    run, forms = Run(), list(forms)
    for dt in dtypes:
        for w, params in dict.fromkeys((w, tuple(sorted(get_workload(w).resolve(p).items()))) for w, p in forms):
            for b in backends:
                if form_unavailable(b) is None:
                    fn, sync, _ = form_runner(run, w, b, dict(params), dt, mode)
                    sync(fn())


@contextlib.contextmanager
def oom_is_one_line(workload: str, params: dict, dtype: str) -> Iterator[None]:
    """An out-of-memory error inside becomes one line naming the workload's sizes (memory released)."""
    try:
        yield
    except DemoError:
        raise
    except Exception as exc:
        if is_oom(exc):
            release_memory()
            sizes = ", ".join(f"{k}={v:,}" for k, v in params.items())
            raise DemoError(f"out of memory at {workload} {sizes} ({dtype}) — pick a smaller size") from None
        raise


def measure_form(run: Run, workload: str, backend: str, params: dict, dtype: str = "float32",
                 budget_s: float = 0.05, mode: str | None = None, min_samples: int = 3,
                 max_samples: int | None = None) -> dict[str, Any]:
    """Median/p10/p90 seconds per call of one form (first call, which compiles, kept apart).

    Live budgets (≤ 0.1 s) take at most 12 samples: on a loaded machine one call can be many
    times slower than the estimate ``run.time`` sizes its loop by, and a redraw must stay quick."""
    if max_samples is None:
        max_samples = 12 if budget_s <= 0.1 else 200
    with oom_is_one_line(workload, params, dtype):
        fn, sync, p = form_runner(run, workload, backend, params, dtype, mode)
        first = run.first_call_once((workload, backend, tuple(sorted(p.items())), dtype, mode), fn, sync)
        t = run.time(fn, sync, warmup=0, budget_s=budget_s, min_samples=min_samples,
                     max_samples=max(max_samples, min_samples))
    return {**t.to_dict(first_s=first), "params": p}


def measure_forms(run: Run, workload: str, backends: tuple[str, ...], params: dict, dtype: str = "float32",
                  budget_s: float = 0.05, mode: str | None = None, min_samples: int = 3,
                  said: Callable[[str], None] | None = None) -> dict[str, dict[str, Any]]:
    """Every available form of one workload timed interleaved (``run.time_forms``): each form's
    first call (compile, first allocations) is timed apart, then one sample of each form per
    round, so a busy spell of the machine falls on eager, compiled and jax.jit alike. ``said(b)``
    hears of each form as it starts; a form that cannot run here gets an ``error`` row."""
    rows: dict[str, dict[str, Any]] = {}
    forms: dict[str, tuple] = {}
    firsts: dict[str, float | None] = {}
    resolved = params
    for b in backends:
        why = form_unavailable(b)
        if why:
            rows[b] = {"error": why}
            continue
        if said:
            said(b)
        with oom_is_one_line(workload, params, dtype):
            fn, sync, resolved = form_runner(run, workload, b, params, dtype, mode)
            firsts[b] = run.first_call_once((workload, b, tuple(sorted(resolved.items())), dtype, mode), fn, sync)
        forms[b] = (fn, sync)
    if forms:
        max_samples = 12 if budget_s <= 0.1 else 200
        with oom_is_one_line(workload, params, dtype):
            timings = run.time_forms(forms, warmup=0, budget_s=budget_s * len(forms), min_samples=min_samples,
                                     max_samples=max(max_samples, min_samples))
        for b, t in timings.items():
            rows[b] = {**t.to_dict(first_s=firsts[b]), "params": resolved}
    return {b: rows[b] for b in backends}
