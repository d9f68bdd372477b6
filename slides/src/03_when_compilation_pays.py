"""Build slides/03_when_compilation_pays.ipynb (run from the repo root:
.venv/bin/python slides/src/03_when_compilation_pays.py)."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from demos.deck.nbtools import code, md, notes, setup, slide, write  # noqa: E402

CELLS = [
    slide("""
# Part 3 — When compilation pays
## Three workloads, three outcomes — and the roofline that explains them

*Every number on the live slides is measured on the machine running them.*
"""),
    setup("""
from demos.topics import roofline
"""),
    slide("""
## Agenda

1. Three programs, three very different payoffs
2. The roofline: FLOPs, bytes, and which one limits you
3. This machine's roofline, measured — and where compiling moves a program on it
4. Predicted vs measured: when the model is wrong, and why
5. Overheads: what `mode="reduce-overhead"` removes (and where it cannot)
"""),
    slide("""
## What the seed lecture measured

| program | torch eager | torch.compile | jax.jit |
|---|---|---|---|
| `relu(X@A)@B` (256×1024, 1024×2048) | 183 µs | 214 µs | 205 µs |
| pointwise chain, N = 10M | 549 µs | 81.9 µs | 124 µs |
| MLP block + LayerNorm | 22.5 ms | 14.4 ms | 14.8 ms |

- Matmuls: **nothing gained** (compiled was even slower); chain: **~7×**; MLP: **~1.5×**

<small>Reported in seed notebook 003, fp32 on an A100 (its Triton metadata: 108 SMs, cc 8.0);
the torch MLP run used TF32 matmuls.</small>
"""),
    slide("""
## Why would the same compiler give 0.9×, 1.5× and 7×?

- Two matmuls: the time is in the GEMMs — the library kernels were already excellent
- The chain: ten cheap ops, each one a full pass over memory in eager mode
- The MLP block: big GEMMs **plus** bias, GELU, residual and LayerNorm passes
- Compiling fuses the cheap passes; it cannot make a good GEMM much better
- Let's measure all three, here, in all three forms
"""),
    slide("""
## Live: three workloads, three outcomes
"""),
    code("roofline.payoff()"),
    notes("""
**Say:** bars are median time per call, whiskers p10–p90; the bold number is the speedup over torch
eager. Grey text in each panel is the seed's A100 result for comparison. Sliders: chain length N,
rows/tokens, model dim D, hidden dim H; dtype. A slider re-measures only the workloads it changes.

**GPU (seed sizes):** two_matmuls about 1× (the GPU test asserts compiled ÷ eager time within
0.7–1.4), the chain more than 2× faster compiled (the seed saw ~7×), MLP ~1.3–1.6× in the seed.

**CPU:** the chain still gains several-fold (the C++ loop fuses everything; the test asserts > 1.5×
and 1.5× more than two_matmuls gain); two_matmuls gains little (the test's band: compiled ÷ eager
within 0.5–2). jax.jit can be far ahead on a CPU when XLA's CPU GEMM is faster than torch's — a
library difference, not fusion (the roofline's peak measurement records both GEMM rates). On a
shared machine the whiskers get wide: point at the medians.

**If slow:** lower N or rows; the first move to a new size compiles (a few seconds on a CPU).
"""),
    slide("""
## The roofline model

- A program does **F** FLOPs and moves **B** bytes to and from memory
- Time ≥ max( F ÷ peak FLOP/s , B ÷ bandwidth )
- **Arithmetic intensity** I = F ÷ B (FLOP per byte); attainable FLOP/s = min(peak, I × bandwidth)
- Below the *ridge* I = peak ÷ bandwidth: memory-bound; above it: compute-bound
- Fusion removes bytes, not FLOPs: it moves a program **right**, and up if it was memory-bound

<small>Williams, Waterman & Patterson, "Roofline", CACM 2009; the measured-vs-predicted habit follows
the JAX scaling book's roofline chapter.</small>
"""),
    slide("""
## Counting by hand

- Chain (10 ops): eager moves 22 floats per element, fused reads 1 → **intensity ×22** (0.11 → 2.5 FLOP/B in fp32)
- Two matmuls at the seed's shape: 2.1 GFLOP over 27 MB eager, 23 MB fused → 79 → 93 FLOP/B: fusion only drops the ReLU pass
- Ridge points (spec sheets, fp32 / bf16): A100 ≈ 10 / 150, H200 ≈ 14 / 206 FLOP/B
- So the chain is deep in memory-bound land; the matmuls sit on the compute roof

<small>Counts from `demos.engine.workloads` (checked by tests); peaks from NVIDIA datasheets, dense.</small>
"""),
    slide("""
## Measuring this machine's roofs

- **Bandwidth**: copy a buffer far larger than the caches; bytes read + written ÷ time
- **Compute**: a big square GEMM per dtype, in torch and in JAX; the faster one sets the roof
- Peaks are best-decile throughputs (contention only ever slows a run down); latencies are medians
- fp32 peaks measured twice agree within ±35 % on a shared 2-core CPU, ±10 % on a GPU (tested)
- H100/H200/A100: the spec-sheet roofline is drawn dashed beside it; `make record` stores the peaks
"""),
    slide("""
## Live: a measured roofline
"""),
    code("roofline.roofline()"),
    notes("""
**Say:** the solid line is this machine's roof, measured a moment ago (copy bandwidth, best GEMM).
Each marker is one form of the workload: eager costed op by op, compiled costed fused. The arrow is
what torch.compile did: for the chain, ~22× to the right and up by the speedup.

**GPU:** the chain's eager point sits on the bandwidth slope; the compiled point moves right and up
toward the roof. The two matmuls sit near the compute roof (the GPU test: within 4× of the measured
peak) and barely move. The dashed line is the spec sheet: a copy typically reaches 80–90 % of its
bandwidth (the GPU test asserts at least half).

**CPU:** same geometry. Points sit further below the roof: transcendental math (tanh, exp) costs
many FLOPs each but the model counts one, and torch's CPU GEMM is slower than JAX's here.

**Controls:** size (the point moves as size changes; tiny sizes fall off the roof — overheads),
workload, dtype. **If slow:** stay at ×1 or smaller; a new size compiles once.
"""),
    slide("""
## Live: predicted vs measured
"""),
    code("roofline.predicted()"),
    notes("""
Press **Run** for another size or dtype (the default is drawn already). Each row: ◆ the roofline
prediction, ● the measured median, the ratio and a one-line reason.

**Expect:** ratios near 1–2 where a program really is at a roof (big GEMMs, compiled memory-bound
chains on a GPU). Large ratios say the model is missing something: fixed per-call overhead at small
sizes (pick ×1/64 to see it take over), reductions (LayerNorm, sum), transcendental math counted
as 1 FLOP. A ratio **below** 1 means the data came from cache, not memory (small sizes on a CPU).

**If slow:** nine measurements; ~2–5 s on a CPU, under a second on a GPU.
"""),
    slide("""
## Overheads removed differently

- Even a fused kernel pays a fixed cost per call: Python, guards, one launch
- `torch.compile(mode="reduce-overhead")` records the launches into a **CUDA graph** and replays it
- Win: small, launch-bound calls on a GPU (tens of µs → a few)
- A CPU has no kernel launches to record: the mode has nothing to remove
- Price: static memory addresses, re-recording per new shape, extra memory
"""),
    slide("""
## Live: reduce-overhead vs default, at small sizes
"""),
    code("roofline.overheads()"),
    notes("""
Press **Run** to re-measure (a sweep: ~5 s on a CPU, a few seconds on a GPU after warming).
Lines: median per call vs N for eager, default compile and reduce-overhead; the legend gives each
mode's floor (smallest size).

**GPU:** the reduce-overhead floor is clearly below the default compile's; both converge at large N,
where the kernel itself dominates.

**CPU:** the two compiled curves coincide within noise (there is no launch sequence to replay), and
at the smallest sizes eager can even beat both: the compiled call's guards cost more than six tiny
C++ loops. The title states which case you are looking at.
"""),
    slide("""
## What to remember

- Compiling pays where **memory passes** dominate: pointwise chains, norms, activations
- It gains little where **GEMMs** dominate: they were already at the compute roof
- Roofline: time ≥ max(FLOPs ÷ peak, bytes ÷ bandwidth); fusion moves a program right
- When measured ≫ predicted, look for overheads, reductions, or costly math
- CUDA graphs remove launch overhead on a GPU; on a CPU there is none to remove
"""),
    md("""
[Next: Part 4 — Inside the compilers →](04_inside_the_compilers.ipynb)
"""),
]


def main() -> Path:
    return write(ROOT / "slides" / "03_when_compilation_pays.ipynb", CELLS, "Part 3 — When compilation pays")


if __name__ == "__main__":
    print(main())
