"""The speaker notes quote committed records: every figure they give for one must be in it.

A note paragraph that names the H100 record ("H100 record: eager 367 µs, torch.compile 110 µs")
states figures measured there. :func:`unheld` reads each figure of such a paragraph (a number
with its unit, or a count of ops, kernels, calls, compiles or steps) and looks for it in the
record, as the record stores it: a time in seconds is quoted in µs, ms or s, bytes in MB or GB,
a bandwidth in TB/s or GB/s, a ratio as stored, or as the ratio of two figures quoted in the same
paragraph (1.51 ms → 1.61 ms gives 0.94×). A figure matches when the stored value rounds to it
at the precision quoted; "~" or "about" allows 10 %.

The CPU records are quoted the same way: a paragraph that names the "Intel Xeon record" or the
"AMD EPYC record" is read against that record (the newest CPU record in assets/results whose CPU
is one). A paragraph about a CPU that names none may quote no measured figure (a time, a ratio,
a rate): a CPU figure typed into a note goes stale with the code, and no test could see it.
Counts are laws, the same on every CPU, and a paragraph led by "If slow" gives the wait a viewer
should expect at a control, not a measurement.

Left out, as they are not measurements: sizes (``N=2^24``, ``B=256``, ``12 layers``,
``8 × 512``, powers of two), the seed's figures (a clause that names the seed) and the claims'
thresholds ("more than 2×", checked against the declarations by ``claims.undeclared_in_note``).
"""
from __future__ import annotations

import dataclasses
import math
import re
from typing import Any, Iterable

from demos.deck.claims import THRESHOLD_PHRASE

UNITS = ("TB/s", "GB/s", "µs", "ms", "GB", "MB", "×", "s")
COUNTED = r"(?:aten ops|ops|Triton kernels|kernels|library calls|calls|compiles|steps|elements?)"
_NUM = r"(~|≈|about )?(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)"
_FIGURE = re.compile(_NUM + r"(?:\s*(?:→|vs|–|-|to)\s*" + _NUM + r")?\s*(" + "|".join(re.escape(u) for u in UNITS)
                     + r"|\s" + COUNTED + r")(?![\w/])")
# what is a size or a setting, not a measurement
_SIZE = re.compile(r"\b[A-Z]\w*\s*=\s*[\d^,.×x ]+[A-Za-z]*|\d+\s*[×x]\s*\d+|\b\d+\^\d+|2\^\d+|\b\d+ layers|bf16|fp32|"
                   r"float\d+|\d+-core|\d+ rows|\b\d+M\b")


def paragraphs(note: str) -> list[str]:
    """A note's paragraphs: blank-line separated, and each bullet or bold-headed line apart."""
    return [p.strip() for p in re.split(r"\n\s*\n|\n(?=\*\*|- )", note) if p.strip()]


def _clauses(par: str) -> list[str]:
    return re.split(r"[;()]|(?<=\.)\s", par)


def quoted(par: str) -> list[tuple[str, float, str, bool]]:
    """(the text, the number, its unit, approximate?) for each figure a paragraph quotes."""
    out = []
    for clause in _clauses(par):
        if re.search(r"\bseed\b|\bclaim|\bsheet\b", clause):  # the seed's, a threshold's, a spec sheet's
            continue
        text = _SIZE.sub(" ", THRESHOLD_PHRASE.sub(" ", clause))
        for m in _FIGURE.finditer(text):
            approx = bool(m.group(1) or m.group(3))
            unit = m.group(5).strip()
            for g in (m.group(2), m.group(4)):
                if g is not None:
                    out.append((m.group(0).strip(), float(g.replace(",", "")), unit, approx))
    return out


def numbers(tree: Any) -> list[float]:
    """Every number a record's section (JSON) or rows hold."""
    if dataclasses.is_dataclass(tree) and not isinstance(tree, type):
        tree = dataclasses.asdict(tree)
    if isinstance(tree, dict):
        lane = tree.get("lanes", {}).get("device") if isinstance(tree.get("lanes"), dict) else None
        busy = [sum(e.get("dur_us", 0.0) for e in lane if isinstance(e, dict) and e.get("kind") == "kernel")] \
            if isinstance(lane, list) else []  # a profiled run's kernel time summed: what timeline titles quote
        return busy + [x for v in tree.values() for x in numbers(v)]
    if isinstance(tree, (list, tuple)):
        return [x for v in tree for x in numbers(v)]
    if isinstance(tree, (int, float)) and not isinstance(tree, bool) and math.isfinite(tree):
        return [float(tree)]
    return []


_SCALES = {"µs": (1e6, 1.0), "ms": (1e3, 1.0, 1e-3), "s": (1.0, 1e-3, 1e-6), "TB/s": (1e-12, 1e-3), "GB/s": (1e-9, 1.0),
           "GB": (1e-9, 2**-30), "MB": (1e-6, 2**-20), "×": (1.0,)}


def _close(v: float, q: float, places: int, approx: bool) -> bool:
    if approx:
        return abs(v - q) <= 0.1 * abs(q)
    return abs(v - q) <= 0.5 * 10.0 ** -places * 1.0001


_SI = {"µs": 1e-6, "ms": 1e-3, "s": 1.0, "MB": 1e6, "GB": 1e9}


def held(q: float, unit: str, approx: bool, text: str, values: list[float],
         siblings: list[tuple[float, str]]) -> bool:
    """Is the quoted figure one of the record's values, as the record stores it? A ratio may also
    be one figure of the paragraph divided by another of its unit, and a bandwidth bytes ÷ time
    of two of its figures (``siblings``: (number, unit) of every figure the paragraph quotes)."""
    places = 0  # the precision quoted: decimals of the number as written
    for num in re.findall(r"\d[\d,]*(?:\.\d+)?", text):
        if math.isclose(float(num.replace(",", "")), q):
            places = len(num.split(".")[1]) if "." in num else 0
    scales = _SCALES.get(unit, (1.0,))
    if any(_close(v * s, q, places, approx) for v in values for s in scales):
        return True
    si = [(x * _SI[u], u) for x, u in siblings if u in _SI]
    if unit == "×":
        return any(_close(a / b, q, places, approx) for a, ua in si for b, ub in si
                   if b and _SI[ua] * _SI[ub] and (ua in ("MB", "GB")) == (ub in ("MB", "GB")))
    if unit in ("TB/s", "GB/s"):
        per = 1e12 if unit == "TB/s" else 1e9
        return any(_close(a / b / per, q, places, approx) for a, ua in si for b, ub in si
                   if b and ua in ("MB", "GB") and ub not in ("MB", "GB"))
    return False


# the CPU records a note may quote, by the name a paragraph gives them, and the word their CPU's name holds
CPU_RECORDS = {"Intel Xeon record": "Xeon", "AMD EPYC record": "EPYC"}
_ABOUT_A_CPU = re.compile(r"\bCPUs?\b|EPYC|Xeon|laptop")
_A_WAIT = re.compile(r"^[-*\s]*(If slow|Slow\?)")


def unheld(notes: Iterable[tuple[str, str, list[float]]], table: list[float] = (),
           cpu: dict[str, list[float]] | None = None) -> list[str]:
    """``where: figure`` for each figure a note quotes for a record that the record does not
    hold. ``notes``: (where, the note's text, the H100 record's numbers it may quote: those of
    the demos its part shows, :func:`numbers`). ``table``: the benchmark rows' numbers, which
    only a paragraph naming the record's "benchmark table" may quote. ``cpu``: each CPU record's
    numbers by its name in :data:`CPU_RECORDS`; given, a paragraph about a CPU that names no
    record is refused any measured figure."""
    out = []
    for where, note, values in notes:
        for par in paragraphs(note):
            named = [n for n in CPU_RECORDS if re.search(n.replace(" ", r"\s+"), par)] if cpu is not None else []
            if "H100" not in par and not named:
                if cpu is not None and _ABOUT_A_CPU.search(par) and not _A_WAIT.match(par):
                    out += [f"{where}: {text!r} is a CPU figure no record holds: quote it from one "
                            f"({' or '.join(CPU_RECORDS)})" for text, _q, unit, _a in quoted(par)
                            if not re.fullmatch(COUNTED, unit)]
                continue
            figs = quoted(par)
            siblings = [(q, u) for _t, q, u, _a in figs]
            pool = [*(values if "H100" in par else []), *(x for n in named for x in cpu[n])]
            if "benchmark table" in par:
                pool += table
            for text, q, unit, approx in figs:
                if not held(q, unit, approx, text, pool, siblings):
                    out.append(f"{where}: {text!r} ({q:g} {unit})")
    return out


def cpu_record(name: str):
    """The newest CPU record in assets/results that a note calls ``name`` (:data:`CPU_RECORDS`)."""
    from demos.engine.results import recorded

    word = CPU_RECORDS[name]
    return next((r for r in recorded(gpu_only=False) if not r.is_gpu and word in str(r.machine.get("cpu", ""))), None)


def part_problems(nb, name: str = "") -> list[str]:
    """The figures a part's notes quote for a record that the record does not hold, and the CPU
    figures they type in without naming one (:func:`unheld`). For the H100 record: for
    each demo the part's live cells call, in the record its figure shows
    (``results.reference_for``), or, in a paragraph naming the "benchmark table", in the newest
    record's benchmark rows."""
    from demos.deck.nbtools import live_calls
    from demos.engine.results import reference, reference_for

    calls = dict.fromkeys(tuple(key.split(".", 1)) for key in live_calls(nb))
    newest = reference()
    values = [x for t, n in calls if (rec := reference_for(t, n)) is not None
              for x in numbers(rec.sections.get(t, {}).get(n, {}))]
    cpu = {n: [x for t, d in calls for x in numbers(rec.sections.get(t, {}).get(d, {}))] if
           (rec := cpu_record(n)) is not None else [] for n in CPU_RECORDS}
    notes = [(f"{name} cell {i}" if name else f"cell {i}", c["source"], values) for i, c in enumerate(nb["cells"])
             if c["cell_type"] == "markdown"
             and c.get("metadata", {}).get("slideshow", {}).get("slide_type") == "notes"]
    return unheld(notes, numbers(newest.rows) if newest else [], cpu)
