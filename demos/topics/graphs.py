"""Part 6 — CUDA graphs where they pay: a batch-1 step of the model, counted launch by launch.

At batch 1 a forward of part 6's stack is many small kernels, and the GPU finishes each one before
the host has launched the next: the step takes as long as the launching. ``torch.compile(mode=
"reduce-overhead")`` records the step's launches into a CUDA graph and replays it with one launch,
after copying the inputs that are not static into the graph's own buffers (cudagraph trees:
``torch._foreach_copy_``). Part 3 showed it where it cannot pay (one fused kernel); this is where
it can.

One live demo, ``replay()``: ``measure_replay(run)`` times one forward in eager, torch.compile
(default) and reduce-overhead (taking turns), then profiles one step of each and counts, from the
trace, the kernel launches, the graph launches and the kernels the GPU ran, and names the input
copies a replay makes. A CPU has no kernel launches, so nothing for a graph to replay: its figure
says so in one line, times eager and default, and the recorded GPU run stands beside.
"""
from __future__ import annotations

from typing import Any

from demos.deck import asks
from demos.deck.claims import Claim, Claims, regime
from demos.deck.conditions import measured
from demos.deck.demo import Configs, Demo
from demos.engine.devices import device_kind, torch_device
from demos.engine.measurement import Run
from demos.engine.timing import sync_torch
from demos.introspection import profiling
from demos.topics.graphs_figures import FORMS, figure_replay
from demos.topics.model import OP_HEAVY, config
from demos.topics.model_bundle import bundle, threads

LAYERS = 4
NO_LAUNCHES = "a CPU launches no kernels: there is nothing for a CUDA graph to replay (reduce-overhead needs CUDA)"
COPY_OPS = ("_foreach_copy_", "copy_")


def _launch_counts(profile: dict[str, Any]) -> dict[str, Any]:
    c = profile["counts"]
    graph = c.get("graph_launches", 0)
    return {"kernel_launches": c["launches"] - graph, "graph_launches": graph, "kernels": c["kernels"],
            "copies": [op for op in profile["op_names"] if op.split("::")[-1] in COPY_OPS]}


def measure_replay(run: Run, budget_s: float = 0.3) -> dict[str, Any]:
    """One batch-1 forward in each form: its median time and, from one profiled step, its launches."""
    kind, cuda = device_kind(), torch_device() == "cuda"
    cfg = config(LAYERS, OP_HEAVY[kind]["width"], OP_HEAVY[kind]["tokens"])
    forms = FORMS if cuda else FORMS[:2]
    with threads():
        b = bundle(run, cfg)
        run.progress(0.05, "compiling (default, then reduce-overhead: it records its graph on the first calls)…")
        for form in forms:
            for _ in range(3):  # reduce-overhead warms up, records, then replays
                sync_torch()(b.call(form, False))
        run.progress(0.4, "timing every form, taking turns…")
        rows = {k: t.to_dict() for k, t in run.time_forms({f: ((lambda f=f: b.call(f, False)), sync_torch()) for f in forms},
                                                          budget_s=budget_s * len(forms), settle=False, max_samples=80).items()}
        for i, form in enumerate(forms):
            run.progress(0.7 + 0.1 * i, f"profiling one {form} step…")
            with profiling.quiet_native_stderr():
                prof = profiling.profile_run(lambda form=form: b.call(form, False), sync=sync_torch(),
                                             device=torch_device(), warmup=1, passes=2)
            rows[form].update(_launch_counts(prof))
    return {"device": torch_device(), "cfg": vars(cfg) | {}, "rows": rows,
            "skipped": {} if cuda else {"torch_compile_ro": NO_LAUNCHES},
            "extra": f"{LAYERS}-layer stack, batch × seq = {cfg.batch} × {cfg.seq}, D={cfg.width}, float32, forward"}


# =======================================================================================
# What the slide claims
# =======================================================================================
def _ro(d: dict) -> dict:
    return d["rows"]["torch_compile_ro"]


LAUNCH_BOUND = 10  # kernels per step from which the host's launches are a batch-1 step's cost
replay_claims = Claims(
    Claim("a CPU launches no kernels: {threshold} launches per step in every form",
          lambda d: max(r["kernel_launches"] + r["graph_launches"] for r in d["rows"].values()), "==",
          {"cpu": 0}, key="cpu"),
    Claim("reduce-overhead replays the whole step with {threshold} graph launch",
          lambda d: _ro(d)["graph_launches"], "==", {"gpu": 1}, key="one_graph"),
    Claim("the replay launches fewer kernels from the host than the default compile",
          lambda d: _ro(d)["kernel_launches"] < d["rows"]["torch_compile"]["kernel_launches"],
          applies=lambda d: "torch_compile_ro" in d["rows"], key="fewer"),
    # CUDA graphs pay where the host's launches are the step's cost: many kernels per step
    Claim("at batch 1, reduce-overhead's step is faster than the default compile's",
          lambda d: _ro(d)["median_s"] < d["rows"]["torch_compile"]["median_s"],
          applies=lambda d: "torch_compile_ro" in d["rows"], key="pays",
          **regime(when=measured(lambda d: d["rows"]["torch_compile"]["kernel_launches"], ">=", LAUNCH_BOUND,
                                 "launch-bound: the default compile launches {x:g} kernels per step, {cmp} {t:g}"))),
)


replay = Demo(
    "replay", "CUDA graphs where they pay: a batch-1 step",
    controls=[], measure=measure_replay, figure=figure_replay, panel="warmed",
    configs=Configs(record={"budget_s": 0.6}, quick={"budget_s": 0.1}), claims=replay_claims,
    ask=asks.among("A batch-1 forward of the 4-layer stack, torch.compile default vs reduce-overhead (CUDA graphs). "
                   "How many launches does the replayed step make from the host?",
                   ("about as many as the default compile", "one graph launch, and a copy of the inputs",
                    "none: a CPU has no launches to replay"),
                   lambda d: 2 if d["device"] == "cpu" else (1 if _ro(d)["graph_launches"] == 1 else 0),
                   tells={"none: a CPU has no launches to replay": (r"\bCPU (?:launches|has) no (?:kernels?|launch)",),
                          "one graph launch, and a copy of the inputs": (r"\bwith (?:\*\*)?one(?:\*\*)? launch\b",)}),
)
