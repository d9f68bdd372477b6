"""Part 2 (demos.topics.fusion): the four optimisations, the claims the slides make, the panels, the notebook."""
from __future__ import annotations

import json
import statistics

import pytest

import demos  # noqa: F401
from demos.introspection import codegen
from demos.topics import fusion
from demos.engine.errors import DemoError
from demos.engine.results import Record
from demos.engine.workloads import WORKLOADS

from conftest import ARTIFACTS, executed_notebook
from demos.engine.devices import torch_device

N_SMALL = 2**14
cpu_only = pytest.mark.skipif(torch_device() != "cpu", reason="CPU form of the claim (GPU form: -m gpu)")


# =======================================================================================
# Units: cost model and helpers
# =======================================================================================
def test_bytes_model_eager_15n_fused_3n():
    w = WORKLOADS["complex_activation"]
    assert w.bytes({"N": 1000}, "float32", fused=False) == 15 * 1000 * 4
    assert w.bytes({"N": 1000}, "bfloat16", fused=True) == 3 * 1000 * 2
    assert len(w.eager_ops) == 6


@cpu_only
def test_panel_sizes_fit_the_device():
    assert fusion.panel_n() == 2**19 and fusion._n_hi() == 23
    assert fusion.default_n() == WORKLOADS["complex_activation"].defaults("cpu")["N"]
    assert fusion._pow2_label(2**19) == "2^19" and fusion._pow2_label(3000) == "3,000"


def test_panels_lists_every_live_cell():
    assert set(fusion.panels()) == {"kernels", "timeline", "latency", "memory", "relayout", "dead_code"}


# =======================================================================================
# Claims on the slides (CPU path)
# =======================================================================================
@cpu_only
def test_claim_fusion_eager_six_ops_compiled_one_fused_cpp_kernel():
    d = fusion.measure_kernels("complex_activation")
    f = d["forms"]
    assert f["torch_eager"]["count"] >= 6 and f["torch_eager"]["names"][:2] == ["sin", "cos"]
    assert f["torch_compile"]["count"] == 1 and f["torch_compile"]["kernels"] == 1
    assert f["torch_compile"]["names"][0].startswith("cpp_fused_")
    assert f["jax_eager"]["count"] >= 6
    assert f["jax_jit"]["count"] == 1 and f["jax_jit"]["fusions"] == 1
    assert any("cpp_fused_" in s for s in d["wrapper"]) and any("fusion(" in s for s in d["hlo"])
    json.dumps(d)


@cpu_only
def test_claim_other_workloads_keep_matmuls_as_library_calls_and_fuse_the_rest():
    dead = fusion.measure_kernels("mlp_dead_code")["forms"]["torch_compile"]
    assert dead["extern"] == ["mm", "mm"] and dead["kernels"] == 1
    block = fusion.measure_kernels("mlp_block")
    comp = block["forms"]["torch_compile"]
    assert sum(1 for e in comp["extern"] if e in codegen.MATMUL_EXTERNS) == 2
    assert comp["kernels"] < block["forms"]["torch_eager"]["count"] - 2  # the elementwise rest is fused


@cpu_only
def test_claim_timeline_eager_six_kernels_compiled_one():
    d = fusion.measure_timeline(N_SMALL)
    eager, comp = d["runs"]
    assert eager["counts"]["kernels"] == 6
    assert comp["counts"]["kernels"] == 1 and comp["kernel_names"][0].startswith("cpp_fused")
    json.dumps(d)


def _medians(N, tries=3):
    """Interleaved medians of eager vs compiled (a noisy shared CPU: best of a few tries)."""
    out = []
    for _ in range(tries):
        d = fusion.measure_latency(N, backends=("torch_eager", "torch_compile", "jax_jit"), budget_s=0.3)
        out.append(d)
        if d["forms"]["torch_compile"]["median_s"] < d["forms"]["torch_eager"]["median_s"]:
            break
    return out


@cpu_only
def test_claim_compiled_is_faster_than_eager_at_the_default_large_size():
    runs = _medians(fusion.default_n())  # 2^21 on a CPU
    last = runs[-1]["forms"]
    msg = [(r["forms"]["torch_eager"]["median_s"], r["forms"]["torch_compile"]["median_s"]) for r in runs]
    assert last["torch_compile"]["median_s"] < last["torch_eager"]["median_s"], msg
    # and on this CPU XLA's fused sin/cos is slower than Inductor's (the notes say so)
    assert statistics.median(r["forms"]["jax_jit"]["median_s"] for r in runs) > \
        statistics.median(r["forms"]["torch_compile"]["median_s"] for r in runs), msg
    assert runs[-1]["speedup_torch"] > 1.0
    assert last["torch_compile"]["bytes"] * 5 == last["torch_eager"]["bytes"]


@cpu_only
def test_claim_compiled_allocates_fewer_buffers_and_less_memory():
    d = fusion.measure_memory(N_SMALL * 4)
    f = d["forms"]
    nbytes = N_SMALL * 4 * 4
    eager = f["torch_eager"]
    assert len(eager["buffers"]) == 6 and all(b["bytes"] == nbytes for b in eager["buffers"])
    assert eager["peak_bytes"] == 6 * nbytes
    comp = f["torch_compile"]
    assert len(comp["code_buffers"]) == 1 < len(eager["buffers"])
    assert comp["peak_bytes"] <= nbytes * 1.01  # the output only
    assert f["jax_jit"]["temp_bytes"] == 0 and f["jax_jit"]["output_bytes"] == nbytes
    assert f["jax_eager"]["peak_bytes"] >= 6 * nbytes
    json.dumps(d)


@cpu_only
def test_claim_relayout_xla_on_cpu_moves_the_heads_in_front():
    d = fusion.measure_relayout(B=32, H=4, D=256, K=64)
    w, p = d["forms"]["as_written"], d["forms"]["pretransposed"]
    assert d["relayout_inserted"] and w["transposes"] >= 1 and p["transposes"] == 0
    assert any(" transpose(" in s for s in w["excerpt"])
    assert all(len(s) <= 64 for s in w["excerpt"])
    json.dumps(d)


@cpu_only
def test_claim_dead_matmul_is_gone_in_both_compilers():
    d = fusion.measure_dead_code(B=32)
    assert d["matmuls"] == {"torch_eager": 3, "torch_compile": 2, "jax_eager": 3, "jax_jit": 2}
    assert d["flops_ratio"] == pytest.approx(2 / 3, rel=0.01)
    assert set(d["times"]) == set(demos.BACKENDS)
    json.dumps(d)


# =======================================================================================
# Figures, records and reference runs
# =======================================================================================
@pytest.fixture(scope="module")
def cpu_record(tmp_path_factory):
    rec = Record.new(label="test record (CPU)")
    fusion.record(rec, quick=True)
    path = tmp_path_factory.mktemp("rec") / "cpu-record.json"
    rec.save(path)
    return path


def test_record_stores_every_panel(cpu_record):
    rec = Record.load(cpu_record)
    sec = rec.sections["fusion"]
    assert set(sec) == {"kernels", "timeline", "latency", "memory", "relayout", "dead_code"}
    assert sec["latency"]["N"] == fusion.panel_n() and "torch_compile" in sec["latency"]["forms"]


def test_live_figures_show_the_reference_beside(cpu_record, monkeypatch):
    monkeypatch.setenv("DEMOS_RESULTS", str(cpu_record))
    monkeypatch.delenv("DEMOS_STATIC", raising=False)
    monkeypatch.setattr(fusion.ui, "recorded_only", lambda: False)
    for name in ("latency", "memory", "dead_code", "kernels"):
        p = fusion.panels()[name]()
        fig, _ = p.compute()
        assert p.last_error is None, (name, p.last_error)
        texts = [t.get_text() for t in fig.texts]
        assert any(t.startswith("grey/hatched/dashed = recorded on") for t in texts), (name, texts)


def test_recorded_only_draws_without_measuring(cpu_record, monkeypatch):
    monkeypatch.setenv("DEMOS_RESULTS", str(cpu_record))
    monkeypatch.setenv("DEMOS_STATIC", "1")

    def boom(*a, **k):
        raise AssertionError("measured although a recorded run was asked for")

    for m in ("measure_kernels", "measure_timeline", "measure_latency", "measure_memory", "measure_relayout",
              "measure_dead_code"):
        monkeypatch.setattr(fusion, m, boom)
    for name, build in fusion.panels().items():
        p = build()
        fig, _ = p.compute()
        assert p.last_error is None and fig is not None, (name, p.last_error)
        assert any("Recorded on" in t.get_text() for t in fig.texts), name


# =======================================================================================
# Panels: every live panel redraws on a control; bad input is one line
# =======================================================================================
def _fresh(panel):
    panel._build()
    panel.update()
    assert panel.last_error is None, panel.last_error
    return panel.renders, panel.last_png


@pytest.mark.parametrize("name, control, value", [
    ("kernels", "workload", "chain"),
    ("timeline", "N", 2**15),
    ("latency", "N", 2**15),
    ("memory", "N", 2**15),
    ("relayout", "H", 2),
    ("dead_code", "B", 32),
])
def test_each_panel_redraws_when_a_control_moves(name, control, value):
    p = fusion.panels()[name]()
    n, png = _fresh(p)
    p.controls[control].value = value
    assert p.last_error is None, p.last_error
    assert p.renders == n + 1 and p.last_png != png
    assert p.last_values[control] == value


def test_dtype_control_redraws_in_bfloat16():
    p = fusion.latency(show=False)
    p._build()
    p.controls["N"].value = 2**14
    n, png = p.renders, p.last_png
    p.controls["dtype"].value = "bfloat16"
    assert p.last_error is None and p.renders == n + 1 and p.last_png != png


def test_bad_input_is_one_line_and_the_panel_still_works(monkeypatch):
    import demos.engine.workloads as wl

    p = fusion.latency(show=False)
    p._build()
    p.controls["N"].value = 2**14
    n = p.renders
    monkeypatch.setattr(wl, "free_memory_bytes", lambda device=None: 1000)  # "nothing free"
    p.controls["N"].value = 2**16
    assert p.last_error and "\n" not in p.last_error and "out of memory" in p.last_error
    assert p.renders == n
    monkeypatch.undo()
    p.controls["N"].value = 2**15
    assert p.last_error is None and p.renders == n + 1


def test_missing_jax_is_one_line_for_the_jax_only_panel(monkeypatch):
    import demos.topics.fusion as fu

    def no_jax():
        raise DemoError("JAX is not installed here (pip install 'jax[cpu]==0.10.2'); torch demos still run")

    monkeypatch.setattr(fu, "require_jax", no_jax)
    p = fusion.relayout(show=False)
    p.compute()
    assert p.last_error and p.last_error.startswith("JAX is not installed") and "\n" not in p.last_error


def test_rerunning_gives_the_same_counts():
    a = fusion.measure_kernels("complex_activation")["forms"]
    b = fusion.measure_kernels("complex_activation")["forms"]
    assert {k: v["count"] for k, v in a.items()} == {k: v["count"] for k, v in b.items()}


# =======================================================================================
# GPU forms of the claims (run with `pytest -m gpu` on a CUDA machine)
# =======================================================================================
@pytest.mark.gpu
def test_gpu_eager_six_kernels_compiled_one_triton_kernel():
    d = fusion.measure_timeline()
    eager, comp = d["runs"]
    assert eager["device_lane"] == "cuda" and eager["counts"]["kernels"] >= 6
    assert comp["counts"]["kernels"] == 1 and comp["kernel_names"][0].startswith("triton")
    k = fusion.measure_kernels("complex_activation")["forms"]
    assert k["torch_eager"]["count"] >= 6 and k["torch_compile"]["count"] == 1


@pytest.mark.gpu
def test_gpu_compiled_faster_and_leaner():
    d = fusion.measure_latency(budget_s=0.3)
    assert d["speedup_torch"] > 2.0, d
    m = fusion.measure_memory()
    assert m["forms"]["torch_compile"]["peak_bytes"] * 3 < m["forms"]["torch_eager"]["peak_bytes"]


@pytest.mark.gpu
def test_gpu_dead_code_two_gemm_kernels():
    d = fusion.measure_dead_code(dtype="bfloat16")
    assert d["matmuls"]["torch_eager"] == 3 and d["matmuls"]["torch_compile"] == 2
    assert d["matmuls"]["jax_jit"] == 2


# =======================================================================================
# Notebook
# =======================================================================================
LIVE = ["fusion.kernels()", "fusion.timeline()", "fusion.latency()", "fusion.memory()", "fusion.relayout()",
        "fusion.dead_code()"]


def test_notebook_structure():
    import nbformat

    from demos.deck.nbtools import SLIDES_DIR, slide_count

    nb = nbformat.read(SLIDES_DIR / "02_what_compilers_do.ipynb", as_version=4)
    assert 12 <= slide_count(nb) <= 16
    cells = nb.cells
    assert cells[1].cell_type == "code" and cells[1].metadata["slideshow"]["slide_type"] == "skip"
    assert "from demos import fusion" in cells[1].source
    live = [i for i, c in enumerate(cells) if c.cell_type == "code" and c.source.startswith("fusion.")]
    assert [cells[i].source for i in live] == LIVE
    for i in live:  # every live slide is followed by speaker notes
        assert cells[i + 1].metadata["slideshow"]["slide_type"] == "notes"
        assert "CPU" in cells[i + 1].source and "GPU" in cells[i + 1].source
    assert "(03_when_compilation_pays.ipynb)" in cells[-1].source
    assert all(not c.get("outputs") for c in cells if c.cell_type == "code")
    for c in cells:  # code snippets on slides stay short
        if c.cell_type == "markdown" and "```" in c.source:
            block = c.source.split("```")[1]
            assert len(block.strip().splitlines()) <= 8, c.source


def test_notebook_executes_headless_with_figures():
    nb, secs = executed_notebook("02_what_compilers_do.ipynb")
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "02_what_compilers_do.time.txt").write_text(f"{secs:.1f} s\n")
    msg = f"02_what_compilers_do executed in {secs:.1f} s"
    live = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith("fusion.")]
    assert [c.source for c in live] == LIVE, msg
    for c in nb.cells:
        if c.cell_type != "code":
            continue
        assert not [o for o in c.outputs if o.output_type == "error"], (c.source, msg)
        assert not [o for o in c.outputs if o.output_type == "stream" and o.get("name") == "stderr"], \
            (c.source, [o.get("text", "")[:200] for o in c.outputs], msg)
    for c in live:
        assert any("image/png" in o.get("data", {}) for o in c.outputs), (c.source, msg)
        assert not any("⚠" in o.get("text", "") for o in c.outputs), (c.source, msg)
    assert secs < 300, msg
