import numpy as np
import pytest

from demos.engine.devices import BACKENDS
from demos.engine.errors import DemoError
from demos.engine.workload_defs import WORKLOADS, get, tolerance
from demos.engine.workloads import prepare


def quick(w):
    return {p.name: p.quick for p in w.params}


@pytest.mark.parametrize("name", list(WORKLOADS))
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_four_forms_agree(name, dtype):
    w = get(name)
    outs = {b: prepare(name, b, quick(w), dtype).output_numpy() for b in BACKENDS}
    ref = outs["torch_eager"]
    from demos.topics.numerics import roundings

    tol = tolerance(dtype, roundings(name, quick(w)))  # 2·n·u: the roundings and summed terms on the longest path
    for b, o in outs.items():
        assert o.shape == ref.shape, b
        np.testing.assert_allclose(o, ref, err_msg=f"{name} {b} {dtype}", **tol)


def test_flops_and_bytes_match_hand_counts():
    ca = get("complex_activation")
    assert ca.flops({"N": 10}) == 60  # 6 ops × 10 elements
    assert ca.bytes({"N": 10}, "float32") == 15 * 10 * 4  # sin2 cos2 mul3 add3 mul3 relu2
    assert ca.bytes({"N": 10}, "float32", fused=True) == 3 * 10 * 4  # read x, y; write out
    assert ca.bytes({"N": 10}, "bfloat16", fused=True) == 3 * 10 * 2

    ch = get("chain")
    assert ch.flops({"N": 100}) == 1000
    assert ch.bytes({"N": 100}, "float32") == (22 * 100 + 1) * 4
    assert ch.bytes({"N": 100}, "float32", fused=True) == (100 + 1) * 4
    # fused intensity exceeds eager by about the number of fused passes
    assert ch.intensity({"N": 100}, fused=True) / ch.intensity({"N": 100}) == pytest.approx(22, rel=0.02)

    tm = get("two_matmuls")
    p = {"B": 2, "D": 3, "H": 4}
    assert tm.flops(p) == 2 * 2 * 3 * 4 + 2 * 4 + 2 * 2 * 4 * 3  # mm + relu + mm
    assert tm.bytes(p, "float32") == 4 * ((2 * 3 + 3 * 4 + 2 * 4) + 2 * (2 * 4) + (2 * 4 + 4 * 3 + 2 * 3))

    dead = get("mlp_dead_code")
    p = {"B": 2, "D": 3, "F": 4}
    assert dead.flops(p) - dead.flops(p, fused=True) == 2 * 2 * 3 * 4  # the dead matmul

    mlp = get("mlp_block")
    p = {"B": 1, "S": 2, "D": 3, "H": 4}
    assert mlp.flops(p) >= 4 * 2 * 3 * 4  # at least the two matmuls
    assert mlp.bytes(p, "float32", fused=True) < mlp.bytes(p, "float32")


@pytest.mark.parametrize("bad", [0, -3, 2.5, "abc", True, None])
def test_nonsense_sizes_are_refused_with_a_message(bad):
    with pytest.raises(DemoError) as e:
        get("chain").resolve({"N": bad})
    assert "N=" in str(e.value) and "\n" not in str(e.value)


def test_unknown_names_list_the_valid_ones():
    with pytest.raises(DemoError) as e:
        get("chian")
    msg = str(e.value)
    assert "did you mean 'chain'" in msg and "two_matmuls" in msg
    with pytest.raises(DemoError) as e:
        prepare("chain", "torch_jit")
    assert "torch_compile" in str(e.value)
    with pytest.raises(DemoError) as e:
        get("chain").resolve({"M": 3})
    assert "valid: N" in str(e.value)


@pytest.fixture
def one_gib_free(monkeypatch):
    import demos.engine.workloads as wl

    monkeypatch.setattr(wl, "free_memory_bytes", lambda device=None: 2**30)


def test_size_beyond_memory_is_refused_before_allocating(one_gib_free):
    with pytest.raises(DemoError) as e:
        prepare("chain", "torch_eager", {"N": 2**28}, "float32")  # ~24 GiB of eager traffic
    assert str(e.value).startswith("out of memory at N=268,435,456")


def test_bench_row_carries_the_error_and_memory_is_released(one_gib_free):
    from demos.engine.bench import run_one

    row = run_one("complex_activation", "torch_eager", {"N": 2**28})
    assert row.error and "out of memory at N=" in row.error and row.median_s is None
    # the next demo still runs
    ok = run_one("complex_activation", "torch_eager", {"N": 1024}, budget_s=0.02)
    assert ok.ok and ok.median_s > 0


def test_unsupported_dtype_gives_one_line():
    with pytest.raises(DemoError) as e:
        prepare("chain", "torch_eager", {"N": 16}, "float64")
    assert "valid: float32" in str(e.value)
