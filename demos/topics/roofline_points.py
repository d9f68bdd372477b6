"""Part 3's roofline points: one workload form at one size, its analytic cost (FLOPs and bytes,
fused or not), the roofline model's prediction (max(FLOPs ÷ peak, bytes ÷ bandwidth), from
:mod:`demos.engine.peaks`) beside its measured time, the ratio and a short phrase for why they
differ. :mod:`demos.topics.roofline` measures the times; the figures draw the points.
"""
from __future__ import annotations

from typing import Any

from demos.deck.conditions import measured, over_cache
from demos.engine.devices import free_memory_bytes
from demos.engine.hardware import caches
from demos.engine.peaks import cost, is_fused, peak_flops, predict
from demos.engine.workload_defs import ITEMSIZE


def make_point(workload: str, backend: str, params: dict, dtype: str, timing: dict[str, Any],
               peaks: dict[str, Any]) -> dict[str, Any]:
    """A roofline point: cost, measured time, achieved FLOP/s, the prediction and the ratio."""
    c = cost(workload, params, dtype, backend)
    pred, bound = predict(c["flops"], c["bytes"], peak_flops(peaks, dtype), peaks["bandwidth"]["bytes_per_s"])
    pt: dict[str, Any] = {"workload": workload, "backend": backend, "params": dict(params), "dtype": dtype,
                          **c, "predicted_s": pred, "bound": bound, "device": peaks.get("device")}
    pt.update({k: timing.get(k) for k in ("median_s", "p10_s", "p90_s", "n", "first_s", "error")})
    if timing.get("median_s"):
        pt["achieved"] = c["flops"] / timing["median_s"]
        pt["ratio"] = timing["median_s"] / pred
    pt["why"] = explain(pt)
    return pt


# The host time one call costs around its device work (Python, dispatch, guards, launches, the wait
# for the result), per kind of device: a call that exceeds its prediction by no more than this is
# host time, not arithmetic. GPU: on the H100 record's 16-core VM (torch 2.11, JAX 0.11.2) one fused
# kernel at the bandwidth roof took 68 µs inside a 142 µs torch.compile call (fusion.latency), a
# jax.jit call returned after 122 µs (eager.sync_trap), and the compiled chain ran 75–200 µs over its
# 46 µs prediction. CPU (no launches): a call's floor was 7–16 µs on a 2-core AMD EPYC VM (the chain
# at N=1024: eager, torch.compile, jax.jit), while the compiled chain at N=2^17 ran 110 µs over a
# 6 µs prediction, most of it math (its time per element at N=2^23 gives 99 µs at 2^17).
HOST_PER_CALL_S = {"cpu": 50e-6, "gpu": 250e-6}


def host_per_call(device: str | None) -> float:
    """:data:`HOST_PER_CALL_S` for a measurement's device ("cpu", "cuda", "mps"; unknown: the CPU's)."""
    return HOST_PER_CALL_S["cpu" if device in (None, "cpu") else "gpu"]


# The reasons the figure prints, each on one line of its column: two-line reasons in neighbouring
# rows overlapped wherever a measurement gave them different reasons (tests/test_roofline.py draws
# every pair of them side by side)
WHY = {
    "cache": "faster than the model: data stayed in cache",
    "roof": "near the {bound} roof",
    "host": "host time per call (Python, launch) dominates",
    "fused_math": "tanh/exp/sin: many FLOPs each, model counts 1",
    "eager_math": "per-op passes + transcendental math",
    "mlp_block": "LayerNorm, GELU run far below the GEMM peak",
    "two_matmuls": "GEMMs this small run below the big-GEMM peak",
    "other": "below both roofs",
}
WHY_CHARS = 46  # the column's width in characters (roofline_figures.figure_predicted wraps there)


def explain(pt: dict[str, Any], device: str | None = None) -> str:
    """Why measured and predicted differ (one short phrase for the figure, from :data:`WHY`).
    ``device`` (else the point's own, else a CPU) sets how much host time a call may cost: a point
    over twice its prediction by no more than that is host time per call, whatever its FLOPs."""
    r = pt.get("ratio")
    if r is None:
        return pt.get("error") or "not measured"
    if r < 0.7:
        return WHY["cache"]
    if r <= 2.0:
        return WHY["roof"].format(bound=pt["bound"])
    if pt["median_s"] - pt["predicted_s"] <= host_per_call(device or pt.get("device")):
        return WHY["host"]
    w, fused = pt["workload"], is_fused(pt["backend"])
    if w in ("chain", "complex_activation"):
        return WHY["fused_math" if fused else "eager_math"]
    return WHY.get(w, WHY["other"])


# =======================================================================================
# The regimes part 3's timing claims hold in (stated in each figure's footer)
# =======================================================================================
CHAIN_N_MAX = 2**26  # the chain's largest N: the payoff panel's slider goes this far
# N-sized float32 buffers the payoff panel may hold at once (three forms' inputs and outputs,
# eager's temporaries), with room to spare: a default N must fit them in half the free memory
CHAIN_LIVE_BUFFERS = 12


def chain_past_cache(levels: dict[str, int] | None = None, free_bytes: int | None = None) -> int:
    """The chain's default N on a CPU: the smallest power of two from 2^20 at which each eager op's
    float32 input and output (2 × 4 B × N) are over this CPU's largest cache (2^23 under a 32 MiB
    L3, 2^26 under a 300 MiB one), at most :data:`CHAIN_N_MAX` and as far as memory allows
    (:data:`CHAIN_LIVE_BUFFERS` of them in half the free memory), and 2^23 where the caches cannot
    be read. Compiling the chain pays where eager's passes stream from memory: on a large-cache
    CPU the default goes past the cache rather than show the slide's lesson nowhere.
    ``levels``, ``free_bytes``: the caches and free memory to read instead of this machine's (tests)."""
    levels = (caches("cpu").get("levels") or {}) if levels is None else levels
    if not levels:
        return 2**23
    free = free_memory_bytes("cpu") if free_bytes is None else free_bytes
    n = 2**20
    while _OP_OPERANDS * n * 4 <= max(levels.values()) and n < CHAIN_N_MAX:
        if free is not None and CHAIN_LIVE_BUFFERS * 4 * (2 * n) > free // 2:
            break  # the next size would not fit: the condition then says the chain stays in cache
        n *= 2
    return n


_OP_OPERANDS = 2  # an eager op of the chain reads one N-element operand and writes one


def _chain_op_bytes(d: dict[str, Any]) -> float:
    """Bytes one eager op of the chain reads and writes, as measured (payoff: its workloads; roofline:
    its params)."""
    params = d["workloads"]["chain"]["params"] if "workloads" in d else d["params"]
    return _OP_OPERANDS * params["N"] * ITEMSIZE[d["dtype"]]


# compiling the chain pays where eager's passes stream from memory: each op's operands over the largest cache
CHAIN_STREAMS = over_cache(_chain_op_bytes, "read and written by each eager op")
GEMM_CALL_S = 1e-4  # a GEMM call this long is its arithmetic: per-call overheads are a small share


def gemm_bound(time_of):
    """The two_matmuls claims' regime: an eager call long enough to be its GEMMs' arithmetic."""
    return measured(time_of, ">=", GEMM_CALL_S, "GEMM-bound: an eager two_matmuls call takes {xs}, {cmp} {ts}")
