"""Build slides/01_eager_mode.ipynb (run from the repo root: .venv/bin/python slides/src/01_eager_mode.py)."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from demos.deck.nbtools import code, notes, setup, slide, write  # noqa: E402

CELLS = [
    slide("""
# Part 1 — Eager mode
## An interpreter, asynchronous dispatch and launch overhead

*Every number on these slides is measured on the machine running them.*
"""),
    setup("""
from demos.topics import eager
"""),
    slide("""
## Agenda

1. What "eager" means: one op at a time, queued, run asynchronously
2. Live: the timeline of six small ops
3. What each op costs beyond its arithmetic — and the timing trap
4. Why an interpreter cannot fuse
5. Live: three regimes — overhead, bandwidth, compute
"""),
    slide("""
## Eager mode is an interpreter

- Python runs your function line by line; each tensor op is **issued** on its own
- On a GPU the host only **queues** the kernel and moves on to the next line
- The device drains the queue **asynchronously**, behind the host
- The host waits only at a **synchronisation point** (`.item()`, printing, `block_until_ready()`)
- PyTorch and JAX both run this way unless you compile (`torch.compile`, `jax.jit`)

<small>Source: seed chapter "Eager mode" (book, restated).</small>
"""),
    slide("""
## Six ops, six kernels

```python
def complex_activation(x, y):
    s, c = torch.sin(x), torch.cos(y)   # 2 ops
    t = s * c + x                       # 2 ops
    return torch.relu(t * y)            # 2 ops
```

- Each op becomes its own kernel, reading and writing whole tensors
- The seed profiled this at N = 20·2²⁰ on its author's GPU: **6 kernels, 731 µs**

<small>Source: seed chapter "Eager mode" (profiler trace, GPU not named).</small>
"""),
    slide("""
## Live: the eager timeline
"""),
    code("eager.timeline()"),
    notes("""
**Say:** top lane is what the Python thread did, bottom lane is where the work ran. The title
counts what the profiler saw: six aten ops issued (sin, cos, mul, add, mul, relu), six kernels.
`relu` is one aten op whose own kernel is `clamp_min`: we count what the user's code issued.

**On a GPU:** the host lane is short launches; the device lane is six kernels that start while
the host is still issuing; the host then sits in `cudaDeviceSynchronize` (hatched "wait").
Small N (2^10–2^14): kernels are shorter than launches, the GPU idles between them.
**On a CPU:** there is no separate device — the two lanes coincide, the host runs each op
itself; the gaps between bars are Python and dispatch. Slide N down to 2^10 to see gaps
comparable to the ops.

**If slow:** large N on a CPU takes ~1 s per redraw; stay at 2^16. A first redraw after
launching the kernel includes profiler start-up (~1 s); `make warm` does it beforehand.
"""),
    slide("""
## What an op costs beyond its math

- Python → C++ dispatch: find the kernel for these dtypes and devices
- Shape checks, output allocation, autograd bookkeeping
- A kernel launch (on a GPU)
- On a GPU, together often **10–30 µs per op** for a kernel that may run **5 µs**
- Big kernels hide it behind asynchrony; small ones expose it as idle gaps

<small>Source: seed course notes §01 "What eager mode actually pays" (figures as reported there).</small>
"""),
    slide("""
## The timing trap

- Asynchronous dispatch: a call **returns before its work is done**
- A clock stopped at return measures the queueing, not the work
- The seed's lecture timed a jitted JAX function on a GPU:
  **76 µs** without blocking, **205 µs** with `block_until_ready()`
- Rule: synchronise, then stop the clock (`torch.cuda.synchronize()`, `block_until_ready()`)

<small>Source: seed lecture notebook (JAX `two_matmuls`, 256×1024 · 1024×2048 · 2048×1024).</small>
"""),
    slide("""
## Live: the same call, two clocks
"""),
    code("eager.sync_trap()"),
    notes("""
**Say:** each call is timed twice — the clock read when the call returns, and again after
synchronising. Same calls, two numbers; the label under each pair is the ratio.

**On a GPU:** both torch eager and jax.jit return long before the GPU finishes: the
unsynchronised bar is a fraction of the real time (the seed saw 76 vs 205 µs for JAX).
**On a CPU:** torch runs each op before returning, so its ratio is ≈ 1 — no trap. JAX still
dispatches asynchronously on the CPU, so its unsynchronised number is far too small there too.
The y axis is logarithmic. CPU sizes are small (the seed's sizes on a GPU) so a redraw stays
under half a second; torch is measured first because XLA's CPU threads keep spinning for a
moment after a JAX call and slow whatever runs next on a 2-core machine.

**If slow:** each redraw measures for ~0.3 s; switching workload the first time compiles a
jax.jit (~1 s on a CPU) — `make warm` compiles both beforehand.
"""),
    slide("""
## Why an interpreter cannot fuse

- It sees **one op at a time** — never the chain
- So every op writes its result to memory and the next op reads it back
- k pointwise ops → **k launches** and about **2k passes** over memory
- `complex_activation`: 15 passes over N elements eager, 3 if fused (read x, y; write out)
- Removing the round trips needs the whole chain: a **graph** → Part 2

<small>Source: seed course notes §01 and §02 ("k ops → k launches + 2k round-trips"); our pass count.</small>
"""),
    slide("""
## Three regimes

- **Overhead-bound**: tiny tensors — time is dispatch and launch, flat in N
- **Memory-bandwidth-bound**: big pointwise ops — time ≈ bytes moved ÷ bandwidth, ∝ N
- **Compute-bound**: enough math per byte (large matmuls) — time ≈ FLOPs ÷ peak
- Pointwise chains never get there: ≤ 1 FLOP per byte (ours: 0.1 eager, 0.5 fused, float32) — Part 3
- Where the first two meet depends on the machine — measure it
"""),
    slide("""
## Live: latency vs N — overhead floor, then bandwidth
"""),
    code("eager.regimes()"),
    notes("""
**Say:** blue is one op, orange is eager complex_activation (six ops). Dashed lines are a model
built from two measurements on this machine: latency at N=1 (the floor) and copy bandwidth
(bytes ÷ that bandwidth). Left: flat — overhead. Right: ∝ N — bandwidth. The dotted line is
where the model's two lines cross; the square is where the measured op leaves its floor.

**On a GPU:** floor ≈ launch + sync (~10 µs); flat up to ~2^16–2^18, then on the bandwidth
line (TB/s). complex_activation sits ~6× above one op on the floor.
**On a CPU:** floor ≈ 1–2 µs; small tensors live in the caches and stay under the DRAM
line. Every eager op allocates its output; on Linux a tensor of 32 MiB or more gets fresh
pages from the OS each time (page faults), which puts the top of the curve above the copy
line — the box says which regime the largest N is in. The sweep uses one torch thread by
default (switch to "all": on a busy machine, waking the second thread can cost milliseconds
per op — a third kind of overhead).

**If slow:** press **Run** only once; the sweep takes several seconds on a CPU (progress bar);
points already measured are reused, so moving the range slider and pressing Run is quick.
"""),
    slide("""
## What to remember

- Eager = an interpreter: one op issued at a time, run asynchronously on a GPU
- Every op pays dispatch (+ launch): a floor that dominates small tensors
- Time only after synchronising — or you measure the queue
- No fusion in eager: k ops → k kernels → ~2k passes over memory
- Overhead-bound → bandwidth-bound as N grows; where it turns is machine-specific

[Next: Part 2 — What a compiler does →](02_what_compilers_do.ipynb)
"""),
]


def main() -> Path:
    return write(ROOT / "slides" / "01_eager_mode.ipynb", CELLS, "Part 1 — Eager mode")


if __name__ == "__main__":
    print(main())
