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


# torch's side: rank 0's generated call() for the FSDP-like split, as Inductor wrote it here
# (torch 2.13.0+cpu, gloo, 2 ranks), with one matmul moved between a gather and its wait by hand
FSDP_CALL = """arg0_1, arg1_1, arg2_1 = args
buf0 = torch.ops._c10d_functional.all_gather_into_tensor.default(arg0_1, 2, '0')
# Topologically Sorted Source Nodes: [res], Original ATen: [_c10d_functional.wait_tensor]
torch.ops._c10d_functional.wait_tensor.default(buf0)
buf4 = empty_strided_cpu((256, 1024), (1024, 1), torch.float32)
extern_kernels.mm(arg2_1, buf0, out=buf4)
buf7 = buf4; del buf4  # reuse
buf1 = torch.ops._c10d_functional.all_gather_into_tensor.default(arg1_1, 2, '0')
cpp_fused_relu_0(buf7)
torch.ops._c10d_functional.wait_tensor.default(buf1)
buf8 = empty_strided_cpu((256, 512), (512, 1), torch.float32)
extern_kernels.mm(buf7, buf1, out=buf8)
torch.ops._c10d_functional.all_reduce_.default(buf8, 'sum', '0')
return (buf8, )
"""


def test_functional_collectives_are_read_from_generated_code_with_their_waits():
    from demos.introspection.traced_collectives import functional_collectives

    found = functional_collectives(FSDP_CALL)
    assert [(c["op"], c["buffer"], c["result"], c["in_place"], c["waited"], c["between"]) for c in found] == [
        ("all_gather_into_tensor", "arg0_1", "buf0", False, True, 0),
        ("all_gather_into_tensor", "arg1_1", "buf1", False, True, 1),  # the relu kernel ran while it travelled
        ("all_reduce_", "buf8", "buf8", True, False, 0)]  # never waited on: said so
    assert functional_collectives("buf0 = empty_strided_cpu((4,), (1,), torch.float32)\n") == []


def test_ranks_that_cannot_split_the_chain_are_one_line():
    from demos.introspection.traced_collectives import traced

    with pytest.raises(DemoError) as e:
        traced({"ranks": 3, "batch": 8, "width": 512, "hidden": 1024})
    assert "\n" not in str(e.value) and "divide" in str(e.value)


@pytest.mark.slow  # two ranks, each compiling both splits: ~10 s
def test_torch_keeps_the_collectives_you_write_in_its_graph():
    d = topic.traced.run()
    claims = topic.traced.check_claims(d)
    assert len(claims) == 5 and all(claims.values()), claims
    assert [c["op"] for c in d["splits"]["megatron"]["collectives"]] == ["all_reduce_"]
    assert topic.traced.ask.answer(d)[0] == 1  # one graph
