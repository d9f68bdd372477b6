"""Build slides/05_the_bill.ipynb (run from the repo root: .venv/bin/python slides/src/05_the_bill.py)."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from demos.deck.nbtools import code, md, notes, setup, slide, write  # noqa: E402

CELLS = [
    slide("""
# Part 5 — The bill
## Compile latency · recompilation · numerics · when to compile

*Everything on these slides is measured on the machine running them.*
"""),
    setup("""
from demos.topics import recompilation, numerics
"""),
    slide("""
## Agenda

1. What compiling costs — the four line items
2. Compile latency: cold cache, warm cache, break-even
3. Recompilation, live: guards, the limit, four ways out
4. Numerics: same formula, slightly different answer
5. Judgment: compile, or stay eager?
"""),
    slide("""
## The bill, line by line

| cost | why it happens | what helps |
|---|---|---|
| first-call latency | capture, code generation, building kernels | persistent caches, long runs |
| recompiles | guards specialise on shapes | buckets, dynamic shapes |
| opaque debugging | errors point into generated code | develop eager, compile late |
| numerics | fused ops round differently | know the tolerance |

<small>Source: seed card "The bill" (course notes, §04), restated.</small>
"""),
    slide("""
## Where the first call's time goes

- **torch.compile**: Dynamo captures bytecode → AOTAutograd → Inductor writes C++ (CPU) or Triton (GPU) → build
- **jax.jit**: trace to a jaxpr → lower to StableHLO → XLA compiles
- Caches: in memory (per process) and on disk (Inductor FX-graph cache, JAX persistent cache)
- *Cold* = fresh process **and** empty disk caches — what a new machine pays
- The seed's rule of thumb: a 1.3× speedup repays minutes of compiling within hours
"""),
    slide("""
## Live: cold vs warm compile, and break-even
"""),
    code("recompilation.compile_latency()"),
    notes("""
Press **Run**. Two fresh Python processes run one after the other: the first with empty temporary
cache directories (Inductor, Triton, AOTAutograd, JAX), the second reusing what the first wrote.
Bars split the first call where the framework tells us: Dynamo capture vs Inductor build for torch;
trace+lower vs XLA compile for JAX. The right plot divides compile time by the time saved per call.

- CPU (2 cores): torch.compile cold ≈ 10–15 s, warm cache ≈ 2 s; jax.jit tens of ms. The CPU
  speedup of a small elementwise workload is small and noisy, so torch's break-even lands anywhere
  from hundreds to tens of thousands of calls — say that out loud; it is the point.
- GPU: cold Inductor compile includes Triton autotuning/builds (seconds); the speedup is larger
  (fusion), so break-even drops to hundreds–thousands of calls.
- Slow? Each run takes 10–30 s on a laptop CPU; talk over the progress bar. The figure already
  shown (from the export) is the default run.
"""),
    slide("""
## Guards: why a new shape means a new compile

```python
f = torch.compile(step, dynamic=False)
f(torch.randn(4, 64, 64))   # compiles; guard: x.size(1) == 64
f(torch.randn(4, 65, 64))   # guard fails → recompile
# after 8 compiles (recompile_limit): new shapes
# run eager — a warning in the log, nothing else
```

- JAX: `jit` keys its cache on shapes and dtypes — every new shape is a new trace + compile
"""),
    slide("""
## Live: recompilation as it happens
"""),
    code("recompilation.recompile_live()"),
    notes("""
Move the **S** slider: each move is one call of a small compiled step on a (B, S, D) input. Orange bars
are calls that compiled; the big number counts compiles; the side text shows *why* (the failed guard
for torch, the cache-miss explanation for JAX). **Auto-sweep** walks 24 calls over 12 lengths.

- `dynamic=False`: eight orange spikes, then a dashed line — the recompile limit. From there new
  shapes run **eager, silently** (red bars). Switch the mode to *auto dynamic* (two compiles: the
  second is symbolic, marked `*`), *mark_dynamic* (one), *buckets* (one per bucket), *jax.jit*
  (one per shape).
- CPU: a compile spike is ~1 s (less once the disk cache is warm); cached calls are ~0.1–1 ms.
  GPU: spikes of seconds, cached calls tens of µs — the contrast is starker.
- Slow? Use Reset and fewer slider moves; Auto-sweep shows progress as it goes.
"""),
    slide("""
## Four ways to live with changing shapes

- `dynamic=False`: one compile per shape — until the limit
- default (automatic dynamic): a second compile with a symbolic length, then none
- `torch._dynamo.mark_dynamic(x, 1)`: symbolic from the start — one compile
- pad to buckets: one compile per bucket, a little wasted work on padding
- JAX: `jit` compiles per shape; pad to buckets to bound it
"""),
    slide("""
## Live: every mode on the same sweep
"""),
    code("recompilation.compare_modes()"),
    notes("""
Press **Run**: the same 24 calls (12 distinct lengths) under every mode, each with a fresh function so
counts start from zero. Left: compiles per mode (dashed: the recompile limit). Right: total time of the
sweep (orange: calls that compiled), with "× eager" and the steady-state call written beside each bar.

- What to point at: `dynamic=False` is the slowest row by far — recompiling on every new shape costs
  more than it saves: the recurring trap. Automatic dynamic ≤ 2 compiles; buckets one per bucket.
- CPU: the run takes 15–40 s (most of it the eight static compiles). GPU: similar counts, larger
  compile seconds, smaller steady-state calls.
- Slow? Lower "distinct lengths" before pressing Run.
"""),
    slide("""
## The recurring trap

- A model that recompiles every step pays a compile per step and never reaches steady state
- It is slower than eager **and** harder to debug
- After the limit it silently becomes eager — the speedup just disappears
- Watch it: `TORCH_LOGS=recompiles`, or count compiles as this deck does
- Fix: bucket or mark the dynamic dimension before celebrating a compile

<small>Seed card "The bill" (§04) calls this the worst point on the curve; the table above is ours.</small>
"""),
    slide("""
## Numerics: same formula, slightly different answer

- Floating-point addition is not associative: a different order gives different last bits
- A fused kernel keeps intermediates in registers (float32 even for bfloat16 tensors)
- Eager rounds every intermediate tensor to its dtype
- Expect: float32 within rtol = atol = 2e-3; bfloat16 within 5e-2 (this deck's tolerance)
"""),
    slide("""
## Live: compiled vs eager, against the tolerance
"""),
    code("numerics.live()"),
    notes("""
Left: the largest difference between compiled and eager, as a share of the tolerance (dashed line = 1).
Right: each form's distance from a float64 evaluation of the same inputs.

- Default: `complex_activation` in bfloat16. On this CPU about one element in six differs (by up to
  0.0625), and torch.compile is *closer* to float64 than eager — fusing skipped the bf16 roundings.
  In float32 the differences are ~1e-6. JAX on CPU: jit and op-by-op often agree bit for bit.
- GPU: the same pattern; exact numbers differ per kernel.
- Slow? The first toggle of a workload compiles (a few s on CPU); `make warm` pre-compiles them.
"""),
    slide("""
## Judgment: compile, or stay eager?

- **Compile**: long runs, static or bucketable shapes, serving at fixed shapes, many small pointwise ops
- **Stay eager**: active development, highly dynamic shapes, short experiments
- The numbers from this machine:

<small>Guidance: seed card "Judgment" (§05), in our words.</small>
"""),
    code("recompilation.verdict()"),
    notes("""
The list is computed from the cells above (this session's compile-latency and every-mode runs).
Read out the break-even count and ask: how many calls does your job make? Then the static sweep's
"× eager" — that is the recurring trap in one number. If the list is empty, the Run cells were not run:
say so and use the figures shown in the export.
"""),
    slide("""
## What to remember

- The first call pays for compiling; a warm disk cache pays much less
- Compiling is worth it only after enough calls: count them (break-even)
- Every new shape is a recompile unless you bucket or go dynamic; after 8, silently eager
- Compiled results differ in the last bits — compare with a tolerance, not `==`
"""),
    md("""
[Back to the start: Part 1 — Eager mode →](01_eager_mode.ipynb)
"""),
]


def main() -> None:
    path = write(ROOT / "slides" / "05_the_bill.ipynb", CELLS, "Part 5 — The bill")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
