"""Part 6, CUDA graphs where they pay (demos.topics.graphs): launches counted from a profiled
step. The GPU side is tested on ``tests/fixtures/gpu/replayed_step_cuda.json``, a trace written
in Kineto's format by ``make_traces.py`` (no GPU here); the CPU side is measured."""
from __future__ import annotations

from pathlib import Path

import pytest

from demos.introspection.trace import timeline_from_trace
from demos.introspection.trace_events import read_trace
from demos.topics import graphs as topic

REPLAYED = Path(__file__).parent / "fixtures" / "gpu" / "replayed_step_cuda.json"


def _gpu_measurement(ro: dict) -> dict:
    """A GPU-shaped measurement around the replayed step's counts (the other forms' counts made up)."""
    rows = {"torch_eager": {"median_s": 9e-4, "kernel_launches": 52, "graph_launches": 0, "kernels": 52, "copies": []},
            "torch_compile": {"median_s": 5e-4, "kernel_launches": 20, "graph_launches": 0, "kernels": 20, "copies": []},
            "torch_compile_ro": {"median_s": 2e-4, **ro}}
    for r in rows.values():
        r.update(p10_s=r["median_s"] * 0.9, p90_s=r["median_s"] * 1.1, n=9)
    return {"device": "cuda", "rows": rows, "skipped": {}, "cfg": {}, "stamp": "a constructed trace"}


def test_a_replay_is_one_graph_launch_after_copying_its_inputs():
    counts = topic._launch_counts(timeline_from_trace(read_trace(REPLAYED)))
    assert counts == {"kernel_launches": 1, "graph_launches": 1, "kernels": 4, "copies": ["_foreach_copy_"]}
    d = _gpu_measurement(counts)
    claims = topic.replay.check_claims(d)
    assert len(claims) == 3 and all(claims.values()), claims
    assert topic.replay.ask.answer(d)[0] == 1
    texts = [t.get_text() for ax in topic.figure_replay(d).axes for t in ax.texts]
    assert any("1 + 1 graph · GPU ran 4 kernels · copies: _foreach_copy_" in t for t in texts), texts


@pytest.mark.slow  # compiles the 4-layer stack at batch 1 and profiles each form: ~12 s
def test_a_cpu_step_launches_nothing_and_says_so():
    d = topic.replay.run()
    assert set(d["rows"]) == {"torch_eager", "torch_compile"}  # reduce-overhead is not measured on a CPU
    assert d["skipped"] == {"torch_compile_ro": topic.NO_LAUNCHES}
    assert all(r["kernel_launches"] == r["graph_launches"] == 0 for r in d["rows"].values())
    assert d["rows"]["torch_compile"]["kernels"] < d["rows"]["torch_eager"]["kernels"]  # fused: less host work
    assert topic.replay.check_claims(d) == {"a CPU launches no kernels: 0 launches per step in every form": True}
    assert topic.replay.ask.answer(d)[0] == 2
