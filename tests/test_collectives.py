"""Part 4, beyond one device (demos.topics.collectives): the collectives XLA's partitioner inserts,
read from optimized HLO (the parser on fixed text, sync and async), and the slide's counts on
simulated host devices. Every panel redrawing on every control is tests/test_demos.py's."""
from __future__ import annotations

import pytest

from demos.engine.errors import DemoError, one_line
from demos.introspection.sharding import collectives, run_partitioned
from demos.topics import collectives as topic

# What XLA:CPU printed for the data-parallel training step (abridged): the two gradients' all-reduces
# combined into one that carries both arrays
COMBINED = """HloModule jit_loss, entry_computation_layout={(f32[512,1024]{1,0})->f32[512,1024]{1,0}}

ENTRY %main.42 (Arg_0.1: f32[512,1024], Arg_1.2: f32[1024,512], Arg_2.3: f32[64,512]) -> (f32[512,1024], f32[1024,512]) {
  %dot.3 = f32[1024,512]{1,0} dot(%a, %b), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  %all-reduce.2 = (f32[1024,512]{1,0}, f32[512,1024]{1,0}) all-reduce(%dot.3, %dot.4), channel_id=1, replica_groups=[1,4]<=[4], use_global_device_ids=true, to_apply=%add.clone
  %all-gather = bf16[64,512]{1,0} all-gather(%p), channel_id=2, dimensions={0}
  ROOT %t = (f32[512,1024]{1,0}, f32[1024,512]{1,0}) tuple(%g0, %g1)
}
"""
# An async pair as GPU backends schedule it: a start, two fusions and a GEMM between, then the done
ASYNC = """HloModule m

%fused_computation (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  ROOT %n = f32[8]{0} negate(%p)
}

ENTRY %main (a: f32[256,512]) -> f32[256,512] {
  %ars = f32[256,512]{1,0} all-reduce-start(%a), channel_id=1, replica_groups={{0,1}}, to_apply=%add
  %f1 = f32[8]{0} fusion(%x), kind=kLoop, calls=%fused_computation
  %g = (f32[64,64]{1,0}, s8[4194304]{0}) custom-call(%y, %z), custom_call_target="__cublas$gemm"
  %f2 = f32[8]{0} fusion(%f1), kind=kLoop, calls=%fused_computation
  %c = f32[] constant(0)
  ROOT %ard = f32[256,512]{1,0} all-reduce-done(%ars)
}
"""


def test_collectives_are_read_from_optimized_hlo_with_their_bytes():
    found = collectives(COMBINED)
    assert found == [{"kind": "all-reduce", "values": 2, "bytes": 2 * 512 * 1024 * 4, "async": False, "between": 0},
                     {"kind": "all-gather", "values": 1, "bytes": 64 * 512 * 2, "async": False, "between": 0}]
    pair = collectives(ASYNC)
    # one collective, not two: the done's shape is its result; the constant is no compute
    assert pair == [{"kind": "all-reduce", "values": 1, "bytes": 256 * 512 * 4, "async": True, "between": 3}]
    assert collectives("HloModule empty\n") == []


def test_claim_the_collectives_each_split_needs_on_simulated_devices():
    d = topic.sharding.run()
    assert d["simulated"] and d["devices"] == 4 and d["platform"] == "cpu"
    claims = topic.sharding.check_claims(d)
    assert len(claims) == 4 and all(claims.values()), claims
    rows = {k: [(c["kind"], c["bytes"]) for c in r["collectives"]] for k, r in d["rows"].items()}
    assert rows[topic.TP] == [("all-reduce", 256 * 512 * 4)] and rows[topic.ROWS] == [("all-reduce", 256 * 1024 * 4)]
    assert rows[topic.DP] == [] and rows[topic.FSDP] == [("all-gather", 512 * 1024 * 4)] * 2
    assert topic.sharding.ask.answer(d)[0] == 1  # "1 collective"
    assert all(r["steady"]["p10_s"] <= r["steady"]["median_s"] <= r["steady"]["p90_s"] for r in d["rows"].values())
    broken = {**d, "rows": {**d["rows"], topic.TP: {**d["rows"][topic.TP], "collectives": []}}}
    assert topic.sharding_claims["megatron"].evaluate(broken)[1] is False  # no all-reduce: the exact count fails


def test_claim_data_parallel_gradients_travel_in_one_all_reduce():
    d = topic.sharding.run({"step": "training", "devices": 2})
    claims = topic.sharding.check_claims(d)
    assert list(claims.values()) == [True], claims
    (ar,) = d["rows"][topic.DP]["collectives"]
    assert ar["values"] == 2 and ar["bytes"] == 2 * 512 * 1024 * 4


def test_a_failing_partition_is_one_line():
    with pytest.raises(DemoError, match="the partitioning process failed") as err:
        run_partitioned({"devices": 2, "step": "forward", "batch": 3, "width": 512, "hidden": 1024})
    assert "\n" not in one_line(err.value)  # a batch of 3 cannot be split over 2 devices
    with pytest.raises(DemoError, match="devices"):
        topic.sharding.run({"devices": 3})
