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
import statistics
import time
from typing import Any, Callable

from demos.deck.claims import Claim, Claims
from demos.deck.demo import Choice, Demo, Pow2, Pow2Range, Progress
from demos.engine import plots
from demos.engine.devices import check_dtype, require_torch, set_threads, torch_device
from demos.engine.protocol import cores, kept
from demos.engine.errors import DemoError
from demos.engine.peaks import bandwidth, torch_threads
from demos.engine.timing import Timing, fmt_seconds, measure, quantile, sync_for
from demos.engine.workloads import ITEMSIZE, get as get_workload, prepare
from demos.introspection import profiling

PART = 1

SECTION = "eager"
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


def _kind(device: str | None = None) -> str:
    return "cpu" if (device or torch_device()) == "cpu" else "gpu"


def _exp_label(n: int) -> str:
    k = math.log2(n)
    return f"2^{int(k)}" if k.is_integer() else f"{n:,}"


def _no_minor_ticks(ax) -> None:
    """Log axes draw dozens of minor ticks; laying them out costs a redraw ~0.1 s."""
    from matplotlib.ticker import NullLocator

    ax.yaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_locator(NullLocator())


# =======================================================================================
# 1. Timeline
# =======================================================================================
def measure_timeline(N: int | None = None, dtype: str = "float32", passes: int = 3) -> dict[str, Any]:
    """Profile one eager call of complex_activation: host and device lanes plus counts."""
    N = TIMELINE_N[_kind()] if N is None else N
    p = prepare("complex_activation", "torch_eager", {"N": N}, dtype)
    run = profiling.profile_run(p, label="torch eager", passes=passes)
    extra = f"complex_activation, N={_exp_label(N)}, {dtype}, eager"
    run.update(extra=extra, N=N, dtype=dtype)
    return run


def figure_timeline(data: dict, reference: dict | None = None):
    runs = [data]
    name = "recorded" if data.get("recorded") else "live"
    titles = [f"eager ({data.get('machine_short', name)})" if data.get("recorded") else "eager (here)"]
    if reference is not None:
        runs.append(reference)
        titles.append(reference.get("machine_short", "recorded"))
    c = data["counts"]
    what = "GPU kernels" if data.get("device_lane") == "cuda" else "ops, each run by the host"
    title = (f"Eager complex_activation, N={_exp_label(data.get('N', 0))}: {c['ops']} aten ops issued → "
             f"{c['kernels']} {what}")
    if reference is not None:
        title += f"  (recorded: {reference['counts']['kernels']})"
    fig = profiling.timeline_figure(runs, titles, title=title)
    plots.text_floor(fig)  # the shared timeline's 10 pt lane names and notes
    plots.stamp_figure(fig, data, reference)
    return fig


timeline = Demo(
    "timeline", "Eager timeline",
    controls=lambda kind: [Pow2("N", TIMELINE_N[kind], lo=TIMELINE_EXP[kind][0], hi=TIMELINE_EXP[kind][1]), Choice("dtype", "float32", options=DTYPES)],
    measure=measure_timeline, figure=figure_timeline, match=("dtype",),
    record_quick={"N": 2**16},
    claims=Claims(
        Claim("eager issues {threshold} separate aten ops", lambda d: d["counts"]["ops"], "==", 6, key="ops"),
        Claim("each op runs as its own kernel ({threshold})", lambda d: d["counts"]["kernels"], ">=", 6,
              key="kernels")),
)


# =======================================================================================
# 2. The timing trap
# =======================================================================================
def paired_timing(fn: Callable[[], Any], sync: Callable[[Any], None], *, budget_s: float = 0.05,
                  min_samples: int = 7, max_samples: int = 300, warmup: int = 1) -> tuple[Timing, Timing]:
    """Time the same calls twice: clock stopped when ``fn()`` returns, and after ``sync(out)``.

    Each sample is one call; it is synchronised before the next one starts, so no queue
    builds up and both numbers describe the same calls. At least 3 samples, ``min_samples``
    unless calls are so slow that would take over 3× the budget. Returns (returned, synchronised).
    """
    for _ in range(max(warmup, 0)):
        sync(fn())
    clock = time.perf_counter
    ret: list[float] = []
    done: list[float] = []
    start = clock()
    deadline = start + budget_s

    def more() -> bool:
        n, now = len(ret), clock()
        if n >= max_samples:
            return False
        if n < 3:
            return True
        if n < min_samples:  # slow calls: stop at 3 samples rather than overrun the budget 3×
            return now < start + 3 * budget_s
        return now < deadline

    while more():
        t0 = clock()
        out = fn()
        t1 = clock()
        sync(out)
        t2 = clock()
        ret.append(t1 - t0)
        done.append(t2 - t0)
        del out

    def timing(xs: list[float]) -> Timing:
        return Timing(statistics.median(xs), quantile(xs, 0.1), quantile(xs, 0.9), len(xs), 1, xs)

    return timing(ret), timing(done)


def measure_sync_trap(workload: str = "two_matmuls", dtype: str = "float32", budget_s: float = 0.05,
                      backends: tuple[str, ...] = ("torch_eager", "jax_jit")) -> dict[str, Any]:
    """Same call timed without and with synchronisation, in torch and in JAX."""
    if workload not in TRAP_WORKLOADS:
        raise DemoError(f"the timing trap uses {' or '.join(TRAP_WORKLOADS)}, not {workload!r}")
    w = get_workload(workload)
    kind = _kind()
    params = w.resolve(TRAP_PARAMS[kind].get(workload), kind)
    rows: dict[str, Any] = {}
    for backend in backends:
        try:
            p = prepare(workload, backend, params, dtype)
            t_ret, t_sync = paired_timing(p.fn, p.sync, budget_s=budget_s, min_samples=5)
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


def _trap_axes(ax, data: dict, title: str) -> None:
    import numpy as np

    names = [b for b in data["rows"] if "error" not in data["rows"][b]]
    x = np.arange(len(names))
    wdt = 0.38
    top = 0.0
    bottom = 0.0
    for i, b in enumerate(names):
        r = data["rows"][b]
        ret, syn = r["returned"]["median"], r["synced"]["median"]
        col = plots.color(b)
        ax.bar(i - wdt / 2, ret * 1e6, wdt, color=col, alpha=0.35, hatch="//", edgecolor=col,
               label="clock stopped when the call returns" if i == 0 else None)
        ax.bar(i + wdt / 2, syn * 1e6, wdt, color=col,
               label="clock stopped after synchronising" if i == 0 else None)
        for xx, v, rr in ((i - wdt / 2, ret, r["returned"]), (i + wdt / 2, syn, r["synced"])):
            ax.errorbar(xx, v * 1e6, yerr=[[max(v - rr["p10"], 0) * 1e6], [max(rr["p90"] - v, 0) * 1e6]],
                        color="#333333", capsize=3, lw=1)
            ax.text(xx, v * 1e6 * 1.15, fmt_seconds(v), ha="center", va="bottom", fontsize=12.5,
                    bbox=dict(facecolor="white", alpha=0.8, edgecolor="none", pad=1))
        top = max(top, r["synced"]["p90"], r["returned"]["p90"])
        bottom = min(bottom, r["returned"]["p10"]) if bottom else r["returned"]["p10"]
    ax.set_xticks(x)
    ax.set_xticklabels([f"{plots.label(b)}\n×{data['rows'][b]['ratio']:.1f} hidden"
                        if data["rows"][b]["ratio"] >= 1.5 else f"{plots.label(b)}\n×{data['rows'][b]['ratio']:.2f}"
                        for b in names])
    ax.set_yscale("log")
    _no_minor_ticks(ax)
    if top and bottom:
        ax.set_ylim(bottom * 1e6 / 2.5, top * 1e6 * 40)  # headroom for the legend
    ax.set_ylabel("µs per call (log)")
    ax.set_title(title, fontsize=14)
    ax.grid(axis="x", visible=False)
    errors = [f"{plots.label(b)}: {r['error']}" for b, r in data["rows"].items() if "error" in r]
    if errors:
        ax.text(0.5, 0.95, "\n".join(errors)[:160], transform=ax.transAxes, ha="center", va="top",
                fontsize=12, color="#b00020")


def figure_sync_trap(data: dict, reference: dict | None = None):
    panels = [data] + ([reference] if reference is not None else [])
    fig, axes = plots.figure(1, len(panels))
    axes = [axes] if len(panels) == 1 else list(axes)
    for ax, d in zip(axes, panels):
        where = d.get("machine_short", "recorded") if d.get("recorded") else "here"
        where = "seed's GPU, mean ± sd" if d.get("seed") else where + ", median, p10–p90"
        _trap_axes(ax, d, f"{d['workload']} · {d['dtype']} · {where}")
    axes[0].legend(loc="upper right", fontsize=12)
    parts = []
    for b, r in data["rows"].items():
        if "error" not in r:
            parts.append(f"{plots.label(b)} ×{r['ratio']:.1f}")
    fig.suptitle("synchronised ÷ unsynchronised clock: " + ", ".join(parts), fontsize=16)
    plots.stamp_figure(fig, data, reference)
    return fig


def _seed_trap(values: dict) -> dict | None:
    """The seed notebook timed jax.jit two_matmuls (256×1024 @ 1024×2048 @ 2048×1024) with %timeit:
    76 µs ± 45.7 µs without block_until_ready, 205 µs ± 2.85 µs with it (mean ± sd, 7 runs)."""
    if values.get("workload") != "two_matmuls" or values.get("dtype") != "float32":
        return None

    def t(mean: float, sd: float) -> dict:
        return {"median": mean, "p10": max(mean - sd, 1e-9), "p90": mean + sd, "n": 7}

    return {"workload": "two_matmuls", "dtype": "float32", "params": {"B": 256, "D": 1024, "H": 2048},
            "rows": {"jax_jit": {"returned": t(76e-6, 45.7e-6), "synced": t(205e-6, 2.85e-6), "ratio": 205 / 76}},
            "extra": "two_matmuls (256×1024 @ 1024×2048 @ 2048×1024), float32, mean ± sd of 7 %timeit runs"}


sync_trap = Demo(
    "sync_trap", "The timing trap",
    controls=[Choice("workload", "two_matmuls", options=TRAP_WORKLOADS), Choice("dtype", "float32", options=DTYPES)],
    measure=measure_sync_trap, figure=figure_sync_trap, match=("workload", "dtype"),
    seed=_seed_trap, seed_source="the seed lecture notebook ('PyTorch and JAX') on an A100-class GPU",
    warm=[{"workload": w, "dtype": d} for w in TRAP_WORKLOADS for d in DTYPES],
    # one sentence per backend measured (two measured clocks compared: no threshold)
    claims=Claims(*(Claim(f"{b}: the synchronised clock is never shorter than the unsynchronised one",
                          lambda d, b=b: d["rows"][b]["synced"]["median"] >= d["rows"][b]["returned"]["median"],
                          applies=lambda d, b=b: b in d["rows"] and "error" not in d["rows"][b], key=b)
                    for b in ("torch_eager", "torch_compile", "jax_eager", "jax_jit"))),
)


# =======================================================================================
# 3. Regimes: overhead floor → bandwidth
# =======================================================================================
_CONSTANTS: dict[tuple, dict] = kept("topics.eager._CONSTANTS", {})
_POINTS: dict[tuple, dict] = kept("topics.eager._POINTS", {})
_TENSORS: dict[tuple, Any] = kept("topics.eager._TENSORS", {})


def _op_fn(op: str) -> Callable:
    torch = require_torch()
    return {"add": torch.add, "mul": torch.mul, "sin": lambda x, y: torch.sin(x),
            "relu": lambda x, y: torch.relu(x)}[op]


def _pair(N: int, dtype: str, device: str):
    key = (N, dtype, device)
    if key not in _TENSORS:
        torch = require_torch()
        while len(_TENSORS) >= 2:
            _TENSORS.pop(next(iter(_TENSORS)))
        g = torch.Generator().manual_seed(0)
        tdt = getattr(torch, dtype)
        _TENSORS[key] = tuple(torch.randn(N, generator=g).to(device=device, dtype=tdt) for _ in range(2))
    return _TENSORS[key]


def _timing_dict(t: Timing) -> dict[str, float]:
    return {"median": t.median, "p10": t.p10, "p90": t.p90, "n": t.n}


def machine_constants(dtype: str = "float32", refresh: bool = False, threads: int | None = None) -> dict[str, Any]:
    """Measured here, once per device, dtype and thread count: each op's latency at N=1 (the
    overhead floor), eager complex_activation's at N=1, and copy bandwidth (bytes read +
    written ÷ s, the engine's :func:`demos.engine.peaks.bandwidth`: the roofline's number)."""
    device = torch_device()
    key = (device, dtype, threads)
    if key not in _CONSTANTS or refresh:
        check_dtype(dtype, device)
        with torch_threads(threads):
            _CONSTANTS[key] = _measure_floors(dtype, device)
    bw = bandwidth(threads, refresh=refresh)
    return {**_CONSTANTS[key], "bandwidth_Bps": bw["bytes_per_s"]}


def _measure_floors(dtype: str, device: str) -> dict[str, Any]:
    sync = sync_for("torch_eager", device)
    floors = {}
    x1, y1 = _pair(1, dtype, device)
    for op in OPS:
        f = _op_fn(op)
        floors[op] = measure(lambda: f(x1, y1), sync, budget_s=0.03, min_sample_s=0.0).median
    ca = get_workload("complex_activation").torch_fn
    floor_ca = measure(lambda: ca(x1, y1), sync, budget_s=0.03, min_sample_s=0.0).median
    return {"floor_s": floors, "floor_ca_s": floor_ca, "device": device, "dtype": dtype}


def _point(op: str, N: int, dtype: str, budget_s: float, refresh: bool = False, threads: int | None = None) -> dict:
    device = torch_device()
    key = (device, dtype, op, N, threads)
    if key in _POINTS and not refresh:
        return _POINTS[key]
    sync = sync_for("torch_eager", device)
    if op == "complex_activation":
        p = prepare("complex_activation", "torch_eager", {"N": N}, dtype)
        fn = p.fn
    else:
        f = _op_fn(op)
        x, y = _pair(N, dtype, device)
        fn = lambda: f(x, y)  # noqa: E731
    with torch_threads(threads):
        t = measure(fn, sync, budget_s=budget_s, min_samples=3)
    _POINTS[key] = _timing_dict(t)
    return _POINTS[key]


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


def measure_regimes(op: str = "add", lo: int | None = None, hi: int | None = None, dtype: str = "float32",
                    budget_s: float = 0.03, progress: Progress | None = None,
                    refresh: bool = False, with_activation: bool = True,
                    threads: int | None = None, N_range: tuple[int, int] | None = None) -> dict[str, Any]:
    """Latency vs N for ``op`` and for eager complex_activation (unless ``with_activation`` is
    False), with the two reference lines. The range is 2^lo…2^hi, or ``N_range`` (sizes)."""
    if N_range is not None:
        lo, hi = (int(math.log2(n)) for n in N_range)
    if op not in OPS:
        raise DemoError(f"unknown op {op!r}; valid: {', '.join(OPS)}")
    kind = _kind()
    dlo, dhi = SWEEP_DEFAULT[kind]
    lo = dlo if lo is None else lo
    hi = dhi if hi is None else hi
    blo, bhi = SWEEP_EXP[kind]
    if not (blo <= lo <= bhi and blo <= hi <= bhi):
        raise DemoError(f"sweep range 2^{lo}…2^{hi} is outside 2^{blo}…2^{bhi} on this device")
    Ns = sweep_sizes(lo, hi)
    get_workload("complex_activation").resolve({"N": max(Ns)})  # refuses sizes above the workload limit
    progress = progress or (lambda f, m="": None)
    progress(0.0, "measuring the overhead floor and copy bandwidth…")
    if _kind() != "cpu":
        threads = None  # intra-op threads only matter on a CPU
    const = machine_constants(dtype, refresh=refresh, threads=threads)
    names = (op, "complex_activation") if with_activation else (op,)
    series: dict[str, list] = {name: [] for name in names}
    total = len(names) * len(Ns)
    done = 0
    for name in names:
        for N in Ns:
            progress(done / total, f"{name} at N={_exp_label(N)}…")
            series[name].append(_point(name, N, dtype, budget_s, refresh, threads))
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
        "measured_crossover": {k: measured_crossover(Ns, [p["median"] for p in series[k]], floors[k])
                               for k in series},
        "extra": extra,
    }


def regime_at(data: dict, name: str, N: int) -> str:
    """Which regime the measured point at N is in (vs the floor and the copy-bandwidth line)."""
    i = data["Ns"].index(N)
    t = data["series"][name][i]["median"]
    floor = data["floors_s"][name]
    bw_t = N * data["bytes_per_elem"][name] / data["bandwidth_Bps"]
    if t < 2 * floor:
        return "overhead-bound"
    if t <= 2.5 * max(bw_t, floor):
        return "bandwidth-bound"
    return "slower than copy: compute or allocation"


def effective_bandwidth(data: dict, name: str, N: int | None = None) -> float:
    """Bytes the eager form moves at N ÷ measured seconds (B/s)."""
    N = N or data["Ns"][-1]
    t = data["series"][name][data["Ns"].index(N)]["median"]
    return N * data["bytes_per_elem"][name] / t


def figure_regimes(data: dict, reference: dict | None = None):
    import numpy as np

    fig, ax = plots.figure()
    op = data["op"]
    Ns = np.array(data["Ns"], dtype=float)
    colors = {op: plots.PALETTE["torch_compile"], "complex_activation": plots.PALETTE["torch_eager"]}
    labels = {op: f"one op: {op}", "complex_activation": "eager complex_activation (6 ops)"}
    bw = data["bandwidth_Bps"]
    grid = np.geomspace(Ns.min(), Ns.max(), 200)
    for name in data["series"]:
        pts = data["series"][name]
        med = np.array([p["median"] for p in pts]) * 1e6
        lo = np.array([p["p10"] for p in pts]) * 1e6
        hi = np.array([p["p90"] for p in pts]) * 1e6
        ax.fill_between(Ns, lo, hi, color=colors[name], alpha=0.15, lw=0)
        ax.plot(Ns, med, "o-", color=colors[name], label=labels[name], lw=2, ms=5)
        floor = data["floors_s"][name] * 1e6
        model = np.maximum(floor, grid * data["bytes_per_elem"][name] / bw * 1e6)
        ax.plot(grid, model, "--", color=colors[name], lw=1.3, alpha=0.9)
    # reference-line labels (once)
    ax.plot([], [], "--", color="#555555", label=f"model: max(floor at N=1, bytes ÷ {bw / 1e9:.0f} GB/s copy)")
    n_star = data["crossover"][op]
    if Ns.min() <= n_star <= Ns.max():
        ax.axvline(n_star, color=plots.PALETTE["accent"], lw=1.5, ls=":",
                   label=f"model crossover N ≈ 2^{math.log2(n_star):.1f}")
    if reference is not None and reference.get("series"):
        rop = reference["op"]
        drawn = []
        for name, ls in ((rop, ":"), ("complex_activation", "-.")):
            pts = reference["series"].get(name)
            if pts:
                drawn.append(ax.plot(reference["Ns"], [p["median"] * 1e6 for p in pts], ls, lw=1.6,
                                     color=plots.PALETTE["reference"])[0])
        if drawn:  # one legend row for both recorded lines: the legend must not grow over the data
            drawn[0].set_label(f"recorded {reference.get('machine_short', '')}: {rop} (dotted)"
                               + (", complex_activation (dash-dot)" if len(drawn) > 1 else ""))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    _no_minor_ticks(ax)
    ax.set_xlabel("N (elements)")
    ax.set_ylabel("µs per call (median)")
    mc = data["measured_crossover"].get(op)
    if mc:
        i = data["Ns"].index(mc)
        ax.plot([mc], [data["series"][op][i]["median"] * 1e6], "s", ms=11, mfc="none", mec=plots.PALETTE["accent"],
                mew=2, label=f"{op} leaves its floor (2× floor) at N = {_exp_label(mc)}")
    where = data.get("machine_short", "recorded") if data.get("recorded") else "here"
    ax.set_title(f"{op}: flat at {fmt_seconds(data['floors_s'][op])} (overhead), then ∝ N (bandwidth); "
                 f"model crossover N ≈ 2^{math.log2(n_star):.1f} — {where}", fontsize=15)
    lines = [f"at N={_exp_label(data['Ns'][-1])} (copy here: {bw / 1e9:.1f} GB/s):"]
    for name in data["series"]:
        eff = effective_bandwidth(data, name)
        lines.append(f"  {name}: {eff / 1e9:.1f} GB/s effective, {regime_at(data, name, data['Ns'][-1])}")
    ax.text(0.01, 0.98, "\n".join(lines), transform=ax.transAxes, ha="left", va="top", fontsize=12,
            bbox=dict(facecolor="white", alpha=0.85, edgecolor="none"), color="#333333")
    # under the text box, left of the data (which climbs to the upper right)
    ax.legend(loc="upper left", bbox_to_anchor=(0.0, 0.76), fontsize=11, framealpha=0.9, ncols=2, columnspacing=1.0)
    plots.stamp_figure(fig, data, reference)
    return fig


def _regimes_controls(kind: str) -> list:
    blo, bhi = SWEEP_EXP[kind]
    dlo, dhi = SWEEP_DEFAULT[kind]
    controls = [Choice("op", "add", options=list(OPS)),
                Pow2Range("N_range", (2**dlo, 2**dhi), label="N range", lo=blo, hi=bhi),
                Choice("dtype", "float32", options=DTYPES)]
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
    t = {n: p["p10"] for n, p in zip(d["Ns"], d["series"][d["op"]])}
    hi = d["Ns"][-1]
    big = hi if big is None else big
    small = hi // -small if small < 0 else small
    return t[big] / t[small] if big in t and small in t else None


# Flat at small N, then growing with N (on a GPU ∝ N: the band of the GPU test)
regimes_claims = Claims(
    Claim("{d[op]} is flat at small N: 2^8 elements cost under {threshold:g}× what 2^4 cost",
          lambda d: _p10_ratio(d, 2**8, 2**4), "<", 2.0, key="flat"),
    Claim("{d[op]} ∝ N at the top: 4× the elements cost {lo:g}–{hi:g}× the time",
          lambda d: _p10_ratio(d, None, -4), "within", {"gpu": (2.5, 6.0)}, key="linear"),
    Claim("{d[op]} is no longer flat at the top: 16× the elements cost over {threshold:g}× the time",
          lambda d: _p10_ratio(d, None, -16), ">", {"cpu": 4.0}, key="rising"),
)


regimes = Demo(
    "regimes", "Regimes",
    controls=_regimes_controls, measure=measure_regimes, figure=figure_regimes, run_button=True, opens="kept",
    match=("dtype",), record_quick={"N_range": (2**SWEEP_QUICK[0], 2**SWEEP_QUICK[1])},
    # the profiler's first start and the regimes panel's machine constants
    warm=[{"N_range": (2**SWEEP_QUICK[0], 2**SWEEP_QUICK[1])}], claims=regimes_claims,
)
