"""Every figure holds for any value its measurement can produce (Hypothesis).

A figure's layout follows its numbers: a log axis stretches down to the smallest time, a label
widens with its digits. A busy 2-core box, a faster GPU or a stalled clock gives numbers no
developer's machine gave, and a lecturer sees what they draw. So each declared demo is drawn from
a committed record's measurement of it (every record that holds it: CPU and GPU shapes), with its
times replaced by what a measurement can return:

- times from 10⁻⁹ s to 10³ s, and exact zeros (a clock that read nothing);
- every time equal, or each group of times (one timing, one form) decades from the others;
- NaN where a time can be missing (a quantile of no samples: ``timing.quantile``);

alone and beside the record as its reference. Each drawing must raise nothing (a measurement the
figure cannot draw says so in one line: a ``DemoError``), keep every text inside the figure, and
show each number's magnitude honestly: no time reads "0 ns" or "0.00 ms" ("< 1 ns" does), and no
"nan" or "inf" is printed ("—" is).

Nothing is measured here: the examples are fixed (``derandomize``), so a failure reproduces."""
from __future__ import annotations

import copy
import math
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import demos  # noqa: F401  (environment before torch/JAX)
from demos import topics
from demos.engine import plots
from demos.engine.errors import DemoError
from demos.engine.results import Record

DEMOS = topics.load()
RECORDS = sorted(Path(__file__).resolve().parent.parent.glob("assets/results/*.json"))
# the times a measurement can return, as the issue bounds them: 1 ns … 1000 s, and zero
LOW_S, HIGH_S = 1e-9, 1e3
EXAMPLES = 5  # per demo, besides the fixed extremes below


# ``…_s`` keys that are not a measured time: a rate (bytes or FLOPs per second), the time budget a
# control sets, a model's prediction from the measured peaks
NOT_TIMES = ("per_s", "budget_s", "predicted_s")


def _is_time(key: str) -> bool:
    """A key that holds measured seconds (``Timing.to_dict``'s ``median_s``/``p10_s``/``p90_s``/
    ``first_s``, and every other ``…_s`` but :data:`NOT_TIMES`; ``seconds``)."""
    return (key.endswith("_s") and not key.endswith(NOT_TIMES)) or key == "seconds"


def time_paths(data, path: tuple = (), under_time: bool = False) -> list[tuple]:
    """The path of every measured time in ``data``: a float under a time key, or in a dict or list
    under one ({"floors_s": {"add": …}}). The record's own bookkeeping (conditions, values) is not
    a measurement's number."""
    found: list[tuple] = []
    if isinstance(data, dict):
        for k, v in data.items():
            if path == () and k in ("conditions", "values", "verdicts", "stamp"):
                continue
            found += time_paths(v, path + (k,), under_time or _is_time(str(k)))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            found += time_paths(v, path + (i,), under_time)
    elif isinstance(data, float) and under_time and math.isfinite(data):
        found.append(path)
    return found


def _get(data, path):
    for p in path:
        data = data[p]
    return data


def _set(data, path, value):
    _get(data, path[:-1])[path[-1]] = value


def groups(paths: list[tuple]) -> dict[tuple, list[tuple]]:
    """Times that belong together (one timing: its median and spread, one form's calls) share the
    container they sit in; a scaled group keeps its own order (p10 ≤ median ≤ p90)."""
    out: dict[tuple, list[tuple]] = {}
    for p in paths:
        out.setdefault(p[:-1], []).append(p)
    return out


def recorded(demo) -> list[dict]:
    """The demo as every committed record holds it (the newest first)."""
    found = []
    for path in reversed(RECORDS):
        ref = demo.reference(None, record=Record.load(path), seed=False)
        if ref is not None:
            found.append(ref)
    return found


# A scenario: how the times change. ("equal", v): every time v; ("decades", exponents): group i's
# largest time becomes 10^exponents[i] (its others keep their ratios to it); ("zero", i): group i
# reads 0; ("nan", i): group i is missing (NaN).
_EXTREMES = [0.0, LOW_S, 1e-6, 1e-3, 1.0, HIGH_S]
scenarios = st.one_of(
    st.tuples(st.just("equal"), st.sampled_from(_EXTREMES)),
    st.tuples(st.just("decades"), st.lists(st.floats(math.log10(LOW_S), math.log10(HIGH_S)), min_size=1, max_size=40)),
    st.tuples(st.just("zero"), st.integers(0, 10**6)),
    st.tuples(st.just("nan"), st.integers(0, 10**6)),
)


def changed(data: dict, scenario) -> dict:
    data = copy.deepcopy(data)
    kind, arg = scenario
    grouped = list(groups(time_paths(data)).values())
    if not grouped:
        return data
    if kind == "equal":
        for g in grouped:
            for p in g:
                _set(data, p, float(arg))
    elif kind == "decades":
        for i, g in enumerate(grouped):
            top = max(abs(_get(data, p)) for p in g) or 1.0
            k = 10 ** arg[i % len(arg)] / top
            for p in g:
                _set(data, p, _get(data, p) * k)
    else:
        for p in grouped[arg % len(grouped)]:
            _set(data, p, 0.0 if kind == "zero" else float("nan"))
    return data


# a time shown as zero ("0 ns", "0.0 µs", "0.00 ms", "0.00 s"), or a number that is not one
ZERO_TIME = re.compile(r"(?<![\d.])0(?:\.0+)? ?(?:ns|µs|us|ms|s)\b")
NOT_A_NUMBER = re.compile(r"\b(?:nan|inf)\b", re.IGNORECASE)


def _texts(fig) -> list[str]:
    out = [t.get_text() for t in fig.texts]
    for ax in fig.axes:
        out += [t.get_text() for t in ax.texts] + [ax.get_title(), ax.get_xlabel(), ax.get_ylabel()]
        legend = ax.get_legend()
        out += [t.get_text() for t in legend.get_texts()] if legend else []
    return out


def drawn_holds(demo, data: dict, reference: dict | None, where: str) -> None:
    import matplotlib.pyplot as plt

    try:
        fig = demo.draw(data, reference)
    except DemoError as exc:  # a measurement the figure cannot draw: one line
        assert "\n" not in str(exc), f"{where}: {exc}"
        return
    fig = fig[0] if isinstance(fig, tuple) else fig
    try:
        outside = plots.texts_outside(fig)
        assert not outside, f"{where}: {outside}"
        for text in _texts(fig):
            assert not ZERO_TIME.search(text), f"{where}: a time shown as zero: {text!r}"
            assert not NOT_A_NUMBER.search(text), f"{where}: {text!r}"
    finally:
        plt.close(fig)


# matplotlib's UserWarnings here are an axis from 0 to 0, a log axis with nothing above 0, a legend
# with nothing to name: a figure that does not hold, so each one fails
@pytest.mark.filterwarnings("error::UserWarning")
@pytest.mark.parametrize("demo", DEMOS, ids=[d.key for d in DEMOS])
def test_every_figure_holds_for_any_value_its_measurement_can_produce(demo):
    shapes = recorded(demo)
    if not shapes:
        pytest.fail(f"{demo.key}: no committed record holds it (`make record` writes one)")

    @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(which=st.integers(0, len(shapes) - 1), scenario=scenarios, beside=st.booleans())
    @example(which=0, scenario=("equal", 0.0), beside=False)
    @example(which=0, scenario=("equal", LOW_S), beside=True)
    @example(which=0, scenario=("equal", HIGH_S), beside=True)
    @example(which=0, scenario=("decades", [-9.0, 3.0]), beside=False)
    @example(which=0, scenario=("nan", 0), beside=True)
    def holds(which, scenario, beside):
        base = shapes[which]
        data = changed(base, scenario)
        drawn_holds(demo, data, copy.deepcopy(base) if beside else None, f"{demo.key} {scenario} beside={beside}")

    holds()


def test_the_extremes_reach_every_time_and_keep_a_timing_in_order():
    data = {"conditions": {"x_s": 1.0}, "eager": {"median_s": 2e-6, "p10_s": 1e-6, "p90_s": 4e-6, "n": 9},
            "floors_s": {"add": 3e-6}, "rows": [{"first_s": 0.5}], "N": 4096, "bandwidth": {"bytes_per_s": 1e11}}
    assert sorted(map(str, time_paths(data))) == sorted(map(str, [("eager", "median_s"), ("eager", "p10_s"), ("eager", "p90_s"),
                                                                  ("floors_s", "add"), ("rows", 0, "first_s")]))
    out = changed(data, ("decades", [-9.0]))
    assert out["eager"]["p90_s"] == pytest.approx(1e-9) and out["eager"]["p10_s"] < out["eager"]["median_s"] < 1e-9
    assert out["N"] == 4096 and out["conditions"] == data["conditions"]
    assert ZERO_TIME.search("0.00 ms") and ZERO_TIME.search("sin 0 ns") and not ZERO_TIME.search("10 ns")
    assert not ZERO_TIME.search("< 1 ns") and not ZERO_TIME.search("1.0 s") and NOT_A_NUMBER.search("nan×")
