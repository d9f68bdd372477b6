"""Part 3 (demos.topics.roofline): roofline points, the claims the slides make, bad input, recorded
runs drawn beside live ones. The model and the peaks are tests/test_peaks.py's (demos.engine.peaks);
driving every control of every demo is tests/test_demos.py's job."""
from __future__ import annotations

import statistics

import pytest

import demos  # noqa: F401  (environment before torch/JAX)
from demos.engine import peaks as pk
from demos.engine.devices import device_name
from demos.engine.errors import DemoError
from demos.engine.measurement import Run
from demos.topics import roofline as rf
from demos.topics.roofline_figures import SEED
from demos.topics.roofline_points import explain


# ---------------------------------------------------------------------------------------
# Points on the roofline
# ---------------------------------------------------------------------------------------
def test_make_point_predicted_time_and_ratio_by_hand():
    peaks = {"device": "cpu", "device_name": "test", "bandwidth": {"bytes_per_s": 1e10},
             "compute": {"float32": {"flops_per_s": 1e11}}}
    p = {"N": 2**20}
    pt = rf.make_point("chain", "torch_eager", p, "float32", {"median_s": 0.02, "p10_s": 0.019, "p90_s": 0.03},
                       peaks)
    nbytes = (22 * 2**20 + 1) * 4
    assert pt["bound"] == "memory"
    assert pt["predicted_s"] == pytest.approx(nbytes / 1e10)
    assert pt["achieved"] == pytest.approx(10 * 2**20 / 0.02)
    assert pt["ratio"] == pytest.approx(0.02 / (nbytes / 1e10))
    assert isinstance(pt["why"], str) and pt["why"]
    # a tiny call far above its prediction is blamed on host time per call
    tiny = rf.make_point("chain", "torch_compile", {"N": 1024}, "float32", {"median_s": 20e-6}, peaks)
    assert tiny["ratio"] > 10 and "host time per call" in tiny["why"]
    # … but on a CPU, a compiled chain 100 µs over its prediction is its math, not the host
    mathy = rf.make_point("chain", "torch_compile", {"N": 2**17}, "float32", {"median_s": 160e-6}, peaks)
    assert mathy["ratio"] > 2 and "FLOPs" in mathy["why"]
    # faster than the memory roof: the data came from cache
    fast = rf.make_point("chain", "torch_eager", p, "float32", {"median_s": pt["predicted_s"] / 3}, peaks)
    assert "cache" in fast["why"]


def test_the_h100_records_compiled_chain_is_host_time_per_call():
    """On the committed H100 record the compiled chain ran 2.6–5× its prediction (a 46 µs kernel's
    worth of bytes), an excess under a GPU call's host-time allowance: the reason column's rule
    calls it host time per call (inferred from the rule, not measured; the notes say so)."""
    from demos.engine.results import reference_for

    rec = reference_for("roofline", "predicted")
    assert rec is not None and "H100" in rec.machine.get("gpu_name", "")
    for name in ("predicted", "roofline"):
        sec = rec.sections["roofline"][name]
        chain = [p for p in sec["points"] if p["workload"] == "chain"]
        for p in chain:
            why = explain(p, sec["peaks"]["device"])
            if p["backend"] == "torch_eager":
                assert why == "near the memory roof", (name, why)
            else:
                assert p["ratio"] > 2 and "host time per call" in why, (name, p["backend"], p["ratio"], why)
        gemms = [p for p in sec["points"] if p["workload"] == "two_matmuls"]
        assert all(explain(p, "cuda") == "near the compute roof" for p in gemms)


def test_every_reason_fits_its_row_beside_any_other(monkeypatch):
    """The reasons column of the predicted figure: each reason is one line, so rows that a
    measurement gives different reasons never overlap (two-line reasons in neighbouring rows did, on
    a busy CI run whose timings moved the MLP block's row off the roof)."""
    import textwrap

    from demos.engine import plots
    from demos.engine.results import reference_for
    from demos.topics import roofline_figures
    from demos.topics.roofline_points import WHY, WHY_CHARS

    reasons = [w.format(bound="compute") for w in WHY.values()] + ["near the memory roof"]
    assert all("\n" not in textwrap.fill(w, WHY_CHARS) for w in reasons), reasons
    rec = reference_for("roofline", "predicted")
    assert rec is not None
    sec = rec.sections["roofline"]["predicted"]
    rows = [q for q in sec["points"] if q.get("median_s")]
    assert len(rows) >= 2
    for order in (reasons, reasons[::-1]):
        given = iter(order * len(rows))
        monkeypatch.setattr(roofline_figures, "explain", lambda q, device=None: next(given))
        fig = roofline_figures.figure_predicted({**sec, "points": rows}, None)
        shown = {t.get_text() for t in fig.axes[1].texts}
        assert set(order[:len(rows)]) <= shown, shown  # every row its own reason, each one drawn
        assert not plots.texts_overlapping(fig), order
        assert not plots.texts_outside(fig) and not plots.texts_too_small(fig), order
        plots.plt.close(fig)


def test_the_chains_default_goes_past_the_cache_where_memory_allows():
    """Compiling the chain pays where eager's passes stream from memory: the default N is the first
    past the largest cache, on the AMD EPYC VMs' 32 MiB L3 and on the Intel Xeon VM's 300 MiB one
    (whose record, at the old 2^24 cap, said "does not apply"), unless memory runs out first."""
    from demos.topics.roofline_points import CHAIN_LIVE_BUFFERS, CHAIN_N_MAX, chain_past_cache

    GiB, MiB = 2**30, 2**20
    assert chain_past_cache({"L3": 32 * MiB}, 20 * GiB) == 2**23
    assert chain_past_cache({"L3": 300 * MiB}, 20 * GiB) == 2**26 == CHAIN_N_MAX
    assert 2 * 4 * chain_past_cache({"L3": 300 * MiB}, 20 * GiB) > 300 * MiB
    assert chain_past_cache({"L3": 300 * MiB}, 4 * GiB) == 2**25  # 2^26 would need 6 GiB free
    assert chain_past_cache({"L3": 300 * MiB}, None) == 2**26  # free memory unknown: the cache decides
    assert chain_past_cache({"L3": 2 * GiB}, 64 * GiB) == CHAIN_N_MAX  # never past the slider
    assert chain_past_cache({}, 20 * GiB) == 2**23
    n = chain_past_cache({"L3": 300 * MiB}, 1 * GiB)
    assert CHAIN_LIVE_BUFFERS * 4 * n <= GiB // 2 < CHAIN_LIVE_BUFFERS * 4 * 2 * n


def test_sizes_map_onto_workloads_and_refuse_nonsense():
    s = rf.payoff_defaults("cpu")
    assert rf.workload_params("chain", s, "cpu") == {"N": s["N"]}
    assert rf.workload_params("two_matmuls", s, "cpu") == {"B": s["T"], "D": s["D"], "H": s["H"]}
    mlp = rf.workload_params("mlp_block", s, "cpu")
    assert mlp["B"] * mlp["S"] == s["T"] and mlp["D"] == s["D"]
    half = rf.scaled_sizes(0.5, "cpu")
    assert half["N"] == s["N"] // 2 and half["T"] == s["T"] // 2 and half["D"] == s["D"]
    assert rf.scaled_sizes(1e-9, "cpu")["N"] == 1024  # clamped, never zero
    with pytest.raises(DemoError):
        rf.scaled_sizes(-1)
    with pytest.raises(DemoError):
        rf.workload_params("nope", s)
    with pytest.raises(DemoError):
        rf.check_dtype_here("int8")
    assert rf.overhead_sizes("cpu", largest=2**12) == [256, 1024, 4096]
    with pytest.raises(DemoError):
        rf.overhead_sizes("cpu", largest=16)


def test_fresh_compiled_copies_do_not_share_dynamo_caches():
    """Part 3 compiles its own copy of each workload, kept in the demo's cache: compiling it adds a
    cache entry to the copy's code object and none to the original's (which other parts compile)."""
    import torch
    from torch._dynamo.eval_frame import _debug_get_cache_entry_list

    f = rf.get_workload("chain").torch_fn
    before = len(_debug_get_cache_entry_list(f.__code__))
    run = Run()
    compiled = pk.compiled_copy(run, "chain")
    assert compiled is pk.compiled_copy(run, "chain")
    assert compiled is not pk.compiled_copy(run, "chain", "reduce-overhead")
    assert compiled is not pk.compiled_copy(Run(), "chain")  # another demo (or after forget()): its own
    compiled(torch.randn(1000))
    copy = compiled._torchdynamo_orig_callable
    assert copy.__code__ is not f.__code__ and copy.__name__ == "chain_torch_part3_default"
    assert len(_debug_get_cache_entry_list(copy.__code__)) == 1
    assert len(_debug_get_cache_entry_list(f.__code__)) == before


def test_each_measurement_stores_the_peaks_it_was_drawn_against(monkeypatch):
    pk.clear_peaks()
    calls = []
    monkeypatch.setattr(pk, "measure_bandwidth", lambda **kw: calls.append("copy") or {"bytes_per_s": 123e9})
    monkeypatch.setattr(pk, "measure_gemm", lambda dtype, **kw: calls.append(dtype) or {"flops_per_s": 4.56e12})
    monkeypatch.setattr(pk, "device_name", lambda: "Fake Machine")
    monkeypatch.setattr(rf, "measure_forms", lambda run, w, backends, *a, **k: {
        b: {"median_s": 1e-3, "p10_s": 1e-3, "p90_s": 1e-3} for b in backends})
    data = rf.measure_roofline(Run(), "chain", budget_s=0.01)
    # the measurement carries the peaks it was drawn against (a recorded run brings its own roofs)
    assert data["peaks"]["bandwidth"]["bytes_per_s"] == 123e9 and data["peaks"]["device_name"] == "Fake Machine"
    assert rf.measure_predicted(Run(), budget_s=0.01)["peaks"]["compute"]["float32"]["flops_per_s"] == 4.56e12
    assert calls == ["copy", "float32"]  # measured once, shared by both demos
    pk.clear_peaks()


# ---------------------------------------------------------------------------------------
# Claims the slides make about measured behaviour (CPU path)
# ---------------------------------------------------------------------------------------
def _interleaved(workload: str, params: dict, backends=("torch_eager", "torch_compile"), rounds: int = 5,
                 budget_s: float = 0.08) -> dict[str, float]:
    """Median over rounds of each backend's median, the backends interleaved so load drift on a
    shared machine hits them alike."""
    meds: dict[str, list[float]] = {b: [] for b in backends}
    run = Run()  # one demo's cache: each form compiled once
    with run.declared():  # as the demo measures: torch's threads chosen from the load, held for both forms
        for b in backends:  # first calls (compiles) out of the way
            rf.measure_form(run, workload, b, params, budget_s=0.01)
        for _ in range(rounds):
            for b in backends:
                meds[b].append(rf.measure_form(run, workload, b, params, budget_s=budget_s, min_samples=5)["median_s"])
    return {b: statistics.median(v) for b, v in meds.items()}


def _payoff_failures(device: str, medians: dict[str, dict[str, float]]) -> list[str]:
    """The payoff slide's claims (as declared, thresholds and all) on interleaved medians."""
    data = {"device": device, "workloads": {w: {"rows": {b: {"median_s": t} for b, t in m.items()}}
                                            for w, m in medians.items()}}
    return [c for c, ok in rf.payoff.check_claims(data).items() if not ok]


@pytest.mark.timing
def test_compiled_chain_beats_eager_and_by_more_than_two_matmuls_gain():
    d = rf.payoff_defaults()
    for attempt in (1, 2):  # a shared 2-core box can stall one measurement: once more from the declared state
        chain = _interleaved("chain", rf.workload_params("chain", d))
        mm = _interleaved("two_matmuls", rf.workload_params("two_matmuls", d))
        chain_x = chain["torch_eager"] / chain["torch_compile"]
        mm_x = mm["torch_eager"] / mm["torch_compile"]
        msg = f"chain {chain} ({chain_x:.2f}×), two_matmuls {mm} ({mm_x:.2f}×)"
        failed = _payoff_failures(rf.torch_device(), {"chain": chain, "two_matmuls": mm})
        if not failed and chain_x > mm_x:
            break
    assert not failed, msg
    assert chain_x > mm_x, msg


def test_fusion_moves_the_chain_point_right_and_up_on_the_roofline():
    data = rf.measure_roofline(Run(), "chain", budget_s=0.05)  # the panel's own path runs
    peaks = pk.peaks(("float32",))
    params = data["params"]
    meds = _interleaved("chain", params, rounds=3)  # the claim, measured robustly
    e, c = (rf.make_point("chain", b, params, "float32", {"median_s": meds[b]}, peaks)
            for b in ("torch_eager", "torch_compile"))
    assert c["intensity"] / e["intensity"] == pytest.approx(22, rel=0.01)  # right
    assert c["achieved"] > e["achieved"], meds  # up
    assert {p["backend"] for p in data["points"]} == set(rf.BACKENDS3)
    # the two matmuls barely move right
    mm = rf.measure_roofline(Run(), "two_matmuls", budget_s=0.05)
    by = {p["backend"]: p for p in mm["points"]}
    assert by["torch_compile"]["intensity"] / by["torch_eager"]["intensity"] < 1.5
    assert all(p["predicted_s"] > 0 and p["ratio"] > 0 for p in mm["points"] if p.get("median_s"))


@pytest.mark.timing  # two modes timed: a busy spell of the shared box gets one more measurement
def test_reduce_overhead_has_nothing_to_remove_on_a_cpu():
    if rf.torch_device() != "cpu":
        pytest.skip("the CPU form of the claim")
    same = rf.overheads_claims["same"]
    # same C++ either way: the slide's claim, read as the slide reads it (best deciles, median over
    # N). Medians at one size failed beside a busy worker (default 39 µs, reduce-overhead 18 µs)
    for _attempt in range(2):
        data = rf.measure_overheads(Run(), sizes=[256, 1024, 4096], budget_s=0.1)
        sentence, holds = same.evaluate(data)
        if holds:
            break
    assert holds, (sentence, rf.overhead_floor(data, "default"), rf.overhead_floor(data, "reduce-overhead"))


# ---------------------------------------------------------------------------------------
# GPU forms of the claims (run with `pytest -m gpu` on a GPU machine)
# ---------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_gpu_two_matmuls_gain_little_and_chain_gains_at_the_slides_sizes():
    # the payoff slide's GPU sizes, where its claims are made. At the seed's B=256 an H100 VM read
    # 97 µs eager vs 155 µs compiled in one of two runs: tiny GEMMs are host-bound, not a GEMM fact
    d = rf.payoff_defaults("gpu")
    mm = _interleaved("two_matmuls", rf.workload_params("two_matmuls", d, "gpu"), rounds=5, budget_s=0.2)
    chain = _interleaved("chain", rf.workload_params("chain", d, "gpu"), rounds=5, budget_s=0.2)
    assert not _payoff_failures("cuda", {"chain": chain, "two_matmuls": mm}), (chain, mm)


@pytest.mark.gpu
def test_gpu_roofline_matmuls_near_the_compute_roof():
    peaks = pk.peaks(("float32",), refresh=True)
    data = rf.measure_roofline(Run(), "two_matmuls", budget_s=0.2)
    eager = next(p for p in data["points"] if p["backend"] == "torch_eager")
    # the predicted slide's GEMM claim: time within its bound of the compute roof's prediction
    assert rf.predicted_claims["gemm"].holds(peaks["compute"]["float32"]["flops_per_s"] / eager["achieved"], "gpu"), eager


@pytest.mark.gpu
def test_gpu_reduce_overhead_does_not_lower_a_fused_kernels_floor():
    data = rf.measure_overheads(Run(), sizes=[2**10, 2**12], budget_s=0.2)
    ratio = rf.overhead_floor(data, "reduce-overhead") / rf.overhead_floor(data, "default")
    assert rf.overheads_claims["floor"].holds(ratio, "gpu"), data


# ---------------------------------------------------------------------------------------
# A slider re-measures only what it changes; bad input is one line
# ---------------------------------------------------------------------------------------
def test_payoff_slider_remeasures_only_the_workloads_it_changes():
    d, run = rf.payoff_defaults(), Run()  # one panel: its measurements share the demo's cache
    first = rf.measure_payoff(run, budget_s=0.02)
    second = rf.measure_payoff(run, N=d["N"] // 2, budget_s=0.02)
    assert second["workloads"]["two_matmuls"] is first["workloads"]["two_matmuls"]  # reused
    assert second["workloads"]["mlp_block"] is first["workloads"]["mlp_block"]
    assert second["workloads"]["chain"]["params"]["N"] == first["workloads"]["chain"]["params"]["N"] // 2
    third = rf.measure_payoff(run, N=d["N"] // 2, T=d["T"] // 2, budget_s=0.02)  # rows: both GEMM workloads
    assert third["workloads"]["chain"] is second["workloads"]["chain"]
    assert third["workloads"]["two_matmuls"]["params"]["B"] == d["T"] // 2
    assert third["workloads"]["mlp_block"] is not second["workloads"]["mlp_block"]


def test_bad_input_is_one_clear_line():
    for call, words in ((lambda: rf.measure_roofline(Run(), "nope"), "workload"),
                        (lambda: rf.measure_payoff(Run(), dtype="int8"), "dtype"),
                        (lambda: rf.measure_predicted(Run(), scale=0), "scale"),
                        (lambda: rf.measure_overheads(Run(), largest=16), "2^8")):
        with pytest.raises(DemoError) as exc:
            call()
        assert words in str(exc.value) and "\n" not in str(exc.value)


def test_out_of_memory_is_one_line_and_the_panel_recovers(monkeypatch):
    import demos.engine.workloads as wl

    p = rf.roofline.open_panel()
    p._build()
    p.update()
    good = p.renders
    monkeypatch.setattr(wl, "free_memory_bytes", lambda device=None: 1024)
    p.controls["scale"].value = 4.0
    p.join(300)
    assert p.last_error and "out of memory" in p.last_error and "\n" not in p.last_error
    assert p.renders == good  # no figure drawn for the failed call
    monkeypatch.undo()
    p.controls["scale"].value = 0.25
    p.join(300)
    assert p.last_error is None and p.renders == good + 1


# ---------------------------------------------------------------------------------------
# Recorded runs: beside the live numbers, or instead of them
# ---------------------------------------------------------------------------------------
def _small_record(tmp_path):
    """A record holding each demo's measurement (small budgets), as `make record` stores them."""
    from demos.engine.results import Record

    rec = Record.new("cpu test record")
    rec.machine["device_name"] = "Recorded Test Machine"
    pk.clear_peaks()
    pk._PEAKS[f"{rf.torch_device()}:{pk.set_threads()}"] = pk.measure_peaks(("float32",), budget_s=0.05)
    sec = rec.sections.setdefault("roofline", {})
    sec["payoff"] = rf.measure_payoff(Run(), budget_s=0.02)
    sec["roofline"] = rf.measure_roofline(Run(), "chain", budget_s=0.02)
    sec["predicted"] = rf.measure_predicted(Run(), scale=0.25, budget_s=0.02)
    sec["overheads"] = rf.measure_overheads(Run(), sizes=[256, 1024], budget_s=0.02)
    for d in sec.values():
        d["values"] = {"dtype": "float32"}
    pk.clear_peaks()
    return Record.load(rec.save(tmp_path / "ref.json"))


def test_recorded_run_is_drawn_beside_the_live_one_with_its_own_roofs(tmp_path):
    rec = _small_record(tmp_path)
    ref = {name: getattr(rf, name).reference({"dtype": "float32"}, record=rec)
           for name in ("payoff", "roofline", "predicted", "overheads")}
    assert all(r is not None and r["recorded"] for r in ref.values())
    assert "Recorded Test Machine" in ref["roofline"]["stamp"]
    assert rf.roofline.reference({"dtype": "bfloat16"}, record=rec) is None  # a dtype must match
    # the recorded roofs come from the recorded run's own peaks, not this machine's
    mine = {**ref["roofline"]["peaks"], "device_name": "Live Machine",
            "bandwidth": {"bytes_per_s": 7e9}, "compute": {"float32": {"flops_per_s": 3e10}}}
    live = {**ref["roofline"], "peaks": mine, "recorded": False, "stamp": "live"}
    plain = rf.figure_roofline(live, None)
    both = rf.figure_roofline(live, ref["roofline"])
    labels = [t.get_text() for t in both.axes[0].get_legend().get_texts()]
    assert any("recorded (hollow points)" in t and device_name()[:30] in t for t in labels), labels
    assert len(both.axes[0].collections) > len(plain.axes[0].collections)
    assert any("Beside it, recorded on" in t.get_text() for t in both.texts)
    # … but its points only beside the same workload
    other = {**live, "workload": "two_matmuls"}
    labels = [t.get_text() for t in rf.figure_roofline(other, ref["roofline"]).axes[0].get_legend().get_texts()]
    assert not any("hollow" in t for t in labels) and any(t.startswith("recorded") for t in labels)
    pred = {**ref["predicted"], "recorded": False}
    assert len(rf.figure_predicted(pred, ref["predicted"]).axes[0].collections) > \
        len(rf.figure_predicted(pred, None).axes[0].collections)
    pay = {**ref["payoff"], "recorded": False}
    assert any("(recorded): " in ax.get_xlabel() for ax in rf.figure_payoff(pay, ref["payoff"]).axes)
    ovh = rf.figure_overheads({**ref["overheads"], "recorded": False}, ref["overheads"])
    assert any("dotted: recorded on" in t.get_text() for t in ovh.axes[0].texts)
    # drawn alone (a recorded-only export), each says where it was recorded
    for name, r in ref.items():
        fig = getattr(rf, name).figure(r, None)
        assert any(t.get_text().startswith("Recorded on") for t in fig.texts), name



# ---------------------------------------------------------------------------------------
# The slides' claims (Demo.claims): the CPU forms run at the defaults in tests/test_demos.py;
# here both forms on hand-made data, so the GPU wording and bands are exercised in CI too
# ---------------------------------------------------------------------------------------
def _rows(eager: float, compiled: float) -> dict:
    return {b: {"median_s": t, "p10_s": t} for b, t in (("torch_eager", eager), ("torch_compile", compiled),
                                                        ("jax_jit", compiled))}


def test_payoff_claims_hold_for_the_seeds_a100_numbers_and_fail_when_matmuls_gain_much():
    seed = {w: {"rows": _rows(r["torch_eager"], r["torch_compile"]), "params": {"N": 2**25}}
            for w, r in SEED.items()}
    l2 = {"device": "GPU", "levels": {"L2": 50 * 2**20}}  # an H100's
    gpu = rf.payoff_claims({"device": "cuda", "dtype": "float32", "workloads": seed, "cache_levels": l2})
    assert len(gpu) == 2 and all(gpu.values()), gpu  # chain 6.7×, two_matmuls 214 vs 183 µs
    l3 = {"device": "CPU", "levels": {"L2": 2**20, "L3": 32 * 2**20}}
    cpu_data = {"device": "cpu", "dtype": "float32", "cache_levels": l3,
                "workloads": {**seed, "two_matmuls": {"rows": _rows(5e-3, 1e-3)}}}
    cpu = rf.payoff_claims(cpu_data)
    assert [k for k, ok in cpu.items() if not ok] == [rf.payoff_claims["matmuls"].render(cpu_data)]  # 5× is not little
    # the chain's regime: at 2^20 (each eager op reads and writes 8 MiB, inside a 32 MiB L3) it does not apply
    inside = {**cpu_data, "workloads": {**cpu_data["workloads"], "chain": {**seed["chain"], "params": {"N": 2**20}}}}
    v = rf.payoff_claims["chain"].verdict(inside)
    assert v.status == "does not apply" and "8 MiB read and written by each eager op, inside this CPU's 32 MiB L3" in v.condition


def test_roofline_predicted_and_overheads_claims_per_device():
    peaks = {"device": "cuda", "device_name": "t", "bandwidth": {"bytes_per_s": 2e12},
             "compute": {"float32": {"flops_per_s": 20e12}}}
    p = {"N": 2**23}
    pts = [rf.make_point("chain", b, p, "float32", {"median_s": t, "p10_s": t}, peaks)
           for b, t in (("torch_eager", 500e-6), ("torch_compile", 80e-6), ("jax_jit", 90e-6))]
    claims = rf.roofline_claims({"workload": "chain", "peaks": peaks, "points": pts})
    assert all(claims.values()) and any("×22 to the right" in c for c in claims), claims
    mm = {"B": 8192, "D": 1024, "H": 2048}
    pred = [rf.make_point("two_matmuls", "torch_eager", mm, "float32", {"median_s": 5e-3, "p10_s": 5e-3}, peaks)]
    assert list(rf.predicted_claims({"peaks": peaks, "points": pred}).values()) == [True]  # ratio 1.4
    pred[0] = rf.make_point("two_matmuls", "torch_eager", mm, "float32", {"median_s": 50e-3, "p10_s": 5e-2}, peaks)
    assert not any(rf.predicted_claims({"peaks": peaks, "points": pred}).values())  # 14× below the roof
    def modes(ro):
        return {m: [{"p10_s": t}, {"p10_s": 2 * t}] for m, t in (("eager", 20e-6), ("default", 30e-6),
                                                                        ("reduce-overhead", ro))}
    # a GPU: a fused kernel's floor does not drop (0.9× is the line); a CPU: the same within 0.5–2×
    assert all(rf.overheads_claims({"device": "cuda", "modes": modes(100e-6)}).values())  # 3.3× (H100: 2.2×)
    assert all(rf.overheads_claims({"device": "cuda", "modes": modes(28e-6)}).values())   # 0.93×
    assert not any(rf.overheads_claims({"device": "cuda", "modes": modes(8e-6)}).values())  # a drop: refuted
    assert not any(rf.overheads_claims({"device": "cpu", "modes": modes(100e-6)}).values())  # 3.3× apart
    assert all(rf.overheads_claims({"device": "cpu", "modes": modes(45e-6)}).values())
