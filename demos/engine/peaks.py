"""This machine's roofs, the spec-sheet roofs of known GPUs, and the roofline model.

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
from typing import Any, Callable, Iterator

from demos.engine.devices import device_kind, device_name, dtype_supported, jax_backend, jax_or_none, \
    require_torch, set_threads, torch_device
from demos.engine.errors import DemoError
from demos.engine.timing import measure, sync_jax, sync_torch
from demos.engine.workloads import get as get_workload
from demos.engine.protocol import engine_cache

Progress = Callable[[float, str], None]
FUSED = frozenset({"torch_compile", "jax_jit"})

# Spec-sheet peaks (NVIDIA H200/H100/A100 datasheets; dense, no structured sparsity). FP32 is the
# non-tensor-core rate, which full-precision fp32 matmuls get (the deck disables TF32 in both
# frameworks). Rows: name, keywords all found in the device name, bandwidth, fp32, bf16 (= fp16).
SPEC_SHEETS: tuple[dict[str, Any], ...] = tuple(
    {"name": n, "match": m, "bandwidth": bw, "float32": f32, "bfloat16": b16, "float16": b16}
    for n, m, bw, f32, b16 in (("H200 SXM", ("h200",), 4.8e12, 67e12, 989e12),
                               ("H100 PCIe", ("h100", "pcie"), 2.0e12, 51e12, 756e12),
                               ("H100 SXM", ("h100",), 3.35e12, 67e12, 989e12),
                               ("A100 40GB", ("a100", "40gb"), 1.555e12, 19.5e12, 312e12),
                               ("A100 80GB SXM", ("a100",), 2.039e12, 19.5e12, 312e12)))


def spec_sheet(name: str | None) -> dict[str, Any] | None:
    """The spec-sheet entry whose keywords all occur in a device name, or None."""
    low = (name or "").lower().replace("-", " ").replace("_", " ")
    squashed = low.replace(" ", "")
    for spec in SPEC_SHEETS:
        if all(k in low or k in squashed for k in spec["match"]):
            return spec
    return None


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


def _noop(_fraction: float, _message: str = "") -> None:
    pass


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

        jax = jax_or_none()
        import jax.numpy as jnp

        ja = jax.device_put(jnp.asarray(a.float().cpu().numpy()).astype(getattr(jnp, dtype)))
        jb = jax.device_put(jnp.asarray(b.float().cpu().numpy()).astype(getattr(jnp, dtype)))
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
    progress = progress or _noop
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
    progress = progress or _noop
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
