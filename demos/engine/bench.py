"""Every workload × every working backend: the numbers behind the deck, without Jupyter."""
from __future__ import annotations

import sys
import time
from typing import Callable, Iterable

from demos.engine.devices import BACKENDS, working_backends
from demos.engine.errors import DemoError, is_oom, one_line, release_memory
from demos.engine.results import Record, Row
from demos.engine.timing import compile_seconds, first_call, fmt_seconds, measure
from demos.engine.workload_defs import WORKLOADS, check_backend, get
from demos.engine.workloads import clear_input_cache, prepare


def run_one(
    workload: str,
    backend: str,
    params: dict | None = None,
    dtype: str = "float32",
    *,
    budget_s: float = 0.3,
    reset: bool = True,
    **prepare_kw,
) -> Row:
    """Measure one workload on one backend: first call (compile) apart from steady state.

    Never raises for expected failures: they come back as a row with ``error`` set.
    """
    w = get(workload)
    check_backend(backend)
    from demos.engine.devices import torch_device

    device = prepare_kw.pop("device", None) or torch_device()
    try:
        params = w.resolve(params, "cpu" if device == "cpu" else "gpu")
    except DemoError as exc:
        return Row(w.name, backend, dict(params or {}), dtype, device, error=str(exc))
    try:
        if reset and backend == "torch_compile":
            import torch._dynamo

            torch._dynamo.reset()  # count this compile from scratch (disk caches may be warm)
        prep = prepare(w, backend, params, dtype, device=device, **prepare_kw)
        first, _ = first_call(prep.fn, prep.sync)
        t = measure(prep.fn, prep.sync, warmup=1, budget_s=budget_s)
        compile_s = compile_seconds(first, t.median) if backend in ("torch_compile", "jax_jit") else None
        return Row(w.name, backend, params, dtype, device, t.median, t.p10, t.p90, t.n, compile_s,
                   extra={"first_s": first})
    except Exception as exc:
        if is_oom(exc):
            clear_input_cache()
            release_memory()
            sizes = ", ".join(f"{k}={v:,}" for k, v in params.items())
            return Row(w.name, backend, params, dtype, device, error=f"out of memory at {sizes} (memory released)")
        return Row(w.name, backend, params, dtype, device, error=one_line(exc))


def bench(
    workloads: Iterable[str] | None = None,
    backends: Iterable[str] | None = None,
    *,
    quick: bool = False,
    dtype: str = "float32",
    budget_s: float = 0.3,
    record: Record | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> Record:
    names = [get(n).name for n in (workloads or WORKLOADS)]
    bk = [check_backend(b) for b in (backends or BACKENDS)]
    ok = set(working_backends())
    record = record or Record.new(label="bench" + (" --quick" if quick else ""))
    todo = [(n, b) for n in names for b in bk]
    for i, (name, backend) in enumerate(todo):
        if progress:
            progress(i, len(todo), f"{name} · {backend}")
        w = get(name)
        params = {p.name: p.quick for p in w.params} if quick else None
        if backend not in ok:
            from demos.engine.devices import backend_status, torch_device

            st = backend_status()[backend]
            record.add(Row(name, backend, w.resolve(params), dtype, torch_device(),
                           error=f"{st['detail']} — {st.get('fix', '')}"))
            continue
        record.add(run_one(name, backend, params, dtype, budget_s=budget_s))
    if progress:
        progress(len(todo), len(todo), "done")
    clear_input_cache()
    return record


def table(record: Record) -> str:
    """A fixed-width table: workload, backend, size, median, spread, speedup, compile s."""
    head = f"{'workload':<19} {'backend':<14} {'size':<26} {'median':>10} {'p10–p90':>21} {'vs eager':>9} {'compile':>9}"
    lines = [head, "-" * len(head)]
    for r in record.rows:
        size = ",".join(f"{k}={v}" for k, v in r.params.items())
        if not r.ok:
            lines.append(f"{r.workload:<19} {r.backend:<14} {size:<26} error: {r.error}")
            continue
        eager = record.get(workload=r.workload, backend="torch_eager", dtype=r.dtype, params=r.params)
        speed = f"{eager.median_s / r.median_s:.2f}×" if eager and eager.ok else "—"
        spread = f"{fmt_seconds(r.p10_s)}–{fmt_seconds(r.p90_s)}"
        comp = f"{r.compile_s:.2f} s" if r.compile_s is not None else ""
        lines.append(f"{r.workload:<19} {r.backend:<14} {size:<26} {fmt_seconds(r.median_s):>10} {spread:>21} {speed:>9} {comp:>9}")
    return "\n".join(lines)


def text_progress(stream=sys.stderr) -> Callable[[int, int, str], None]:
    """A one-line progress bar for terminals (and plain logs)."""
    start = time.perf_counter()

    def show(i: int, n: int, what: str) -> None:
        width = 28
        filled = int(width * i / max(n, 1))
        bar = "█" * filled + "·" * (width - filled)
        end = "\n" if i >= n else ""
        cr = "\r" if stream.isatty() else ""
        msg = f"{cr}[{bar}] {i}/{n} {time.perf_counter() - start:6.1f}s  {what:<40}"
        stream.write(msg + (end if cr else "\n"))
        stream.flush()

    return show


def figure(record: Record, dtype: str = "float32"):
    """Median latency per workload and backend (log scale) with p10–p90 whiskers.

    Pure: draws any record, live or recorded, the same way.
    """
    import numpy as np

    from demos.engine.plots import color, figure as new_figure, label, machine_stamp, stamp

    rows = [r for r in record.rows if r.dtype == dtype]
    names = list(dict.fromkeys(r.workload for r in rows))
    backends = [b for b in BACKENDS if any(r.backend == b for r in rows)]
    fig, ax = new_figure()
    width = 0.8 / max(len(backends), 1)
    for j, b in enumerate(backends):
        xs, med, lo, hi = [], [], [], []
        for i, n in enumerate(names):
            r = next((r for r in rows if r.workload == n and r.backend == b and r.ok), None)
            if r is None:
                continue
            xs.append(i + (j - (len(backends) - 1) / 2) * width)
            med.append(r.median_s * 1e6)
            lo.append((r.median_s - r.p10_s) * 1e6)
            hi.append((r.p90_s - r.median_s) * 1e6)
        ax.bar(xs, med, width, color=color(b), label=label(b), yerr=[lo, hi], capsize=3)
    ax.set_xticks(np.arange(len(names)), names)
    ax.set_yscale("log")
    ax.set_ylabel("median latency per call (µs)")
    ax.legend(ncols=len(backends), loc="upper left", fontsize=12.5)
    sizes = "; ".join(f"{n}: " + ",".join(f"{k}={v}" for k, v in next(r for r in rows if r.workload == n).params.items())
                      for n in names)
    stamp(fig, machine_stamp(record.machine, f"{dtype} · {sizes}", record.created))
    return fig
