"""Part 2, reuse and donation (demos.topics.reuse): Inductor's memory plan read from its code, and
jax.jit's donated inputs. Every panel redrawing on every control is tests/test_demos.py's."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from demos.engine.devices import torch_device
from demos.engine.workload_defs import WORKLOADS
from demos.topics import reuse

N_SMALL = 2**14
cpu_only = pytest.mark.skipif(torch_device() != "cpu", reason="CPU form of the claim (GPU form: -m gpu)")
def test_plan_lines_read_allocations_reuse_and_launches_from_the_wrapper():
    from demos.introspection.inductor import parse_inductor
    from demos.topics.fusion_code import plan_lines

    src = (Path(__file__).parent / "fixtures" / "gpu" / "inductor_mlp_dead_code_cuda.py").read_text()
    lines = plan_lines(parse_inductor(src, device="cuda"))
    assert lines == ["buf0 = new (512, 4096) bfloat16", "mm(arg0_1, arg1_1, out=buf0)",
                     "buf1 = buf0; del buf0  # reuse", "triton_poi_fused_relu_0.run(buf1, 2097152, stream=stream0)",
                     "buf2 = new (512, 2048) bfloat16", "mm(buf1, arg3_1, out=buf2)"]
    assert reuse._writes_input("k(buf1)") is False and reuse._writes_input("k(arg0_1)") is True


def test_donation_hands_one_input_to_the_one_output_and_warns_about_the_other():
    from demos.engine.devices import require_jax
    from demos.introspection.hlo import aliased_parameters, donation

    jnp = require_jax().numpy
    f = WORKLOADS["complex_activation"].jax_fn
    fresh = lambda: (jnp.ones(1024), jnp.ones(1024))  # noqa: E731
    none, x, both = (donation(f, fresh, d) for d in ((), (0,), (0, 1)))
    assert none["deleted"] == [False, False] and none["aliased"] == [] and none["warning"] is None
    assert x["deleted"] == [True, False] and x["aliased"] == [0] and x["memory"]["alias_size_in_bytes"] == 4096
    assert both["deleted"] == [True, False] and "not usable" in both["warning"]
    assert aliased_parameters("HloModule m, input_output_alias={ {0}: (1, {}, may-alias), {1}: (0, {}, "
                              "may-alias) }, entry_computation_layout={()->()}") == [0, 1]


@cpu_only
def test_claim_reuse_counts_from_the_code_and_donation():
    d = reuse.plan.run({"N": N_SMALL})
    assert d["inductor"]["complex_activation"]["plan"][0].startswith("buf0 = new")
    mlp = d["inductor"]["mlp_block"]
    assert len(mlp["buffers"]) == 4 and mlp["reused"] == ["buf1 ← buf0", "buf5 ← buf2"]
    assert [k.split("(", 1)[1] for k in mlp["in_place"]] == ["buf1)", "buf5)"]  # GELU, then LayerNorm, over a GEMM's output
    claims = reuse.plan_claims(d)
    assert all(claims.values()), claims
    assert reuse.plan.ask.answer(d)[0] == 1  # "one": x and y donated, one taken over
    # a program that fused differently fails the exact count
    broken = json.loads(json.dumps(d))
    broken["inductor"]["mlp_block"]["reused"].pop()
    assert reuse.plan_claims["mlp"].evaluate(broken)[1] is False


@pytest.mark.gpu
def test_gpu_fused_program_allocates_only_its_output_and_donation_aliases_x():
    d = reuse.plan.run()
    assert d["device"] == "cuda" and d["inductor"]["mlp_block"]["plan"]
    claims = reuse.plan_claims(d)
    assert all(claims.values()), claims  # the claims with a GPU form: fused plan, no input written, donation
    assert any(k.startswith("triton_") for k in d["inductor"]["mlp_block"]["in_place"])
