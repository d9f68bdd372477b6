"""Build slides/02_what_compilers_do.ipynb (run from the repo root:
.venv/bin/python slides/src/02_what_compilers_do.py)."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from demos.deck.nbtools import code, notes, setup, slide, write  # noqa: E402

CELLS = [
    slide("""
# Part 2 — What a compiler does
## Fusion, buffer reuse, relayout, dead-code elimination

*Each optimisation is shown happening — and measured — on the machine running these slides.*
"""),
    setup("""
from demos.topics import fusion
"""),
    slide("""
## Agenda

1. Why seeing the whole function changes what is possible
2. Kernel fusion: counts, timeline, latency and bandwidth
3. Buffer reuse: how much memory one call needs
4. Relayout: the compiler picks the memory order
5. Dead-code elimination: work nobody asked for disappears
"""),
    slide("""
## From one op at a time to the whole function

- Eager: each op is optimal **on its own**, but the hand-offs between ops are not
- `torch.compile` and `jax.jit` trace the **whole function** before running it
- With the full graph a compiler can **fuse** ops, **reuse** buffers,
  **choose layouts** and **delete** unused work
- The price: a compile step first (Part 3 weighs it), and traceable code

<small>Source: seed chapter "Optimizations" (book), restated.</small>
"""),
    slide("""
## Kernel fusion

```python
def complex_activation(x, y):
    a, b = torch.sin(x), torch.cos(y)
    return torch.relu((a * b + x) * y)
```

- Eager: 6 kernels, each reads its inputs from memory and writes a full result back
- Fused: read `x` and `y` once, do all six steps in registers, write once
- Reported by the seed on its GPU, N = 20M: **6 kernels → 1**, **731 µs → 144 µs**

<small>Source: seed chapter "Optimizations" (flame graph; GPU not named).</small>
"""),
    slide("""
## Live: how many kernels per call?
"""),
    code("fusion.kernels()"),
    notes("""
**Say:** four ways to run the same function. Torch eager is counted by the profiler (aten ops
issued); torch.compile by reading the code Inductor generated (kernels plus library calls);
JAX op-by-op by its jaxpr (each equation dispatched alone); jax.jit by the entry computation of
XLA's optimized HLO. On the right: the lines that actually run — one `cpp_fused_…` call on a
CPU, one `fusion` in the HLO.

**On a GPU:** eager 6 CUDA kernels; compiled 1 `triton_poi_fused_…` kernel.
**On a CPU:** eager 6 aten ops; Inductor emits one fused C++/OpenMP kernel.
Switch the workload: `mlp_dead_code` shows 2 `extern mm` calls plus 1 fused kernel;
`mlp_block` keeps its matmuls as library calls and fuses the elementwise rest.

**If slow:** the first switch to a workload compiles it (~5 s on a CPU, progress shown);
`make warm` fills the caches beforehand.
"""),
    slide("""
## Live: the two lanes, eager above compiled
"""),
    code("fusion.timeline()"),
    notes("""
**Say:** one call each, on one time axis. Eager: six bars one after another (sin, cos, mul,
add, mul, relu). Compiled: one region on the host and one kernel doing all six steps.
The title gives kernel counts and the span of each call.

**On a GPU:** eager shows six short kernels with launch gaps; compiled one kernel —
the seed's 731 µs → 144 µs story.
**On a CPU:** there is no separate device; the "device" lane is the host thread running each
op. The fused C++ kernel is visible because the demo compiles it with kernel profiling on.

**If slow:** the first redraw starts the profiler (~1 s). Keep N at 2^19–2^21 on a CPU.
"""),
    slide("""
## Live: latency, speedup, bandwidth
"""),
    code("fusion.latency()"),
    notes("""
**Say:** median latency per call (log scale) with p10–p90 whiskers, four forms, the speedup of
each compiled form over its eager twin, and the seed's reported pair beside ours (dotted).
Right: bandwidth achieved = bytes each form must move ÷ its median time; eager moves 15N
elements, fused 3N.

**On a GPU:** at 20M the eager form is bandwidth-bound six times over; expect a speedup of
several × and the fused kernel near the copy bandwidth.
**On a CPU:** torch.compile beats eager at the default sizes (checked by a test at 2^21);
XLA's CPU sin/cos are slow, so jax.jit is much slower than torch.compile here and its speedup
over JAX op-by-op is smaller. Say it as measured.

**If slow:** each redraw times four forms for ~0.2 s; a new N compiles once (≤1 s).
A noisy shared machine widens the whiskers: read the medians.
"""),
    slide("""
## Buffer reuse

- Eager keeps every intermediate: `a`, `b`, `c`, `d`, `e` and the output — **6 buffers of N**
- A compiler knows each value's last use, so it can write into dead memory:
  - `c = a·b` can overwrite `a` (or `b`); `d = c + x` can overwrite `c`
  - `e = d·y` and `relu(e)` can be done in place
- Fused code needs no intermediate buffers at all: only the output

<small>Source: seed chapter "Optimizations", "Buffer reuse" (restated).</small>
"""),
    slide("""
## Live: memory for one call
"""),
    code("fusion.memory()"),
    notes("""
**Say:** memory allocated during one call, above the inputs. Torch eager: the profiler's
allocation events — six new N-sized buffers, one per op. torch.compile: one buffer, the
output (listed from its generated code). jax.jit: `memory_analysis()` of the compiled
function — zero temporaries, one output. JAX op-by-op: every op's result stays alive until the
function returns (counted from the jaxpr).

**On a GPU:** torch's numbers come from `torch.cuda.max_memory_allocated`; same picture.
**On a CPU:** the profiler's memory view; same 6× vs 1×.

**If slow:** it is one profiled call per form; bigger N only scales the bars.
"""),
    slide("""
## Relayout

- Hardware prefers certain memory orders (TPU matrix units work on 8×128 tiles)
- An einsum over `(64, 4, 1024)` where 4 is a **batch** dimension (e.g. heads)
  is awkward: the batch sits in the middle
- `jax.jit` may transpose it to `(4, 64, 1024)` under the hood, run a batched
  matmul, and transpose back — the code you wrote does not change
- Whether it does depends on the backend: the figure says what XLA chose here

<small>Source: seed chapter "Optimizations", "Relayout" (TPU example).</small>
"""),
    slide("""
## Live: where does XLA put the heads?
"""),
    code("fusion.relayout()"),
    notes("""
**Say:** `einsum('bhd,hdk->bhk')` with the seed's (64, 4, 1024) operand. Right: an excerpt of
XLA's optimized HLO — orange lines are the transposes it inserted (the operand becomes
(4, 1024, 64) before the batched dot, and the result is transposed back). Left: the jitted
einsum as written vs with the operand already stored heads-first.

**On a GPU:** XLA picks cuBLAS-friendly layouts; the excerpt may show fewer or different
transposes — read the verdict line, it is computed from the HLO.
**On a CPU:** XLA's CPU backend inserts the transposes; storing the data heads-first skips them.

**If slow:** each redraw compiles nothing new after the first visit of a shape (~0.3 s).
"""),
    slide("""
## Dead-code elimination

```python
def mlp(x, gating0, gating1, linear):
    y = x @ gating0
    unused = x @ gating1      # never read, no side effect
    return torch.relu(y) @ linear
```

- Nothing uses `unused`, and computing it has no effect outside the function
- A compiler deletes it: the seed's trace shows **2 GEMMs, not 3**

<small>Source: seed chapter "Optimizations" (b, d, f = 512, 2048, 4096, bf16).</small>
"""),
    slide("""
## Live: three matmuls written, two executed
"""),
    code("fusion.dead_code()"),
    notes("""
**Say:** left, matmuls per call: eager runs all three (profiler: `aten::mm`), torch.compile's
generated code calls `extern_kernels.mm` twice; the jaxpr still has three `dot_general`s,
XLA's optimized HLO has two. Right, the time: the compiled forms do 2/3 of the FLOPs.

**On a GPU:** the profiler shows 3 GEMM kernels eager, 2 compiled, as in the seed's trace.
**On a CPU:** same counts; the time saved is roughly the third matmul, blurred by noise.

**If slow:** B moves the matmul size; keep B ≤ 512 on a CPU.
"""),
    slide("""
## What to remember

- A compiler sees the whole function — and rewrites it
- **Fusion**: many kernels → one; memory traffic ~15N → 3N elements here
- **Buffer reuse**: intermediates die in registers, not in fresh buffers
- **Relayout**: the compiler chooses memory order for the hardware
- **Dead code**: unused work is deleted — 3 matmuls → 2

[Next: Part 3 — When compilation pays →](03_when_compilation_pays.ipynb)
"""),
]


def main() -> Path:
    return write(ROOT / "slides" / "02_what_compilers_do.ipynb", CELLS, "Part 2 — What a compiler does")


if __name__ == "__main__":
    print(main())
