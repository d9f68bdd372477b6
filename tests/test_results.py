import json
from pathlib import Path

from demos.engine.bench import bench, figure
from demos.engine.plots import to_png
from demos.engine.results import Record, Row, default_filename, default_path, reference


def small_record():
    return bench(["chain", "two_matmuls"], ["torch_eager", "jax_jit"], quick=True, budget_s=0.02)


def test_record_survives_save_load_draw_unchanged(tmp_path):
    rec = small_record()
    assert len(rec.rows) == 4 and all(r.ok for r in rec.rows)
    png1 = to_png(figure(rec))
    path = rec.save(tmp_path / "r.json")
    back = Record.load(path)
    assert back.to_dict() == json.loads(path.read_text())
    assert [r.key for r in back.rows] == [r.key for r in rec.rows]
    assert back.machine["device"] == rec.machine["device"] and back.created == rec.created
    assert to_png(figure(back)) == png1


def test_rows_have_the_documented_fields():
    rec = small_record()
    r = rec.get(workload="chain", backend="jax_jit")
    assert r.median_s > 0 and r.p10_s <= r.median_s <= r.p90_s and r.n >= 5
    assert r.compile_s is not None and r.compile_s >= 0  # compile kept apart
    assert rec.get(workload="chain", backend="torch_eager").compile_s is None
    for key in ("device", "device_name", "torch", "jax", "python", "cpu_threads"):
        assert key in rec.machine


def test_merge_replaces_same_key_and_keeps_sections():
    a = Record(machine={"device": "cpu"}, rows=[Row("chain", "torch_eager", {"N": 4}, "float32", "cpu", 1.0)],
               sections={"eager": {"x": 1}})
    b = Record(machine={"device": "cpu"}, rows=[Row("chain", "torch_eager", {"N": 4}, "float32", "cpu", 2.0),
                                                Row("chain", "jax_jit", {"N": 4}, "float32", "cpu", 3.0)],
               sections={"fusion": {"y": 2}})
    m = a.merge(b)
    assert len(m.rows) == 2 and m.get(backend="torch_eager").median_s == 2.0
    assert m.sections == {"eager": {"x": 1}, "fusion": {"y": 2}}
    assert len(a.rows) == 1  # inputs untouched


def test_not_a_record_is_refused(tmp_path):
    p = tmp_path / "x.json"
    p.write_text('{"hello": 1}')
    import pytest

    from demos.engine.errors import DemoError

    with pytest.raises(DemoError, match="not a jit-deck results record"):
        Record.load(p)


def test_reference_reads_env_and_default_name(tmp_path, monkeypatch):
    rec = Record(machine={"device": "cuda", "gpu_name": "NVIDIA H200", "device_name": "NVIDIA H200"},
                 created="2026-11-21T10:00:00+00:00")
    assert default_filename(rec) == "h200-2026-11-21-100000.json"  # device, date and time
    path = rec.save(tmp_path / default_filename(rec))
    monkeypatch.setenv("DEMOS_RESULTS", str(path))
    assert reference().machine["gpu_name"] == "NVIDIA H200"
    # a second record with the same name never replaces the first
    second = default_path(rec, tmp_path)
    assert second.name == "h200-2026-11-21-100000-2.json" and not second.exists()
    assert rec.save(second) == second and path.exists()


def test_a_figure_shows_the_newest_record_that_holds_its_demo(tmp_path, monkeypatch):
    """A record cut short by its lease, or one that withdrew a demo, leaves that demo's figure to
    the record before it; DEMOS_RESULTS still pins one file for every figure."""
    from demos.engine import results

    gpu = {"device": "cuda", "gpu_name": "NVIDIA H100 80GB HBM3", "device_name": "NVIDIA H100 80GB HBM3"}
    older = Record(machine=gpu, created="2026-11-24T17:15:24+00:00",
                   sections={"eager": {"timeline": {"n": 1}}, "yourfn": {"inspector": {"n": 1}}})
    newer = Record(machine=gpu, created="2026-11-27T03:46:15+00:00", sections={"eager": {"timeline": {"n": 2}}})
    older.save(tmp_path / "old.json")
    newer.save(tmp_path / "new.json")
    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    monkeypatch.delenv("DEMOS_RESULTS", raising=False)
    assert results.reference_for("eager", "timeline").created == newer.created
    assert results.reference_for("yourfn", "inspector").created == older.created
    assert results.reference_for("nowhere", "at_all").created == newer.created  # nothing holds it: the newest
    monkeypatch.setenv("DEMOS_RESULTS", str(tmp_path / "new.json"))
    assert results.reference_for("yourfn", "inspector").created == newer.created


def _keys(o, path=""):
    if isinstance(o, dict):
        for k, v in o.items():
            yield path, k
            yield from _keys(v, f"{path}.{k}")
    elif isinstance(o, list):
        for v in o:
            yield from _keys(v, path + "[]")


def test_every_stored_timing_has_the_one_schema_and_an_older_record_is_upgraded(tmp_path):
    from demos.engine.results import RESULTS_DIR, SCHEMA
    from demos.engine.timing import TIMING_KEYS, Timing

    assert set(Timing(2e-6, 1e-6, 3e-6, 9).to_dict(first_s=0.5)) == set(TIMING_KEYS)
    for path in sorted(RESULTS_DIR.glob("*.json")):  # the committed records: the one timing schema only
        d = json.loads(path.read_text())
        assert d["schema"] in (SCHEMA, "jit-deck/record@3"), path  # @3: its compile_s upgraded on reading
        old = [f"{p}.{k}" for p, k in _keys(d) if k in ("median", "p10", "p90", "first_call_s")]
        assert not old, (path, old[:5])
    # a record@2 (short timing keys, first_call_s) reads as the same record in the one schema
    old = {"schema": "jit-deck/record@2", "machine": {"device": "cuda"},
           "rows": [{"workload": "chain", "backend": "torch_compile", "params": {"N": 4}, "dtype": "float32",
                     "device": "cuda", "median_s": 1e-5, "extra": {"first_call_s": 2.0}}],
           "sections": {"eager": {"sync_trap": {"rows": {"jax_jit": {"synced": {"median": 2e-4, "p10": 1e-4,
                                                                                "p90": 3e-4, "n": 7}}},
                                                "median_note": "not a timing, kept as written"}}}}
    (tmp_path / "old.json").write_text(json.dumps(old))
    rec = Record.load(tmp_path / "old.json")
    assert rec.schema == SCHEMA and rec.rows[0].extra == {"first_s": 2.0}
    trap = rec.sections["eager"]["sync_trap"]
    assert trap["rows"]["jax_jit"]["synced"] == {"median_s": 2e-4, "p10_s": 1e-4, "p90_s": 3e-4, "n": 7}
    assert trap["median_note"] == "not a timing, kept as written"


def _old_record() -> dict:
    """A record@3 where ``compile_s`` held a whole first call (model.speed, the inspector's torch half,
    autotune's modes) or a session's compiling calls summed whole (recompilation)."""
    events = [{"i": 0, "S": 8, "seconds": 1.0, "compiled": True}, {"i": 1, "S": 8, "seconds": 0.01, "compiled": False},
              {"i": 2, "S": 9, "seconds": 0.5, "compiled": True}, {"i": 3, "S": 9, "seconds": 0.03, "compiled": False}]
    session = {"events": events, "summary": {"compiles": 2, "compile_s": 1.5, "steady_s": 0.02, "total_s": 1.54}}
    return {"schema": "jit-deck/record@3", "machine": {"device": "cuda"}, "rows": [], "sections": {
        "model": {"speed": {"compile_s": 12.0, "rows": {"torch_compile": {"median_s": 0.01}}},
                  "compile_cost": {"whole": {"first_s": 20.7, "compile_s": 20.6}}},
        "yourfn": {"inspector": {"report": {"torch": {"compile_s": 0.86, "compiled": {"median_s": 0.06},
                                                      "eager": {"median_s": 0.08}, "pays_after": 43},
                                            "jax": {"compile_s": 0.16}}}},
        "autotune": {"gemms": {"rows": {"default": {"compile_s": 5.0, "steady": {"median_s": 0.5}},
                                        "jax_jit": {"launches": []}}}},
        "recompilation": {"recompile_live": session, "compare_modes": {"modes": {"static": session}}}}}


def test_an_older_records_whole_first_call_stored_as_compile_s_reads_as_first_s():
    """compile_s has one meaning (demos.engine.timing.first_call): an @3 record's compile_s that was a
    whole first call is read as first_s, compile_s being that call less its steady call; one that
    was already a compile (compile_cost, jax's AOT compile) is kept; a record@4 is read as written."""
    import pytest

    from demos.engine.results import SCHEMA

    old = _old_record()
    s = Record.from_dict(old).sections
    assert (s["model"]["speed"]["first_s"], s["model"]["speed"]["compile_s"]) == (12.0, pytest.approx(11.99))
    torch_half = s["yourfn"]["inspector"]["report"]["torch"]
    assert (torch_half["first_s"], torch_half["compile_s"]) == (0.86, pytest.approx(0.80))
    assert torch_half["pays_after"] == 40  # 0.80 s of compiling repaid at 0.02 s a call (was 43: 0.86 s)
    assert s["yourfn"]["inspector"]["report"]["jax"] == {"compile_s": 0.16}  # a compile timed alone
    assert s["model"]["compile_cost"]["whole"] == {"first_s": 20.7, "compile_s": 20.6}  # already first − steady
    assert s["autotune"]["gemms"]["rows"]["default"]["first_s"] == 5.0
    assert s["autotune"]["gemms"]["rows"]["default"]["compile_s"] == pytest.approx(4.5)
    assert s["autotune"]["gemms"]["rows"]["jax_jit"] == {"launches": []}
    for session in (s["recompilation"]["recompile_live"], s["recompilation"]["compare_modes"]["modes"]["static"]):
        assert session["summary"]["compile_s"] == pytest.approx(1.46)  # each compiling call less 0.02 s
    assert old == _old_record()  # the dict read is not changed
    new = {**_old_record(), "schema": SCHEMA}
    assert Record.from_dict(new).sections == new["sections"]


def test_an_older_records_compile_s_draws_as_a_compile_beside_its_first_call():
    """The committed records, @3 (before compile_s was the compile alone) and @4, each read with
    compile_s at most its first call, and the inspector's time view draws the compile, not the
    whole first call."""
    from demos.engine.results import RESULTS_DIR, SCHEMA
    from demos.topics.yourfn_figures import figure_inspection

    def pairs(o):
        if isinstance(o, dict):
            if isinstance(o.get("compile_s"), (int, float)) and isinstance(o.get("first_s"), (int, float)):
                yield o["compile_s"], o["first_s"]
            for v in o.values():
                yield from pairs(v)
        elif isinstance(o, list):
            for v in o:
                yield from pairs(v)

    checked, drawn = 0, 0
    for path in sorted(RESULTS_DIR.glob("*.json")):
        rec = Record.load(path)
        both = list(pairs(rec.sections))
        assert all(c <= f for c, f in both), (path, [p for p in both if p[0] > p[1]])
        checked += len(both)
        data = rec.sections.get("yourfn", {}).get("inspector")
        if data:
            t = data["report"]["torch"]
            raw = json.loads(path.read_text())
            stored = raw["sections"]["yourfn"]["inspector"]["report"]["torch"]
            # @3 stored the whole first call as compile_s; @4 stores both
            assert t["compile_s"] < t["first_s"] == stored["compile_s" if raw["schema"] < SCHEMA else "first_s"]
            fig = figure_inspection(data, view="time & numerics")
            texts = [x.get_text() for x in fig.texts]
            assert any(f"compile (caches bypassed): {t['compile_s']:.2f} s" in x for x in texts), texts
            drawn += 1
    assert checked and drawn


def test_a_gpu_stamp_says_how_fp32_matmuls_ran_and_an_older_record_is_read_for_it():
    """TF32 or not moves a GPU's float32 matmul times several-fold, so a stamp that compares
    machines says which. The committed H100 record predates the field: its fp32 GEMM rate (51
    TFLOP/s, under the H100's 67 TFLOP/s non-tensor-core peak) says TF32 was off."""
    from demos import topics
    from demos.engine import plots
    from demos.engine.devices import fp32_matmul
    from demos.engine.peaks import inferred_fp32_matmul

    assert fp32_matmul() == "no TF32"  # the deck asks both frameworks for full fp32
    gpu = {"device": "cuda", "device_name": "NVIDIA H100 80GB HBM3", "fp32_matmul": "no TF32"}
    assert "fp32 matmuls: no TF32" in plots.machine_stamp(gpu)
    assert "fp32 matmuls" not in plots.machine_stamp({"device": "cpu", "device_name": "CPU", "fp32_matmul": "no TF32"})
    demo = next(d for d in topics.load() if d.key == "roofline.payoff")
    older = Record.load(Path(__file__).resolve().parent.parent / "assets" / "results" / "h100-80gb-hbm3-2026-11-24-171524.json")
    assert "fp32 matmuls: no TF32 (its fp32 GEMM: 51 TFLOP/s)" in demo.reference(None, record=older, seed=False)["stamp"]
    assert "fp32 matmuls: no TF32 · " in demo.reference(None, seed=False)["stamp"]  # a newer record says it itself
    tf32 = {"compute": {"float32": {"flops_per_s": 400e12}}}
    assert inferred_fp32_matmul(gpu, tf32) is None  # as fast as TF32: it cannot say "off"
