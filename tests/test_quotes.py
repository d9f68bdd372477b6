"""The speaker notes quote the committed records, the H100's and the CPUs': a figure they give for
one that the record does not hold fails here, as does a CPU figure typed in without a record, as a
threshold no claim declares fails test_claims.py."""
from __future__ import annotations

import copy

import nbformat
import pytest

import demos  # noqa: F401
from demos.deck import quotes
from demos.deck.nbtools import parts
from demos.engine.results import reference

PARTS = parts()


@pytest.mark.parametrize("path", PARTS, ids=lambda p: p.name[:2])
def test_every_figure_a_note_quotes_for_the_h100_record_is_in_it(path):
    rec = reference()
    assert rec is not None and "H100" in rec.machine.get("gpu_name", "")
    nb = nbformat.read(str(path), as_version=4)
    assert quotes.part_problems(nb, path.name[:2]) == []  # each figure's own record


def _each_is_named(planted):
    """Each (part, figure as the note gives it, the figure changed) planted in a copy of the part:
    the check names the changed figure, and nothing else."""
    for part, right, wrong in planted:
        path = next(p for p in PARTS if p.name.startswith(part))
        nb = copy.deepcopy(nbformat.read(str(path), as_version=4))
        cells = [c for c in nb.cells if right in c.source]
        assert len(cells) == 1, (part, right)
        cells[0].source = cells[0].source.replace(right, wrong)
        found = quotes.part_problems(nb, part)
        assert len(found) == 1 and wrong.split()[-2] in found[0], (right, wrong, found)


def test_a_note_misquoting_the_record_is_caught():
    """Each figure changed by a little, in a copy of the parts: every change is named."""
    planted = [("02", "eager 379 µs", "eager 389 µs"), ("06", "588 aten ops", "598 aten ops"),
               ("06", "whole stack 24.5 s", "whole stack 25.5 s"), ("05", "3.3 s cold", "3.6 s cold"),
               ("03", "default 66 µs, reduce-overhead 175 µs", "default 66 µs, reduce-overhead 157 µs")]
    _each_is_named(planted)


def test_sizes_seed_figures_and_thresholds_are_not_read_as_record_figures():
    par = ("H100 record, N=2^24, 12 layers, 8 × 512: eager 367 µs (the seed: 22.5 → 14.4 ms); "
           "more than 2× faster; 1011 → 145 µs; ~8,200 calls; 0.5–0.7 s")
    got = [(q, u, a) for _t, q, u, a in quotes.quoted(par)]
    assert got == [(367.0, "µs", False), (1011.0, "µs", False), (145.0, "µs", False), (8200.0, "calls", True),
                   (0.5, "s", False), (0.7, "s", False)]


def test_a_profiled_runs_kernel_time_summed_is_held():
    """Timeline titles quote a call's kernels summed (profiling.busy_seconds): a note may too."""
    run = {"lanes": {"device": [{"kind": "kernel", "dur_us": 44.9}, {"kind": "memcpy", "dur_us": 9.0},
                                {"kind": "kernel", "dur_us": 294.7}]}}
    assert quotes.unheld([("c", "H100 record: 339.6 µs of kernel time.", quotes.numbers(run))]) == []
    assert quotes.unheld([("c", "H100 record: 348.6 µs of kernel time.", quotes.numbers(run))]) != []


def test_the_benchmark_tables_figures_count_only_where_a_paragraph_names_the_table():
    """A figure that happens to equal some benchmark row (a p10 of another workload, say) does
    not make a stale quote of a demo's figure pass: the rows are read only for a paragraph that
    names the record's benchmark table."""
    table = [79e-6]
    demo = [98e-6]
    assert quotes.unheld([("c", "H100 record: as written 79 µs.", demo)], table) == ["c: '79 µs' (79 µs)"]
    assert quotes.unheld([("c", "H100 record's benchmark table: eager 79 µs.", demo)], table) == []
    assert quotes.unheld([("c", "H100 record: as written 98 µs.", demo)], table) == []


def test_a_cpu_figure_comes_from_a_named_record_or_fails():
    """A CPU figure typed into a note went stale when the code changed (issue 58: a note said the
    Intel Xeon VM's bfloat16 lost, where its record shows it winning): a paragraph about a CPU may
    quote a measured figure only from a record it names."""
    cpu = {"Intel Xeon record": [1.97e-3, 3.66e-3, 5.57], "AMD EPYC record": []}
    typed = "**On a CPU:** bfloat16 eager took 7.2 ms against float32 compiled's 4.2 ms."
    assert quotes.unheld([("c", typed, [])], cpu=cpu) == [
        f"c: '{t}' is a CPU figure no record holds: quote it from one (Intel Xeon record or AMD EPYC record)"
        for t in ("7.2 ms", "4.2 ms")]
    named = "**On a CPU:** Intel Xeon record: bfloat16 eager 1.97 ms against float32 compiled 3.66 ms, GEMM 5.6×."
    assert quotes.unheld([("c", named, [])], cpu=cpu) == []
    assert quotes.unheld([("c", named.replace("1.97", "1.79"), [])], cpu=cpu) == ["c: '1.79 ms' (1.79 ms)"]
    assert quotes.unheld([("c", named.replace("Intel Xeon", "AMD EPYC"), [])], cpu=cpu) != []  # another record's
    # counts are laws, a wait is what a viewer should expect at a control; neither is a measurement
    assert quotes.unheld([("c", "**On a CPU:** 6 aten ops become 1 fused kernel.", [])], cpu=cpu) == []
    assert quotes.unheld([("c", "**If slow:** ~5 s on a CPU the first time.", [])], cpu=cpu) == []
    assert quotes.unheld([("c", typed, [])]) == []  # without the CPU records: the H100 check alone


def test_a_note_misquoting_a_cpu_record_is_caught():
    rec = quotes.cpu_record("Intel Xeon record")
    assert rec is not None and "Xeon" in rec.machine["cpu"] and not rec.is_gpu
    planted = [("03", "bfloat16 eager 1.97 ms", "bfloat16 eager 2.97 ms"),
               ("06", "whole stack 16.0 s, regional\n7.8 s", "whole stack 16.0 s, regional\n8.7 s"),
               ("05", "8.89 s cold", "9.89 s cold")]
    _each_is_named(planted)
