"""The machine matrix (demos.deck.matrix): each kind of machine in a fresh process, one table of
claims by kind. CI runs the law claims of the fast demos as an AVX2 laptop (torch's kernels
limited to AVX2), in a process of its own whose compile caches are its own."""
from __future__ import annotations

import pytest

from demos.deck import matrix
from demos.engine.errors import DemoError


def _row(what: str, *verdicts: tuple[str, str, str]) -> dict:
    return {"what": what, "device": "cpu", "ok": all(s != "fails" for _, s, _ in verdicts), "detail": "",
            "verdicts": [{"key": k, "text": k, "status": s, "kind": "regime" if c else "law", "condition": c}
                         for k, s, c in verdicts]}


def test_the_table_reads_each_claim_by_kind_with_the_reason():
    native = {"kind": "native", "skipped": "", "seconds": 1.0,
              "rows": [_row("roofline.payoff", ("chain", "holds", "memory-bound: 64 MiB per operand, over"))]}
    avx2 = {"kind": "avx2", "skipped": "", "seconds": 1.0,
            "rows": [_row("roofline.payoff", ("chain", "does not apply", "memory-bound: 64 MiB per operand, inside"))]}
    nosimd = {"kind": "no-simd", "skipped": "torch.compile cannot build here: 'at::vec' has not been declared",
              "seconds": 1.0, "rows": []}
    text, fails = matrix.claim_table([native, avx2, nosimd])
    assert fails == 0
    assert "| roofline.payoff.chain | regime | holds | n/a | — |" in text
    assert "avx2 · roofline.payoff.chain n/a: memory-bound: 64 MiB per operand, inside" in text
    assert "no-simd: not run: torch.compile cannot build here" in text
    broken = {"kind": "busy", "skipped": "", "seconds": 1.0,
              "rows": [_row("precision.lever", ("lever", "fails", "bfloat16 GEMMs run 9.0× float32's here"))]}
    text, fails = matrix.claim_table([native, broken])
    assert fails == 1 and "FAILS" in text


def test_an_unknown_kind_is_one_line():
    with pytest.raises(DemoError, match="unknown kind 'laptop'"):
        matrix.kind_env("laptop")
    env = matrix.kind_env("avx2")
    assert env["ATEN_CPU_CAPABILITY"] == "avx2" and env["ONEDNN_MAX_CPU_ISA"] == "AVX2"
    assert "ATEN_CPU_CAPABILITY" not in matrix.kind_env("native")


def _every_row_passes(result: dict, demos: tuple[str, ...]) -> dict:
    """The check's row of each of ``demos`` (its environment rows left out), every one passing."""
    assert not result["skipped"], result
    rows = {r["what"]: r for r in result["rows"] if r["device"] != "-"}
    assert set(rows) == set(demos), sorted(rows)
    bad = {k: r["detail"] for k, r in rows.items() if not r["ok"]}
    assert not bad, bad
    return rows


@pytest.mark.slow
def test_the_fast_demos_laws_hold_as_an_avx2_laptop(tmp_path):
    result = matrix.run_kind("avx2", matrix.FAST_LAWS, laws_only=True, out=tmp_path, stream=False)
    rows = _every_row_passes(result, matrix.FAST_LAWS)
    verdicts = [v for r in rows.values() for v in r["verdicts"]]
    assert verdicts and all(v["kind"] == "law" and v["status"] == "holds" for v in verdicts), verdicts
    text, fails = matrix.claim_table([result])
    assert fails == 0 and "avx2" in text


@pytest.mark.slow
def test_the_fast_timed_demos_hold_or_say_why_and_draw_inside_with_a_busy_core(tmp_path):
    """What shares the cores is part of the test: with a second process spinning on one core all
    along (and whatever else this box runs, the suite's other worker included), every claim of
    the fast timed demos holds, or does not apply with the measured condition that says why, and
    every figure, drawn from those numbers, keeps its texts inside (check fails a row that clips)."""
    result = matrix.run_kind("busy", matrix.FAST_TIMED, out=tmp_path, stream=False)
    rows = _every_row_passes(result, matrix.FAST_TIMED)
    verdicts = [v for r in rows.values() for v in r["verdicts"]]
    assert any(v["kind"] == "regime" for v in verdicts)
    assert all(v["status"] == "holds" or (v["status"] == "does not apply" and v["condition"]) for v in verdicts), verdicts
    assert all((tmp_path / "busy" / f"{k}.png").stat().st_size > 0 for k in rows)
