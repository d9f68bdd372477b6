"""Part 1 — Eager mode: an interpreter, asynchronous dispatch and launch overhead.

Three live demos, each declared once (:class:`demos.deck.demo.Demo`) from a ``measure_*``
(JSON-able data) and a pure ``figure_*``:

``timeline()``   profile eager ``complex_activation`` and draw host lane above device lane
                 (:mod:`demos.introspection.profiling`), kernel count in the title.
``sync_trap()``  time the same call with the clock stopped when the call returns and again
                 after synchronising, in torch and in JAX, side by side, with the ratio.
``regimes()``    log-log sweep of latency vs N for one pointwise op and for eager
                 ``complex_activation``, with two reference lines measured on this machine:
                 the per-call overhead floor and bytes ÷ measured copy bandwidth.

The declarations give the panels, ``make record``/``make warm`` and the reference lookup.
"""
from __future__ import annotations

import math
from typing import Any, Callable

from demos.deck import asks
from demos.deck.claims import Claim, Claims, regime
from demos.deck.conditions import cores_to_itself, fmt_bytes, fmt_s, last_level, measured
from demos.deck.demo import Choice, Configs, Demo, Pow2, Pow2Range, Reported
from demos.engine import plots
from demos.engine.devices import check_dtype, device_kind, require_torch, torch_device
from demos.engine.errors import DemoError
from demos.engine.measurement import Run
from demos.engine.peaks import bandwidth, torch_threads
from demos.engine.protocol import cores
from demos.engine.timing import sync_for
from demos.engine.workload_defs import ITEMSIZE, get as get_workload
from demos.engine.workloads import prepare
from demos.introspection import profiling
from demos.topics.eager_figures import figure_regimes, figure_sync_trap, figure_timeline

DTYPES = ("float32", "bfloat16")

# -- sizes that fit the device ---------------------------------------------------------
# seed: N = 20·2^20 on a GPU. On a CPU 2^15 stays under torch's parallel grain size (32768):
# each op runs on the calling thread, and the dispatch gaps between ops are visible.
TIMELINE_N = {"cpu": 2**15, "gpu": 2**24}
TIMELINE_EXP = {"cpu": (10, 24), "gpu": (10, 26)}
TRAP_WORKLOADS = ("two_matmuls", "complex_activation")
# the trap's sizes: the seed's on a GPU (workload defaults); on a CPU small enough that a
# redraw (2 backends × several calls) answers within half a second
# (torch is measured first: on a CPU, XLA's worker threads keep spinning for a moment after a
# JAX call and slow whatever runs next on a 2-core machine)
TRAP_PARAMS = {"cpu": {"two_matmuls": {"B": 64, "D": 256, "H": 512}, "complex_activation": {"N": 2**15}},
               "gpu": {}}
SWEEP_EXP = {"cpu": (2, 25), "gpu": (2, 28)}  # slider bounds (log2 N)
SWEEP_DEFAULT = {"cpu": (4, 24), "gpu": (4, 28)}
SWEEP_QUICK = (4, 16)
# a pointwise op and how many passes over N elements it makes (reads + writes)
OPS: dict[str, int] = {"add": 3, "mul": 3, "sin": 2, "relu": 2}
CA_PASSES = 15  # eager complex_activation: sin 2, cos 2, mul 3, add 3, mul 3, relu 2


# =======================================================================================
# 1. Timeline
# =======================================================================================
def measure_timeline(run: Run, N: int | None = None, dtype: str = "float32", passes: int = 3) -> dict[str, Any]:
    """Profile one eager call of complex_activation: host and device lanes plus counts."""
    N = TIMELINE_N[device_kind()] if N is None else N
    p = prepare("complex_activation", "torch_eager", {"N": N}, dtype)
    data = profiling.profile_run(p, label="torch eager", passes=passes)
    data.update(extra=f"complex_activation, N={plots.pow2_label(N)}, {dtype}, eager", N=N, dtype=dtype)
    return data


timeline_claims = Claims(
    Claim("eager issues {threshold} separate aten ops", lambda d: d["counts"]["ops"], "==", 6, key="ops"),
    Claim("each op runs as its own kernel ({threshold})", lambda d: d["counts"]["kernels"], ">=", 6, key="kernels",
          ask=asks.count("One eager call of complex_activation: six tensor ops in the source. How many kernels run?",
                         (1, 2, 3), noun="kernel", open_top=True)),
)


timeline = Demo(
    "timeline", "Eager timeline",
    controls=lambda kind: [Pow2("N", TIMELINE_N[kind], lo=TIMELINE_EXP[kind][0], hi=TIMELINE_EXP[kind][1]), Choice("dtype", "float32", options=DTYPES, match=True)],
    measure=measure_timeline, figure=figure_timeline,
    configs=Configs(quick={"N": 2**16}), claims=timeline_claims,
)


# =======================================================================================
# 2. The timing trap
# =======================================================================================
def measure_sync_trap(run: Run, workload: str = "two_matmuls", dtype: str = "float32", budget_s: float = 0.05,
                      backends: tuple[str, ...] = ("torch_eager", "jax_jit")) -> dict[str, Any]:
    """Same call timed without and with synchronisation, in torch and in JAX."""
    if workload not in TRAP_WORKLOADS:
        raise DemoError(f"the timing trap uses {' or '.join(TRAP_WORKLOADS)}, not {workload!r}")
    w = get_workload(workload)
    kind = device_kind()
    params = w.resolve(TRAP_PARAMS[kind].get(workload), kind)
    rows: dict[str, Any] = {}
    for backend in backends:
        try:
            p = prepare(workload, backend, params, dtype)
            t_ret, t_sync = run.time_paired(p.fn, p.sync, budget_s=budget_s, min_samples=5)
            rows[backend] = {
                "returned": t_ret.to_dict(),
                "synced": t_sync.to_dict(),
                "ratio": t_sync.median / max(t_ret.median, 1e-12),
            }
        except DemoError as exc:
            rows[backend] = {"error": str(exc)}
    if all("error" in r for r in rows.values()):
        raise DemoError("; ".join(r["error"] for r in rows.values()))
    extra = f"{workload} ({w.describe(params)}), {dtype}"
    return {"workload": workload, "params": params, "dtype": dtype, "device": torch_device(), "rows": rows,
            "extra": extra}


def _paired(d: dict, backend: str) -> tuple[bool, str]:
    """The trap's condition: both clocks read on the same calls (paired samples)."""
    r = d["rows"][backend]
    same = r["returned"]["n"] == r["synced"]["n"]
    return same, (f"paired clocks: the same {r['synced']['n']} calls, each read at return and after its sync"
                  if same else "the two clocks timed different calls")


def _seed_trap(values: dict) -> dict | None:
    """The seed notebook timed jax.jit two_matmuls (256×1024 @ 1024×2048 @ 2048×1024) with %timeit:
    76 µs ± 45.7 µs without block_until_ready, 205 µs ± 2.85 µs with it (mean ± sd, 7 runs)."""
    if values.get("workload") != "two_matmuls" or values.get("dtype") != "float32":
        return None

    def t(mean: float, sd: float) -> dict:
        return {"median_s": mean, "p10_s": max(mean - sd, 1e-9), "p90_s": mean + sd, "n": 7}

    return {"workload": "two_matmuls", "dtype": "float32", "params": {"B": 256, "D": 1024, "H": 2048},
            "rows": {"jax_jit": {"returned": t(76e-6, 45.7e-6), "synced": t(205e-6, 2.85e-6), "ratio": 205 / 76}},
            "extra": "two_matmuls (256×1024 @ 1024×2048 @ 2048×1024), float32, mean ± sd of 7 %timeit runs"}


sync_trap = Demo(
    "sync_trap", "The timing trap",
    controls=[Choice("workload", "two_matmuls", options=TRAP_WORKLOADS, match=True),
              Choice("dtype", "float32", options=DTYPES, match=True)],
    measure=measure_sync_trap, figure=figure_sync_trap,
    reported=Reported(_seed_trap, "the seed lecture notebook ('PyTorch and JAX') on an A100-class GPU"),
    configs=Configs(warm=[{"workload": w, "dtype": d} for w in TRAP_WORKLOADS for d in DTYPES]),
    # one sentence per backend measured (two measured clocks compared: no threshold). A regime whose
    # condition is the timing's own structure: each sample reads the clock at return, then again
    # after the sync, so its synchronised reading can never be the shorter one
    claims=Claims(*(Claim(f"{b}: the synchronised clock is never shorter than the unsynchronised one",
                          lambda d, b=b: d["rows"][b]["synced"]["median_s"] >= d["rows"][b]["returned"]["median_s"],
                          applies=lambda d, b=b: b in d["rows"] and "error" not in d["rows"][b], key=b,
                          **regime(when=lambda d, b=b: _paired(d, b)))
                    for b in ("torch_eager", "torch_compile", "jax_eager", "jax_jit"))),
    # the seed's own example is jax.jit (205 µs synchronised against 76 µs at return)
    ask=asks.bands("jax.jit, two_matmuls: the clock read after synchronising ÷ the clock read when the call "
                   "returns. How large?", None, (1.1, 2, 5),
                   read=lambda d: d["rows"]["jax_jit"]["ratio"]),
)


# =======================================================================================
# 3. Regimes: overhead floor → bandwidth
# =======================================================================================
def _op_fn(op: str) -> Callable:
    torch = require_torch()
    return {"add": torch.add, "mul": torch.mul, "sin": lambda x, y: torch.sin(x),
            "relu": lambda x, y: torch.relu(x)}[op]


def _pair(run: Run, N: int, dtype: str, device: str):
    """Two random tensors of N elements (the last two sizes asked for stay in the demo's cache)."""
    tensors = run.cache.setdefault("tensors", {})
    key = (N, dtype, device)
    if key not in tensors:
        torch = require_torch()
        while len(tensors) >= 2:
            tensors.pop(next(iter(tensors)))
        g = torch.Generator().manual_seed(0)
        tdt = getattr(torch, dtype)
        tensors[key] = tuple(torch.randn(N, generator=g).to(device=device, dtype=tdt) for _ in range(2))
    return tensors[key]


def machine_constants(run: Run, dtype: str = "float32", threads: int | None = None) -> dict[str, Any]:
    """Measured here, once per device, dtype and thread count (until ``forget``): each op's latency
    at N=1 (the overhead floor), eager complex_activation's at N=1, and copy bandwidth (bytes read +
    written ÷ s, the engine's :func:`demos.engine.peaks.bandwidth`: the roofline's number)."""
    device = torch_device()
    key = ("constants", device, dtype, threads)
    if key not in run.cache:
        check_dtype(dtype, device)
        with torch_threads(threads):
            run.cache[key] = _measure_floors(run, dtype, device)
    bw = bandwidth(threads)
    return {**run.cache[key], "bandwidth_Bps": bw["bytes_per_s"]}


def _measure_floors(run: Run, dtype: str, device: str) -> dict[str, Any]:
    sync = sync_for("torch_eager", device)
    floors = {}
    x1, y1 = _pair(run, 1, dtype, device)
    for op in OPS:
        f = _op_fn(op)
        floors[op] = run.time(lambda: f(x1, y1), sync, budget_s=0.03, min_sample_s=0.0).median
    ca = get_workload("complex_activation").torch_fn
    floor_ca = run.time(lambda: ca(x1, y1), sync, budget_s=0.03, min_sample_s=0.0).median
    return {"floor_s": floors, "floor_ca_s": floor_ca, "device": device, "dtype": dtype}


def _point(run: Run, op: str, N: int, dtype: str, budget_s: float, threads: int | None = None) -> dict:
    """One point of the sweep: median, p10, p90 and n of ``op`` at N (kept until ``forget``)."""
    device = torch_device()
    key = ("point", device, dtype, op, N, threads)
    if key in run.cache:
        return run.cache[key]
    sync = sync_for("torch_eager", device)
    if op == "complex_activation":
        p = prepare("complex_activation", "torch_eager", {"N": N}, dtype)
        fn = p.fn
    else:
        f = _op_fn(op)
        x, y = _pair(run, N, dtype, device)
        fn = lambda: f(x, y)  # noqa: E731
    with torch_threads(threads):
        t = run.time(fn, sync, budget_s=budget_s, min_samples=3).to_dict()
    run.cache[key] = {k: t[k] for k in ("median_s", "p10_s", "p90_s", "n")}
    return run.cache[key]


def sweep_sizes(lo: int, hi: int) -> list[int]:
    """Powers of two from 2^lo to 2^hi, every second one when the range is wide."""
    if lo > hi:
        lo, hi = hi, lo
    step = 1 if hi - lo <= 12 else 2
    exps = list(range(lo, hi + 1, step))
    if exps[-1] != hi:
        exps.append(hi)
    return [2**k for k in exps]


def crossover(floor_s: float, bandwidth_Bps: float, bytes_per_elem: float) -> float:
    """N where the bandwidth time (N · bytes/elem ÷ bandwidth) reaches the overhead floor."""
    return floor_s * bandwidth_Bps / bytes_per_elem


def measured_crossover(Ns: list[int], seconds: list[float], floor_s: float, factor: float = 2.0) -> int | None:
    """Smallest measured N whose latency is ``factor`` × the floor (None if none is)."""
    for n, s in zip(Ns, seconds):
        if s >= factor * floor_s:
            return n
    return None


def measure_regimes(run: Run, op: str = "add", lo: int | None = None, hi: int | None = None, dtype: str = "float32",
                    budget_s: float = 0.03, with_activation: bool = True,
                    threads: int | None = None, N_range: tuple[int, int] | None = None) -> dict[str, Any]:
    """Latency vs N for ``op`` and for eager complex_activation (unless ``with_activation`` is
    False), with the two reference lines. The range is 2^lo…2^hi, or ``N_range`` (sizes)."""
    if N_range is not None:
        lo, hi = (int(math.log2(n)) for n in N_range)
    if op not in OPS:
        raise DemoError(f"unknown op {op!r}; valid: {', '.join(OPS)}")
    kind = device_kind()
    dlo, dhi = SWEEP_DEFAULT[kind]
    lo = dlo if lo is None else lo
    hi = dhi if hi is None else hi
    blo, bhi = SWEEP_EXP[kind]
    if not (blo <= lo <= bhi and blo <= hi <= bhi):
        raise DemoError(f"sweep range 2^{lo}…2^{hi} is outside 2^{blo}…2^{bhi} on this device")
    Ns = sweep_sizes(lo, hi)
    get_workload("complex_activation").resolve({"N": max(Ns)})  # refuses sizes above the workload limit
    progress = run.progress
    progress(0.0, "measuring the overhead floor and copy bandwidth…")
    if device_kind() != "cpu":
        threads = None  # intra-op threads only matter on a CPU
    const = machine_constants(run, dtype, threads=threads)
    names = (op, "complex_activation") if with_activation else (op,)
    series: dict[str, list] = {name: [] for name in names}
    total = len(names) * len(Ns)
    done = 0
    for name in names:
        for N in Ns:
            progress(done / total, f"{name} at N={plots.pow2_label(N)}…")
            series[name].append(_point(run, name, N, dtype, budget_s, threads))
            done += 1
    progress(1.0, "drawing…")
    isz = ITEMSIZE[dtype]
    bpe = {op: OPS[op] * isz, "complex_activation": CA_PASSES * isz}
    floors = {op: const["floor_s"][op], "complex_activation": const["floor_ca_s"]}
    bw = const["bandwidth_Bps"]
    extra = f"{op}+complex_activation, N=2^{lo}…2^{hi}, {dtype}"
    if threads:
        extra += f", {threads} thread{'s' * (threads != 1)}"
    return {
        "op": op, "dtype": dtype, "device": torch_device(), "lo": lo, "hi": hi, "Ns": Ns, "threads": threads,
        "series": series, "floors_s": floors, "bandwidth_Bps": bw, "bytes_per_elem": bpe,
        "crossover": {k: crossover(floors[k], bw, bpe[k]) for k in bpe},
        "measured_crossover": {k: measured_crossover(Ns, [p["median_s"] for p in series[k]], floors[k])
                               for k in series},
        "extra": extra,
    }


def _regimes_controls(kind: str) -> list:
    blo, bhi = SWEEP_EXP[kind]
    dlo, dhi = SWEEP_DEFAULT[kind]
    controls = [Choice("op", "add", options=list(OPS)),
                Pow2Range("N_range", (2**dlo, 2**dhi), label="N range", lo=blo, hi=bhi),
                Choice("dtype", "float32", options=DTYPES, match=True)]
    if kind == "cpu":
        # one intra-op thread by default: the sweep is about dispatch vs memory traffic, and on a
        # busy machine waking a second thread per op can cost milliseconds (try "all")
        n = cores()
        controls.append(Choice("threads", 1, label="torch threads", options=[("1", 1), (f"all ({n})", n)]))
    return controls


def _p10_ratio(d: dict, big: int | None, small: int) -> float | None:
    """Best-decile time at N=``big`` (None: the top of the sweep; a negative ``small``: the top ÷
    -small) ÷ the time at N=``small``, for the swept op; None where a size was not swept."""
    # best deciles: a 1-thread op on a loaded 2-core machine runs at one of two speeds, 2× apart
    t = {n: p["p10_s"] for n, p in zip(d["Ns"], d["series"][d["op"]])}
    hi = d["Ns"][-1]
    big = hi if big is None else big
    small = hi // -small if small < 0 else small
    return t[big] / t[small] if big in t and small in t else None


def _overhead_bound_at(n: int):
    """Flat where the per-call floor outweighs moving the data: the bandwidth time of ``n``
    elements (this machine's copy bandwidth) is under the op's floor (its latency at N=1)."""
    def when(d: dict) -> tuple[bool, str]:
        op, bw = d["op"], d["bandwidth_Bps"]
        move, floor = n * d["bytes_per_elem"][op] / bw, d["floors_s"][op]
        ok = move < floor
        return ok, (f"overhead-bound: moving 2^{n.bit_length() - 1} elements takes {fmt_s(move)} at "
                    f"{bw / 1e9:.0f} GB/s, {'under' if ok else 'not under'} the {fmt_s(floor)} floor per call")
    return when


def _streams_at_top(d: dict) -> tuple[bool, str]:
    """∝ N where the top quarter of the sweep streams from memory: 2^(hi-2) elements' bytes
    per call over the device's largest cache."""
    op, top = d["op"], d["Ns"][-1]
    nbytes = top // 4 * d["bytes_per_elem"][op]
    name, size, device = last_level(d)
    return nbytes > size, (f"memory-bound: {fmt_bytes(nbytes)} per call at 2^{(top // 4).bit_length() - 1}, "
                           f"{'over' if nbytes > size else 'inside'} this {device}'s {fmt_bytes(size)} {name}")


# Flat at small N, then growing with N (on a GPU ∝ N: the band of the GPU test)
regimes_claims = Claims(
    Claim("{d[op]} is flat at small N: 2^8 elements cost under {threshold:g}× what 2^4 cost",
          lambda d: _p10_ratio(d, 2**8, 2**4), "<", 2.0, key="flat",
          **regime(when=cores_to_itself(_overhead_bound_at(2**8)))),
    Claim("{d[op]} ∝ N at the top: 4× the elements cost {lo:g}–{hi:g}× the time",
          lambda d: _p10_ratio(d, None, -4), "within", {"gpu": (2.5, 6.0)}, key="linear",
          **regime(when=_streams_at_top)),
    # past the crossover the op pays for its bytes: 16× the elements at the top, where 2^(hi-4) is
    # already over the crossover, cost close to 16× the time
    Claim("{d[op]} is no longer flat at the top: 16× the elements cost over {threshold:g}× the time",
          lambda d: _p10_ratio(d, None, -16), ">", {"cpu": 4.0}, key="rising",
          **regime(when=measured(lambda d: d["Ns"][-1] / 16 / d["crossover"][d["op"]], ">=", 1.0,
                                 "bandwidth-bound at the top: N/16 there is {x:.0f}× the crossover N, {cmp} 1×"))),
)


LEAVES_FLOOR = ("by 2^12", "2^13 to 2^16", "2^17 to 2^20", "beyond 2^20")


def _leaves_floor(d: dict) -> int | None:
    """Which of :data:`LEAVES_FLOOR` holds the N where the swept op's time first reaches twice
    its floor (a sweep that never leaves the floor up to 2^21 or more: the last)."""
    n = d["measured_crossover"].get(d["op"])
    if n is None:
        return 3 if d["Ns"][-1] >= 2**21 else None
    k = math.log2(n)
    return 0 if k <= 12 else 1 if k <= 16 else 2 if k <= 20 else 3


regimes = Demo(
    "regimes", "Regimes",
    controls=_regimes_controls, measure=measure_regimes, figure=figure_regimes, panel="warmed",
    # warm: the profiler's first start and the regimes panel's machine constants
    configs=Configs(warm=[{"N_range": (2**SWEEP_QUICK[0], 2**SWEEP_QUICK[1])}],
                    quick={"N_range": (2**SWEEP_QUICK[0], 2**SWEEP_QUICK[1])}),
    claims=regimes_claims,
    ask=asks.among("One pointwise op, N growing from 2^4: at what N does its time leave the floor (twice the "
                   "floor's)?", LEAVES_FLOOR, _leaves_floor,
                   lambda d: (f"at N = {plots.pow2_label(d['measured_crossover'][d['op']])}"
                              if d["measured_crossover"].get(d["op"]) else "not within the sweep")),
)
