"""Part 4, beyond one device — the whole program lets XLA plan the communication too.

The seed card's argument for XLA beyond one device: a compiler that sees the whole program can
also schedule its communication. One live demo, ``sharding()``: the MLP chain
``relu(x @ w1) @ w2`` under ``jax.jit`` with ``in_shardings``/``out_shardings`` over several
devices, four ways of splitting it (:data:`demos.introspection.sharding.SHARDINGS`). XLA's SPMD
partitioner compiles one program that every device runs on its shard, with the collectives each
split needs;
they are read from the optimized HLO with the bytes each one's result holds, for the forward or
for a training step (the weights' gradients).

A machine with fewer devices than asked for simulates them: XLA makes the host CPU N devices
(``--xla_force_host_platform_device_count``, set before JAX starts, so each measurement runs in
a fresh process: :func:`demos.introspection.sharding.run_partitioned`). The program and its
collectives are what a real mesh would run; the times are the simulated devices' on this
machine's cores, labelled so, not a network's.
"""
from __future__ import annotations

from typing import Any, Callable

from demos.deck import asks
from demos.deck.claims import Claim, Claims, regime
from demos.deck.conditions import rounding_bound, rounding_text
from demos.deck.demo import Choice, Configs, Demo, PanelSpec
from demos.engine.measurement import Run
from demos.introspection.sharding import SHARDINGS, run_partitioned
from demos.introspection.traced_collectives import run_traced
from demos.topics.collectives_figures import figure_sharding, figure_traced

SIZES = {"batch": 256, "width": 512, "hidden": 1024}  # x [batch, width] @ w1 [width, hidden] → relu → @ w2
STEPS = (("forward", "forward"), ("training step", "training"))
DEVICES = (2, 4, 8)
DP, TP, ROWS, FSDP = SHARDINGS  # the four splits, in the figure's order


def measure_sharding(run: Run, step: str = "forward", devices: int = 4, budget_s: float = 0.2) -> dict[str, Any]:
    """The chain jitted with each split over ``devices`` devices, in a fresh process: the
    collectives in its optimized HLO, and its steady-state time."""
    run.progress(0.1, f"a fresh process with {devices} devices; jax.jit with 4 shardings…")
    d = run_partitioned({"devices": devices, "step": step, "budget_s": budget_s, **SIZES})
    where = f"{devices} simulated {d['platform'].upper()} devices" if d["simulated"] else f"{devices} × {d['device_kind']}"
    d.update(device="cpu" if d["platform"] == "cpu" else "gpu", itemsize=4,
             extra=f"x {SIZES['batch']}×{SIZES['width']}, hidden {SIZES['hidden']}, float32, {step}; {where}")
    return d


# =======================================================================================
# What the slide claims (forward at the defaults; the gradients' claim on a training step)
# =======================================================================================
def _found(d: dict, split: str) -> list[dict]:
    return d["rows"][split]["collectives"]


def _kinds(d: dict, split: str) -> list[str]:
    return [c["kind"] for c in _found(d, split)]


def _forward(d: dict) -> bool:
    return d.get("step") == "forward" and d.get("simulated", True)


def _megatron(d: dict) -> int | None:
    """Collectives in the Megatron split's forward, when each is an all-reduce of the [batch, width] output."""
    out = SIZES["batch"] * SIZES["width"] * d["itemsize"]
    found = _found(d, TP)
    return len(found) if all(c["kind"] == "all-reduce" and c["bytes"] == out for c in found) else None


def _rows_vs_megatron(d: dict) -> float | None:
    """Bytes the row split's all-reduce carries, in units of Megatron's."""
    rows, tp = _found(d, ROWS), _found(d, TP)
    if _kinds(d, ROWS) != ["all-reduce"] or _kinds(d, TP) != ["all-reduce"]:
        return None
    return rows[0]["bytes"] / tp[0]["bytes"]


def _fsdp_gathers(d: dict) -> int | None:
    """All-gathers in the FSDP-like forward, when each brings a whole weight."""
    weight = SIZES["width"] * SIZES["hidden"] * d["itemsize"]
    found = _found(d, FSDP)
    return len(found) if all(c["kind"] == "all-gather" and c["bytes"] == weight for c in found) else None


def _dp_gradients(d: dict) -> int | None:
    """All-reduces carrying the data-parallel step's gradients, when together they carry both weights."""
    found = _found(d, DP)
    both = 2 * SIZES["width"] * SIZES["hidden"] * d["itemsize"]
    ok = all(c["kind"] == "all-reduce" for c in found) and sum(c["bytes"] for c in found) == both
    return len(found) if ok else None


def _on_forward(fn: Callable[[dict], Any]) -> Callable[[dict], Any]:
    """``fn`` read from a forward measurement (the question is about the forward), else nothing."""
    return lambda d: fn(d) if _forward(d) else None


sharding_claims = Claims(
    Claim("data parallel, forward: {threshold} collectives (each device holds its rows of x and every weight)",
          lambda d: len(_found(d, DP)), "==", 0, applies=_forward, key="dp"),
    Claim("tensor parallel (Megatron), forward: {threshold} collective, an all-reduce of the [batch, width] output",
          _megatron, "==", 1, applies=_forward, key="megatron",
          ask=asks.count("Tensor parallel (Megatron): w1 split by columns, w2 by rows, over 4 devices. How many "
                         "collectives does XLA insert in the forward?", (0, 2, 4),
                         noun="collective", read=_on_forward(_megatron))),
    Claim("w1 split on its rows: one all-reduce of [batch, hidden], {threshold:g}× the bytes of Megatron's",
          _rows_vs_megatron, "==", SIZES["hidden"] / SIZES["width"], applies=_forward, key="rows"),
    Claim("batch and weights split (FSDP-like), forward: {threshold} all-gathers, each a whole weight",
          _fsdp_gathers, "==", 2, applies=_forward, key="fsdp"),
    Claim("data parallel, training step: both gradients travel in {threshold} all-reduce",
          _dp_gradients, "==", 1, applies=lambda d: d.get("step") == "training" and d.get("simulated", True),
          key="dp_grads"),
)


sharding = Demo(
    "sharding", "Collectives the partitioner inserts",
    controls=[Choice("step", "forward", options=STEPS, toggle=True, match=True),
              Choice("devices", 4, options=DEVICES, toggle=True, match=True)],
    measure=measure_sharding, figure=figure_sharding,
    # a fresh process measures (its device count is fixed as JAX starts): no thread policy here
    panel=PanelSpec("warmed", worker=True),
    configs=Configs(warm=[{}, {"step": "training"}]), claims=sharding_claims,
)


# =======================================================================================
# torch's side: the collectives you write, traced into the graph
# =======================================================================================
RANKS = 2  # one process per rank; this machine's cores are the floor


def measure_traced(run: Run) -> dict[str, Any]:
    """The chain split two ways with functional collectives, compiled on every rank (gloo, one
    process each): rank 0's generated code and the collectives in it."""
    run.progress(0.1, f"{RANKS} ranks (one process each, gloo); torch.compile on every rank…")
    d = run_traced({"ranks": RANKS, **SIZES})
    d.update(device="cpu", extra=f"x {SIZES['batch']}×{SIZES['width']}, hidden {SIZES['hidden']}, float32; "
                                 f"{RANKS} ranks on this machine's CPU (gloo)")
    return d


def _ops(d: dict, split: str) -> list[str]:
    return [c["op"] for c in d["splits"][split]["collectives"]]


def _reduces_gemm_output(d: dict) -> int | None:
    """All-reduces in the Megatron split, when each writes over the second matmul's output."""
    split = d["splits"]["megatron"]
    outs = [ln.split("out=")[-1].rstrip(")") for ln in split["code"] if "extern_kernels.mm(" in ln]
    found = split["collectives"]
    ok = outs and all(c["op"] == "all_reduce_" and c["in_place"] and c["buffer"] == outs[-1] for c in found)
    return len(found) if ok else None


traced_claims = Claims(
    Claim("torch, Megatron split: {threshold} all_reduce, in place on the second matmul's output",
          _reduces_gemm_output, "==", 1, key="megatron"),
    Claim("torch, FSDP-like: {threshold} all_gathers, one per weight",
          lambda d: _ops(d, "fsdp").count("all_gather_into_tensor"), "==", 2, key="fsdp"),
    Claim("the collectives stay in the graph: {0} graph per split, no break",
          lambda d: (max(s["graphs"] for s in d["splits"].values()),), "==", (1,), key="graphs"),
    Claim("each wait follows its collective at once: {threshold} launches between (no overlap by default)",
          lambda d: max(c["between"] for s in d["splits"].values() for c in s["collectives"]), "==", 0,
          key="waits"),
    # a sharded sum adds its partial sums in another order: two orders of the hidden dimension's
    # sum differ by at most 2·hidden·u
    Claim("every rank's compiled output agrees with the unsharded chain: max rel diff under {threshold:.2g}",
          lambda d: max(s["max_rel"] for s in d["splits"].values()), "<", rounding_bound("float32", SIZES["hidden"]),
          key="agree", **regime(when=lambda d: (True, rounding_text("float32", SIZES["hidden"])))),
)


traced = Demo(
    "traced", "torch: collectives you write, under torch.compile",
    controls=[], measure=measure_traced, figure=figure_traced,
    panel=PanelSpec("warmed", worker=True),  # the ranks measure in processes of their own
    claims=traced_claims,
    ask=asks.among("torch.compile meets fc.all_reduce(y, 'sum', group) inside the function. What does it do?",
                   ("a graph break: the collective runs eagerly between two graphs",
                    "one graph: the collective is an op in it, run by the generated code",
                    "an error: collectives cannot be compiled"),
                   lambda d: 1 if d["splits"]["megatron"]["graphs"] == 1 else 0,
                   tells={"one graph: the collective is an op in it, run by the generated code":
                          (r"\b(?:trac|captur)\w* (?:them |it )?into the graph", r"collectives?\b[^.\n]{0,30}\bstays? in")}),
)
