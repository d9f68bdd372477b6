"""demos.engine.peaks: the roofline model against hand counts, the spec sheets, and this machine's
measured peaks (plausible, stable, measured once per process and shared by every demo)."""
from __future__ import annotations

import pytest

import demos  # noqa: F401  (environment before torch/JAX)
from demos.engine import peaks as pk
from demos.engine.devices import set_threads, torch_device
from demos.engine.errors import DemoError
from demos.engine.workload_defs import get as get_workload


# ---------------------------------------------------------------------------------------
# The model, against hand counts
# ---------------------------------------------------------------------------------------
def test_predict_takes_the_binding_roof():
    # 1 GFLOP and 1 GB on a 100 GFLOP/s, 10 GB/s machine: memory takes 0.1 s, compute 0.01 s
    assert pk.predict(1e9, 1e9, 1e11, 1e10) == pytest.approx((0.1, "memory"))
    # 1 TFLOP and 1 GB: compute takes 10 s
    assert pk.predict(1e12, 1e9, 1e11, 1e10) == pytest.approx((10.0, "compute"))
    assert pk.ridge(1e11, 1e10) == pytest.approx(10.0)
    assert pk.attainable(2.0, 1e11, 1e10) == pytest.approx(2e10)
    assert pk.attainable(50.0, 1e11, 1e10) == pytest.approx(1e11)


def test_chain_cost_by_hand_and_fusion_moves_it_right():
    p = {"N": 1024}
    eager = pk.cost("chain", p, "float32", "torch_eager")
    fused = pk.cost("chain", p, "float32", "torch_compile")
    assert eager["flops"] == fused["flops"] == 10 * 1024  # 10 ops per element, 1 FLOP each
    assert eager["bytes"] == (22 * 1024 + 1) * 4  # every op's reads and writes
    assert fused["bytes"] == (1024 + 1) * 4  # read x once, write the sum
    assert eager["intensity"] == pytest.approx(10 * 1024 / ((22 * 1024 + 1) * 4))
    ratio = fused["intensity"] / eager["intensity"]
    n_ops = len(get_workload("chain").eager_ops)
    # "about the number of fused ops": each of the 10 ops costs ~2.2 passes over memory eagerly
    assert ratio == pytest.approx(22 * 1024 / 1025, rel=1e-3)
    assert n_ops <= ratio <= 3 * n_ops
    # the slide's fp32 numbers at a large N: 0.11 → 2.5 FLOP/byte, ×22
    big = {"N": 2**22}
    assert pk.cost("chain", big, "float32", "torch_eager")["intensity"] == pytest.approx(10 / 88, rel=1e-3)
    assert pk.cost("chain", big, "float32", "jax_jit")["intensity"] == pytest.approx(2.5, rel=1e-3)


def test_two_matmuls_cost_by_hand_and_fusion_barely_moves_it():
    p = {"B": 2, "D": 3, "H": 4}
    eager = pk.cost("two_matmuls", p, "float32", "torch_eager")
    fused = pk.cost("two_matmuls", p, "float32", "jax_jit")
    assert eager["flops"] == 4 * 2 * 3 * 4 + 2 * 4  # two GEMMs + relu
    assert eager["bytes"] == (2 * 6 + 2 * 12 + 4 * 8) * 4
    assert fused["bytes"] == eager["bytes"]  # the ReLU pass stays, in place (no epilogue fusion by default)
    # the slide: seed shape, 2.1 GFLOP over 27 MB eager and compiled, intensity 79
    seed = {"B": 256, "D": 1024, "H": 2048}
    e = pk.cost("two_matmuls", seed, "float32", "torch_eager")
    f = pk.cost("two_matmuls", seed, "float32", "torch_compile")
    assert e["flops"] == pytest.approx(2.15e9, rel=0.01)
    assert e["bytes"] / 1e6 == pytest.approx(27.3, abs=0.1) and f["bytes"] == e["bytes"]
    assert round(e["intensity"]) == 79 == round(f["intensity"])


def test_spec_sheets_match_device_names_and_ridges_on_the_slide():
    assert pk.spec_sheet("NVIDIA H200")["name"] == "H200 SXM"
    assert pk.spec_sheet("NVIDIA H100 80GB HBM3")["name"] == "H100 SXM"
    assert pk.spec_sheet("NVIDIA H100 PCIe")["name"] == "H100 PCIe"
    assert pk.spec_sheet("NVIDIA A100-SXM4-80GB")["name"] == "A100 80GB SXM"
    assert pk.spec_sheet("NVIDIA A100-PCIE-40GB")["name"] == "A100 40GB"
    assert pk.spec_sheet("CPU: AMD EPYC (2 threads)") is None
    assert pk.spec_sheet(None) is None
    a100, h200 = pk.spec_sheet("A100-SXM4-80GB"), pk.spec_sheet("H200")
    # slide: ridge points fp32 / bf16 — A100 ≈ 10 / 150, H200 ≈ 14 / 206 FLOP/B
    assert pk.ridge(a100["float32"], a100["bandwidth"]) == pytest.approx(10, abs=0.6)
    assert pk.ridge(a100["bfloat16"], a100["bandwidth"]) == pytest.approx(150, abs=5)
    assert pk.ridge(h200["float32"], h200["bandwidth"]) == pytest.approx(14, abs=0.5)
    assert pk.ridge(h200["bfloat16"], h200["bandwidth"]) == pytest.approx(206, abs=1)


# ---------------------------------------------------------------------------------------
# Measured peaks
# ---------------------------------------------------------------------------------------
PEAK_TOLERANCE = 0.5  # two readings on a shared 2-core CPU: 0.42 apart was seen under load


def _agree(a: float, b: float) -> float:
    return abs(a - b) / max(a, b)


def _closest(xs: list[float]) -> float:
    """How far apart the two closest of several measurements are (relative)."""
    xs = sorted(xs)
    return min(_agree(a, b) for a, b in zip(xs, xs[1:]))


@pytest.mark.timing
def test_peaks_are_plausible_and_stable():
    """Three measurements in a row: each plausible, and the two closest agree within the tolerance.
    One busy spell of another process on a shared 2-core box (seen in CI: 58 % off once) can
    distort one measurement, not the agreement of the other two."""
    runs = [pk.measure_peaks(("float32",), budget_s=0.3) for _ in range(3)]
    for p in runs:
        assert 1e9 < p["bandwidth"]["bytes_per_s"] < 1e13
        assert 1e9 < p["compute"]["float32"]["flops_per_s"] < 1e16
        assert p["bandwidth"]["buffer_bytes"] >= 32 * 2**20  # beyond the caches
    diffs = {"bandwidth": _closest([p["bandwidth"]["bytes_per_s"] for p in runs]),
             "gemm": _closest([p["compute"]["float32"]["flops_per_s"] for p in runs])}
    assert max(diffs.values()) <= PEAK_TOLERANCE, f"peak measurements in a row differ: {diffs}"


def test_peaks_are_measured_once_per_process_and_the_bandwidth_is_shared(monkeypatch):
    pk.clear_peaks()
    calls = []
    monkeypatch.setattr(pk, "measure_bandwidth", lambda threads=None, **kw: calls.append(("copy", threads)) or
                        {"bytes_per_s": 123e9, "buffer_bytes": 2**27})
    monkeypatch.setattr(pk, "measure_gemm", lambda dtype, **kw: calls.append(("gemm", dtype)) or
                        {"flops_per_s": 4.56e12})
    p = pk.peaks(("float32",))
    assert pk.peaks(("float32",)) is p and calls == [("copy", pk.set_threads()), ("gemm", "float32")]
    # the bandwidth the peaks hold is the one every other demo asks for (one measurement)
    assert pk.bandwidth() is p["bandwidth"] and len(calls) == 2
    pk.peaks(("float32", "bfloat16"))  # a new dtype adds its GEMM peak only
    assert calls[2:] == [("gemm", "bfloat16")]
    other = set_threads() + 1
    pk.bandwidth(threads=set_threads())  # the deck's thread count: the same measurement
    pk.bandwidth(threads=other)  # another thread count is its own measurement, kept too
    pk.bandwidth(threads=other)
    assert calls[3:] == [("copy", other)]
    assert pk.peak_flops(p, "float32") == 4.56e12
    with pytest.raises(DemoError, match="no float16 GEMM peak"):
        pk.peak_flops(p, "float16")
    stored = pk.peaks_for(p, "float32")  # what a measurement stores: JSON-able, one dtype
    assert set(stored["compute"]) == {"float32"} and stored["bandwidth"] is not p["bandwidth"]
    pk.clear_peaks()


def test_bandwidth_runs_with_the_threads_asked_and_restores_the_deck_setting():
    import torch

    deck = set_threads()
    bw = pk.measure_bandwidth(elems=2**22, budget_s=0.02, threads=1)
    assert bw["threads"] == 1 and bw["buffer_bytes"] == 2**24 and bw["bytes_per_s"] > 1e8
    assert torch.get_num_threads() == deck


# ---------------------------------------------------------------------------------------
# GPU forms (run with `pytest -m gpu` on a GPU machine)
# ---------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.timing
def test_gpu_peaks_are_stable_and_bandwidth_near_the_spec_sheet():
    a = pk.measure_peaks(("float32",), budget_s=0.5)
    b = pk.measure_peaks(("float32",), budget_s=0.5)
    assert _agree(a["bandwidth"]["bytes_per_s"], b["bandwidth"]["bytes_per_s"]) <= 0.10
    assert _agree(a["compute"]["float32"]["flops_per_s"], b["compute"]["float32"]["flops_per_s"]) <= 0.10
    spec = pk.spec_sheet(a["device_name"])
    if spec:
        assert 0.5 <= a["bandwidth"]["bytes_per_s"] / spec["bandwidth"] <= 1.05
    assert torch_device() == "cuda"
