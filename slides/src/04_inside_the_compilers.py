"""Build slides/04_inside_the_compilers.ipynb (run from the repo root:
.venv/bin/python slides/src/04_inside_the_compilers.py)."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from demos.deck.nbtools import code, notes, setup, slide, sub, write  # noqa: E402

CELLS = [
    slide("""
# Part 4 — Inside the compilers
## Capture, guards, graph breaks, generated code

*Every stage is opened live on the machine running these slides.*
"""),
    setup("""
from demos.topics import internals
"""),
    slide("""
## Agenda

1. Two bets: `torch.compile` captures what it can, XLA demands the whole program
2. The pipeline, stage by stage: graph → IR → generated kernels
3. Guards: the assumptions a compiled graph carries
4. Graph breaks: what each compiler does with an `if` on data
5. Fixing the break, and what the break costs
"""),
    slide("""
## Two bets

- **torch.compile**: Dynamo reads Python *bytecode*, captures what it can,
  runs the rest eagerly — almost any model compiles, maybe in pieces
- Each captured graph carries **guards**; a failed guard means a recompile
- Inductor turns graphs into kernels: **Triton** on a GPU, **C++/OpenMP** on a CPU
- **jax.jit / XLA**: the function must be pure and shape-static —
  in return XLA always gets the *whole* program to optimise

<small>Source: seed card "JIT Compilation" §02–03, restated.</small>
"""),
    sub("""
## One function, two pipelines

| torch.compile | jax.jit |
|---|---|
| Dynamo → **FX graph** + guards | tracing → **jaxpr** |
| AOTAutograd → ATen ops | lowering → **StableHLO** |
| Inductor → Triton / C++ kernels | XLA → **optimized HLO** (fusions) |

- The seed lecture dumped these with `TORCH_LOGS="output_code,guards"` and
  `jit(f).lower(x).compile().as_text()` — walls of log text
- Next slide: the same stages, readable and counted

<small>Source: seed lecture notebook "PyTorch and JAX", restated.</small>
"""),
    slide("""
## Live: the pipeline, side by side
"""),
    code("internals.pipeline()"),
    notes("""
**Say:** left is torch.compile, right is jax.jit, same workload, same inputs. Walk the stages
left to right: the FX graph Dynamo captured (plain torch calls, one line per op), the guards it
recorded, then Inductor's code — kernel bodies first, the wrapper's `call()` last. On the right:
the jaxpr (one equation per op), StableHLO, and XLA's optimized HLO where the ops sit inside one
`fused_computation` called once from ENTRY. The counts line is the summary: for
complex_activation, 1 graph, 1 generated kernel, 1 HLO fusion.

**On a GPU:** the kernel is `triton_poi_fused_…` (a Python Triton function with `tl.load` /
`tl.store`); the HLO fusion is a `kLoop` fusion that becomes one GPU kernel.
**On a CPU:** one `cpp_fused_…` C++/OpenMP loop (16-wide vector loads); same single HLO fusion.
Switch to `mlp_block`: matmuls stay library calls (`extern_kernels.mm` / HLO `dot`), the
elementwise rest is fused around them.

**If slow:** the first visit to a workload compiles it (5–10 s on a CPU, progress shown);
`make warm` compiles every workload beforehand; switching stages is instant.
"""),
    sub("""
## Reading generated code

- Kernel names list what was fused: `cpp_fused_add_cos_mul_relu_sin_0` = five ops in one loop
- The wrapper's `call()` is the launch plan: allocate `buf0`, launch, return
- Matmuls are usually **library calls** (`extern_kernels.mm`); fusion happens around them
- Reported on an A100: a pointwise chain + sum went **549 µs → 81.9 µs**
  as one Triton reduction kernel

<small>Source: seed lecture notebook "PyTorch and JAX" (A100).</small>
"""),
    slide("""
## Guards: assumptions, checked on every call

- A compiled graph is only valid for inputs like the ones it was traced with
- Dynamo records that as **guards**: dtype, shape, stride, device, `requires_grad`,
  even "`torch.sin` is still `torch.sin`"
- Every call runs the guards first (microseconds); all pass → cached code runs
- One fails → **recompile**, with the failed guard as the reason
- Seed card's example guard: `x.shape[0] == 32`

<small>Source: seed card "JIT Compilation" §03, §04.</small>
"""),
    slide("""
## Live: which guard fails?
"""),
    code("internals.guards()"),
    notes("""
**Say:** we compile `complex_activation` with `dynamic=False` and call it three times. Left:
the guards of the first call, in plain words (the raw tree has ~20 checks). Right: call 1
captures, call 2 with the same kind of inputs is a cache hit, call 3 changes one property.
Bottom line: the guard that failed, in Dynamo's own words, e.g. `tensor 'x' dtype mismatch.
expected Float, actual Double`. Pick "nothing" to show that fresh tensors with the same
properties do *not* recompile — guards check properties, not values.

**On a GPU:** the tensor guards say `cuda:0`; otherwise the same.
**On a CPU:** capture ≈ 0.1–0.5 s per compile; the cache hit is well under a millisecond
of guard checking plus the call.

**If slow:** this panel uses Dynamo only (no Inductor) so it redraws in well under a second;
Part 5 measures what a full recompile costs.
"""),
    slide("""
## Graph breaks

```python
def f(x):
    y = torch.sin(x) * 2.0
    if y.sum() > 0:          # Python needs a bool from data
        return torch.relu(torch.cos(y) * x + 1.0)
    return torch.relu(torch.tanh(y) * x - 1.0)
```

- Dynamo: graph ends at the `if`, Python decides, a second graph runs the branch
- JAX: tracing has no values — `jit` refuses with an error

<small>Source: seed card "JIT Compilation" §03–04 ("data-dependent control flow … breaks the graph or is forbidden").</small>
"""),
    slide("""
## Live: Dynamo's explanation vs jax.jit
"""),
    code("internals.graph_breaks()"),
    notes("""
**Say:** left is `torch._dynamo`'s explanation (the data of `torch._dynamo.explain`): graph count,
break count, the reason in plain words, the source line. Right is what `jax.jit` does with the
same function — the error is **expected** and shown on purpose: a `TracerBoolConversionError`,
because during tracing `y.sum()` is an abstract value with no sign. Switch to `print`: Dynamo
breaks again; JAX does *not* fail — the print runs once, at trace time, and prints a tracer
(use `jax.debug.print`). Switch to the fixes: one graph, no break, outputs match eager.

**On a GPU / CPU:** identical — this is about capture, not about the device.

**If slow:** each explanation takes ~0.5 s the first time and is cached afterwards.
"""),
    slide("""
## Fixing the break: make the branch data

```python
y = torch.sin(x) * 2.0
out = torch.where(y.sum() > 0, pos(y, x), neg(y, x))    # both sides, then select
out = torch.cond(y.sum() > 0, pos, neg, (y, x))         # one side, inside the graph
out = jnp.where(y.sum() > 0, pos(y, x), neg(y, x))       # JAX twins
out = jax.lax.cond(y.sum() > 0, pos, neg, y, x)
```

- `where` computes both branches — cheap when they are elementwise
- `cond` keeps one branch, traced into the graph (`torch.cond` is a higher-order op)
"""),
    slide("""
## Live: what the break costs
"""),
    code("internals.capture_cost()"),
    notes("""
**Say:** the same computation six ways, steady state after compiling (compile time printed
apart). Eager runs every op alone; the broken compile runs two graphs with a Python decision
(and a device→host sync) between them, so the fusion stops at the `if`; the fixed versions are
one graph. Press Run after moving N: small N shows the overhead of the break, large N the
memory traffic.

**On a GPU:** the break forces a device→host sync to read `y.sum()` and a second launch
sequence; the one-graph `torch.where` version beats the broken compile (checked by a GPU test).
**On a CPU:** read the numbers off the figure rather than predicting them: the gaps are small
next to this machine's noise (whiskers), and `where` pays for computing both branches. The seed
card puts typical torch.compile training speedups at 1.2–1.8×.

**If slow:** the first Run at a new N compiles six functions (seconds; `torch.cond` is the
slowest); `make warm` compiles the default N beforehand.
"""),
    slide("""
## What to remember

- torch.compile captures **what it can**; XLA requires **everything** — pure, static shapes
- Guards make compiled code safe to reuse; a failed guard = a recompile, with a reason
- `if` on data: Dynamo **breaks** the graph, `jax.jit` **errors** — fix with `where` / `cond`
- Generated code is readable: kernel names say what was fused
- Look before you trust: graph count, break count, recompile reasons

[Next: Part 5 — The bill →](05_the_bill.ipynb)
"""),
]


def main() -> Path:
    return write(ROOT / "slides" / "04_inside_the_compilers.ipynb", CELLS, "Part 4 — Inside the compilers")


if __name__ == "__main__":
    print(main())
