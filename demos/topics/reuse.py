"""Part 2, buffer reuse continued — what a compiled program may overwrite, and who decides.

The seed chapter lists, for its six ops ``complex_activation(x, y)``, which value may take over
which buffer: ``a`` or ``b`` → ``c``, ``x`` → ``d``, ``y`` → ``e``. One live demo, ``plan()``,
checks that list against the two compilers:

- **Inductor's memory plan**, read from the code it generated (:mod:`demos.introspection.inductor`):
  the buffers it allocates, the ``buf1 = buf0; del buf0  # reuse`` lines that give the next
  result the storage of a buffer nothing reads afterwards, and the kernels that take an ``in_out_ptr`` and write their result
  over what they read. The seed's six ops fuse into one kernel, so only the output is allocated;
  the MLP block's matmuls keep its kernels apart, and there the plan reuses. Neither writes
  over the caller's inputs.
- **Donation**: ``jax.jit(f, donate_argnums=…)`` lets the output take over an input's buffer
  (:func:`demos.introspection.hlo.donation`: ``memory_analysis()``, the HLO's
  ``input_output_alias`` and ``is_deleted()`` on the inputs). One output takes one buffer, so
  donating ``y`` as well as ``x`` leaves ``y``'s unused: JAX warns, and ``y`` is not deleted.
"""
from __future__ import annotations

from typing import Any, Callable

from demos.deck import asks
from demos.deck.claims import Claim, Claims
from demos.deck.demo import Configs, Demo
from demos.engine import plots
from demos.engine.devices import device_kind, require_jax, torch_device
from demos.engine.errors import DemoError
from demos.engine.measurement import Run
from demos.engine.workload_defs import ITEMSIZE, get
from demos.engine.workloads import prepare
from demos.introspection import codegen
from demos.introspection.hlo import donation
from demos.topics.fusion_code import plan_lines
from demos.topics.fusion_forms import DTYPES, WORKLOAD, n_dtype_controls, panel_n
from demos.topics.reuse_figures import figure_plan

# The seed chapter's list for complex_activation: which value may take over which buffer
SEED_REUSE = ("a or b → c", "x → d", "y → e (relu in place)")
REUSE_PROGRAMS = ("complex_activation", "mlp_block")  # fused into one kernel; matmuls keep kernels apart
DONATIONS = ((), (0,), (0, 1))  # jax.jit(f, donate_argnums=…): nothing, x, x and y


def measure_plan(run: Run, N: int | None = None, dtype: str = "float32") -> dict[str, Any]:
    """Inductor's memory plan read from its generated code (allocations, ``# reuse`` lines, kernels
    that write over a buffer they read), for complex_activation and for the MLP block whose
    matmuls keep its kernels apart; then ``jax.jit(complex_activation)`` with x, then x and y,
    donated: its memory_analysis(), the parameters its output aliases and the inputs deleted."""
    N = panel_n() if N is None else N
    device = torch_device()
    out: dict[str, Any] = {"N": N, "dtype": dtype, "device": device, "inductor": {}, "donation": [],
                           "seed": list(SEED_REUSE)}
    for i, name in enumerate(REUSE_PROGRAMS):
        run.progress(0.1 + 0.3 * i, f"reading Inductor's code for {name}…")
        params = {"N": N} if name == WORKLOAD else None
        code = codegen.workload_inductor_code(name, params, dtype, device)
        out["inductor"][name] = {
            "params": get(name).resolve(params, device_kind()), "kernels": len(code.kernels),
            "buffers": code.buffers, "reused": code.reused, "in_place": code.in_place,
            "inputs_written": sum(1 for k in code.in_place if _writes_input(k)),
            "plan": plan_lines(code, keep=10)}
    try:
        jax = require_jax()
        prep = prepare(WORKLOAD, "jax_eager", {"N": N}, dtype)
        fresh = lambda: tuple(jax.numpy.array(a, copy=True) for a in prep.args)  # noqa: E731  (donated ones die)
        for i, donate in enumerate(DONATIONS):
            run.progress(0.7 + 0.1 * i, f"jax.jit with donate_argnums={donate}…")
            out["donation"].append(donation(prep.workload.jax_fn, fresh, donate))
    except DemoError as exc:
        out["jax_error"] = str(exc)
    mlp = out["inductor"]["mlp_block"]["params"]
    out["extra"] = (f"{WORKLOAD}, N={plots.pow2_label(N)}; mlp_block B={mlp['B']} S={mlp['S']} D={mlp['D']} "
                    f"H={mlp['H']}; {dtype}")
    return out


def _writes_input(launch: str) -> bool:
    """Whether an in-place launch ("kernel(buf1)") writes over one of the compiled graph's inputs."""
    args = launch[launch.index("(") + 1:].rstrip(")").split(",")
    return any(a.strip().startswith(("arg", "primals_")) for a in args)


def _plan_counts(name: str) -> Callable[[dict], tuple]:
    return lambda d: (len(d["inductor"][name]["buffers"]), len(d["inductor"][name]["reused"]),
                      len(d["inductor"][name]["in_place"]))


def _donated_kept(d: dict) -> tuple | None:
    """Donating x, then x and y: how many inputs each call deleted (took over)."""
    if len(d["donation"]) != len(DONATIONS):
        return None
    return tuple(sum(r["deleted"]) for r in d["donation"])


def _alias_in_n(d: dict) -> float | None:
    """Bytes the output aliases with x donated, in units of one N-element array."""
    if len(d["donation"]) != len(DONATIONS):
        return None
    return d["donation"][1]["memory"].get("alias_size_in_bytes", 0) / (d["N"] * ITEMSIZE[d["dtype"]])


plan_claims = Claims(
    Claim("complex_activation compiled: {0} new buffer (the output), {1} reused, {2} written in place",
          _plan_counts(WORKLOAD), "==", (1, 0, 0), key="fused"),
    Claim("the MLP block compiled: {0} new buffers, {1} taken over by '# reuse', {2} kernels writing in place",
          _plan_counts("mlp_block"), "==", {"cpu": (4, 2, 2)}, key="mlp"),
    Claim("Inductor writes over {threshold} of the caller's inputs", lambda d: sum(
        p["inputs_written"] for p in d["inductor"].values()), "==", 0, key="inputs"),
    Claim("jax.jit with x donated: the output takes over x's buffer ({threshold:g} × N elements aliased)",
          _alias_in_n, "==", 1.0, key="alias"),
    Claim("inputs deleted with nothing, x, x and y donated: {0}, {1}, {2} (one output needs one buffer)",
          _donated_kept, "==", (0, 1, 1), key="donated"),
)


plan = Demo(
    "plan", "What may be overwritten: reuse and donation",
    controls=n_dtype_controls(14), measure=measure_plan, figure=figure_plan,
    configs=Configs(warm=[{"dtype": d} for d in DTYPES]), claims=plan_claims,
    ask=asks.among("jax.jit(f, donate_argnums=(0, 1)) for f(x, y) = the seed's six ops: x and y are both "
                   "donated. How many of their buffers does XLA take over?",
                   ("none", "one", "both"), lambda d: None if _donated_kept(d) is None else min(_donated_kept(d)[2], 2),
                   lambda d: f"{_donated_kept(d)[2]}: one output needs one buffer" if _donated_kept(d) else "not measured"),
)
