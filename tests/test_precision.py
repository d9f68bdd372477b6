"""Part 3, precision as a lever (demos.topics.precision): the seed's MLP block in float32, TF32,
autocast and bfloat16, eager and compiled. What each precision is (output dtypes, distance from
float64), what the device lacks (one line per row), the setting restored, the bfloat16-arithmetic
test on real /proc/cpuinfo formats, and the seed's figures. The slide's claims at the defaults,
and every control, are tests/test_demos.py's and tests/test_ordering.py's."""
from __future__ import annotations

import pytest

from demos.engine import devices, matmul_units
from demos.engine.matmul_units import bf16_matmul_units, bf16_matrix_units, matmul_precision, tf32_problem
from demos.engine.errors import DemoError
from demos.engine.measurement import Run
from demos.engine.timing import MIN_ROUNDS
from demos.topics import precision as topic

X86_AMX = "processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512bw avx512_bf16 amx_bf16 amx_tile\n"
X86_AVX512_BF16 = "processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512bw avx512_bf16\n"
X86_AVX2 = "processor\t: 0\nflags\t\t: fpu sse2 avx2 fma\n"
ARM_BF16 = "processor\t: 0\nFeatures\t: fp asimd sve bf16 i8mm\n"
# oneDNN's verbose lines for a bfloat16 GEMM, in the format oneDNN 3.12 prints here for the kernels it
# does run (a convolution): faked, this CPU has no AMX. The AMX implementation is the one ONEDNN_VERBOSE
# named on the Intel Xeon VM (issue 58); the capped one stands for any implementation without AMX
_LINE = ("onednn_verbose,v1,primitive,exec,cpu,matmul,{},undef,src:bf16::blocked:ab::f0 wei:bf16::blocked:ab::f0 "
         "dst:bf16::blocked:ab::f0,attr-scratchpad:user,,512x512:512x512,0.1\n")
ONEDNN_AMX = "onednn_verbose,v1,info,cpu,isa:Intel AVX-512 with Intel AMX\n" + _LINE.format("brg_matmul:avx10_1_512_amx")
ONEDNN_CAPPED = "onednn_verbose,v1,info,cpu,isa:Intel AVX2\n" + _LINE.format("brg_matmul:avx2")


@pytest.fixture(scope="module")
def measured():
    """One measurement at the smallest batch (each precision's compiled copy compiles once)."""
    return topic.measure_lever(Run(), batch=topic.BATCHES["cpu"][0], budget_s=0.02)


def test_each_precision_is_what_its_row_says(measured):
    rows = measured["rows"]
    assert list(rows) == list(topic.ROWS)  # in the slide's order
    assert rows["tf32"] == {"error": tf32_problem("cpu")} and rows["tf32"]["error"].endswith("this CPU does not have")
    dtypes = {r: {f: v["out_dtype"] for f, v in rows[r].items()} for r in ("float32", "autocast", "bfloat16")}
    # autocast's matmuls take bfloat16; each result meets a float32 bias and promotion returns float32
    assert dtypes == {"float32": {"torch_eager": "float32", "torch_compile": "float32"},
                      "autocast": {"torch_eager": "float32", "torch_compile": "float32"},
                      "bfloat16": {"torch_eager": "bfloat16", "torch_compile": "bfloat16"}}
    for r in ("float32", "autocast", "bfloat16"):
        for f in topic.FORMS:
            t = rows[r][f]
            # every form sampled in the same rounds: 5, or as few as MIN_ROUNDS where 5 would overrun 3× the
            # budget (a CPU without bfloat16 arithmetic takes a few tenths of a second a call)
            assert t["p10_s"] <= t["median_s"] <= t["p90_s"] and t["n"] >= MIN_ROUNDS and t["first_s"] > 0
            assert t["n"] == rows["float32"]["torch_eager"]["n"]
    # digits: float32 agrees with float64 to ~1e-7 of the output's scale; bfloat16 to ~1e-2
    assert rows["float32"]["torch_eager"]["distance"] < 1e-5 < 1e-4 < rows["bfloat16"]["torch_eager"]["distance"] < 0.1
    claims = topic.lever_claims
    digits = rows["bfloat16"]["torch_eager"]["distance"] / rows["float32"]["torch_eager"]["distance"]
    assert claims["digits"].holds(digits, "cpu") and claims["keeps"].holds(topic._worst_compiled_error(measured), "cpu")


def test_a_second_measurement_times_again_without_compiling_again(measured):
    run = Run()
    first = topic.measure_lever(run, batch=2, budget_s=0.02)
    again = topic.measure_lever(run, batch=2, budget_s=0.02)
    assert all(f not in again["rows"][r] or again["rows"][r][f].get("first_s") == first["rows"][r][f].get("first_s")
               for r in topic.ROWS for f in topic.FORMS)  # first calls are timed once per sizes, then remembered
    assert first["rows"]["float32"]["torch_eager"]["median_s"] != again["rows"]["float32"]["torch_eager"]["median_s"]


def test_the_lever_claim_needs_bfloat16_matrix_units(measured):
    lever = topic.lever_claims["lever"]
    with_units = {**measured, "bf16_matrix_units": True}  # tensor cores, AMX
    without = {**measured, "bf16_matrix_units": False}  # dot products, or none
    assert lever.evaluate(with_units) is not None
    assert lever.evaluate(without) is None  # bfloat16 saves bytes more than arithmetic: no claim
    assert lever.verdict(without).status == "does not apply"
    assert measured["bf16_matrix_units"] is bf16_matrix_units()  # read with the measurement, on this machine
    assert measured["bf16_gemm_speedup"] > 0  # measured by the demo, and stated beside it
    assert f"ran {measured['bf16_gemm_speedup']:.2g}× float32's" in lever.verdict(measured).condition
    ratio = topic._bf16_eager_vs_fp32_compiled(measured)
    assert ratio == measured["rows"]["float32"]["torch_compile"]["median_s"] / measured["rows"]["bfloat16"]["torch_eager"]["median_s"]


def test_bfloat16_arithmetic_is_read_from_the_cpu_flags():
    assert bf16_matmul_units(X86_AMX) is True
    assert bf16_matmul_units(X86_AVX2) is False
    assert bf16_matmul_units(ARM_BF16) is True
    assert bf16_matmul_units("") is None  # no flags to read (not Linux): unknown, not "no"
    # matrix units: AMX where oneDNN runs the GEMM on it, not the dot products of AVX512_BF16 or Arm's BF16
    assert bf16_matrix_units(X86_AMX, ONEDNN_AMX) is True
    assert bf16_matrix_units(X86_AMX, ONEDNN_CAPPED) is False  # the flag shows, the library is capped
    assert bf16_matrix_units(X86_AMX, "") is False  # torch did not hand the GEMM to oneDNN
    assert bf16_matrix_units(X86_AVX512_BF16) is False
    assert bf16_matrix_units(ARM_BF16) is False
    assert bf16_matrix_units("") is None


def test_amx_counts_where_onednn_runs_on_it_not_where_the_cpu_advertises_it(monkeypatch):
    """`check --as avx2` caps oneDNN at AVX2 (demos.deck.matrix.AVX2): on an AMX machine its bfloat16
    GEMMs are then emulated, and the lever claim does not apply. The probe is real: torch's own
    bfloat16 GEMM under ONEDNN_VERBOSE in a fresh process with the cap, on this CPU; only the flag is faked."""
    from demos.deck.matrix import AVX2

    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", AVX2["ONEDNN_MAX_CPU_ISA"])
    ran = matmul_units.onednn_bf16_gemm()
    assert ran is not None and not any("amx" in i for i in ran), ran
    assert bf16_matrix_units(X86_AMX) is False
    why = matmul_units.amx_withheld(X86_AMX)
    assert why.startswith("this CPU advertises AMX, but ") and why.endswith("(ONEDNN_MAX_CPU_ISA=AVX2)"), why
    assert matmul_units.amx_withheld(X86_AMX, ONEDNN_CAPPED) == \
        "this CPU advertises AMX, but oneDNN runs them as brg_matmul:avx2 (ONEDNN_MAX_CPU_ISA=AVX2)"
    assert matmul_units.amx_withheld(X86_AMX, ONEDNN_AMX) is None
    assert matmul_units.amx_withheld(X86_AVX2) is None
    # the reason reaches the footer: the claim does not apply, and says why
    lever = topic.lever_claims["lever"]
    d = {"device": "cpu", "params": {"D": 256, "H": 1024}, "rows": {"bfloat16": {"torch_eager": {"distance": 1e-2}}},
         "bf16_matrix_units": False, "bf16_units_withheld": matmul_units.amx_withheld(X86_AMX, ONEDNN_CAPPED),
         "bf16_gemm_speedup": 0.05}
    v = lever.verdict(d)
    assert v.status == "does not apply" and "oneDNN runs them as brg_matmul:avx2" in v.condition, v.condition


def test_tensor_cores_are_bfloat16_matrix_units_from_ampere(monkeypatch):
    monkeypatch.setattr(matmul_units, "torch_device", lambda: "cuda")  # faked: no GPU here
    for cc, units in (((7, 5), False), ((8, 0), True), ((9, 0), True), (None, None)):
        monkeypatch.setattr(matmul_units, "cuda_capability", lambda cc=cc: cc)
        assert bf16_matrix_units() is units, cc
    monkeypatch.setattr(matmul_units, "torch_device", lambda: "mps")
    assert bf16_matrix_units() is None  # another GPU backend: unknown, and the claim does not apply


def test_tf32_is_refused_in_one_line_off_ampere(monkeypatch):
    assert tf32_problem("mps").startswith("TF32 is a format of NVIDIA's tensor cores")
    monkeypatch.setattr(matmul_units, "cuda_capability", lambda: (7, 5))  # a T4: faked, no GPU here
    assert tf32_problem("cuda") == "TF32 needs compute capability 8.0 or newer; this GPU is 7.5"
    monkeypatch.setattr(matmul_units, "cuda_capability", lambda: (9, 0))
    assert tf32_problem("cuda") is None


def test_the_matmul_setting_is_restored_even_when_the_call_fails():
    torch = devices.require_torch()
    before = torch.get_float32_matmul_precision()
    with pytest.raises(ZeroDivisionError):
        with matmul_precision("high"):
            assert torch.get_float32_matmul_precision() == "high"
            1 / 0
    assert torch.get_float32_matmul_precision() == before


def test_a_batch_too_large_is_one_line():
    with pytest.raises(DemoError) as e:  # not one of the control's batches
        topic.lever.run({"batch": 10**6})
    assert "\n" not in str(e.value) and "batch" in str(e.value)
    with pytest.raises(DemoError) as e:  # called directly: more memory than the machine has
        topic.measure_lever(Run(), batch=60000)
    assert "\n" not in str(e.value) and str(e.value).startswith("out of memory at")


def test_the_seeds_a100_figures_are_its_tf32_row_at_its_sizes(measured):
    assert topic._seed_mlp({"batch": 8}) is None  # reported only at B,S,D,H = 256,1024,512,2048
    seed = topic.lever.seed_reference({"batch": 256})
    assert seed["seed"] and seed["params"] == {"B": 256, "S": 1024, "D": 512, "H": 2048}
    tf32 = seed["rows"]["tf32"]
    assert (tf32["torch_eager"]["median_s"], tf32["torch_compile"]["median_s"]) == (22.5e-3, 14.4e-3)
    # drawn beside a measurement as its times in words (it has no float32 row to divide by)
    fig = topic.figure_lever({**measured, "stamp": "here"}, seed)
    texts = [t.get_text() for ax in fig.axes for t in ax.texts] + [ax.get_title(loc="left") for ax in fig.axes]
    assert any("22.50 ms → 14.40 ms (compiling ×1.56)" in t for t in texts), texts


def test_a_form_that_cannot_run_here_is_one_line_and_the_others_still_measure():
    class NoCompiler(Run):  # as on a machine without a C++ compiler: every compiled call fails
        def compile(self, fn, tag="", **options):
            def fails(*args):
                raise RuntimeError("InductorError: CppCompileError: C++ compile error\nlong log …")
            return fails

    d = topic.measure_lever(NoCompiler(), batch=2, budget_s=0.02)
    for r in ("float32", "autocast", "bfloat16"):
        assert d["rows"][r]["torch_compile"]["error"].count("\n") == 0
        assert "CppCompileError" in d["rows"][r]["torch_compile"]["error"]
        assert d["rows"][r]["torch_eager"]["median_s"] > 0
    assert topic.lever.check_claims(d)  # the claims that need compiled forms fail; nothing raises
    texts = [t.get_text() for ax in topic.figure_lever({**d, "stamp": "here"}).axes for t in ax.texts]
    assert sum(t.startswith("torch.compile: torch.compile's C++ compile failed") for t in texts) == 3, texts
