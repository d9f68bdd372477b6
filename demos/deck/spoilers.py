"""Every vote before its answer: nothing shown before a question states one of its choices.

A live slide asks the room first (:mod:`demos.deck.asks`). What the room has seen of the part
before it, the slides' text (the title slide, the agenda, titles, bullets, tables, code) and the
figures drawn on them (titles, labels, annotations, footers), must not state a choice of it: the
room would read the answer instead of predicting it. A figure revealed after an earlier vote
counts too: it stays on the screen, and in the room's memory, until this one. Speaker notes may
state anything: only the lecturer sees them.

A text states a choice (:func:`tells`) when it holds
- the choice's number with its unit ("22×", "×22", "6 kernels", "six kernels", "one graph"), on
  a slide (a figure is full of counts of its own subject, already voted on: its words are read);
- most of the choice's distinctive words in one sentence: the words of the choice that neither
  the question, the other choices nor the part's title slide (its subject) use ("copied",
  "front", "back" for "transpose ops: heads copied in front before the dot, and back after"); a
  kernel name is split into its words;
- or a phrase the question declares for that choice (``tells=`` on the ask: how the lecture's
  own prose would say it, "a failed guard means a recompile" for "2 compiles").

A tell that the question itself states (its premise: "six tensor ops") is no tell. Every choice is
checked, not only the one this machine or the record picks: an answer differs by machine, and a
slide that states a wrong choice as fact misleads the vote as much.

The figures are drawn from the newest committed record that holds each demo, as the deck draws a
record beside a live figure (a demo no record holds is read from its slides alone, and said so).
``python -m demos spoilers`` prints every finding; `make lint-slides` runs it.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
           "ten": 10, "eleven": 11, "twelve": 12, "single": 1, "a single": 1}
STOP = set("""a an the and or of to in on at by for with from as is are be it its this that these those than then
what which how many much does do did not no nor over under into onto out up per each every all any both
one two three four five six seven eight nine ten here there only own same other""".split())
# words of a choice that say nothing alone (units are matched with their number)
WEAK = {"op", "ops", "form", "call", "calls", "kernel", "kernels", "graph", "graphs", "time", "times", "way"}


def words(text: str) -> list[str]:
    """Lower-case words of ``text``; identifiers split at underscores and dots (a kernel's name
    ``cpp_fused_add_cos_mul_relu_sin_0`` is the words add, cos, mul, relu, sin)."""
    return [w for w in re.split(r"[^a-z0-9]+", text.lower().replace("_", " ")) if w]


def stem(word: str) -> str:
    """A crude stem, enough to meet "copied"/"copy", "inputs"/"input", "reused"/"reuse"."""
    for suffix in ("ing", "ied", "ies", "ed", "es", "s", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + ("y" if suffix in ("ied", "ies") else "")
    return word


def _stems(text: str) -> set[str]:
    return {stem(w) for w in words(text)}


@dataclass(frozen=True)
class Tell:
    """One way a text could state ``choice``: a compiled pattern, or a set of distinctive stems of
    which ``need`` must meet in one sentence."""

    choice: str
    kind: str  # "number", "words" or "declared"
    pattern: re.Pattern | None = None
    stems: frozenset = frozenset()
    need: int = 0

    def found(self, text: str) -> str | None:
        """The part of ``text`` that states the choice, or None."""
        if self.pattern is not None:
            m = self.pattern.search(text)
            return m.group(0) if m else None
        for sentence in re.split(r"(?<=[.;:!?])\s+|\n+|\s[—–]\s", text):
            have = self.stems & _stems(sentence)
            if len(have) >= self.need:
                return sentence.strip()[:160]
        return None


def _number_pattern(n: float, unit: str) -> re.Pattern:
    """``n`` with its unit as prose writes it: "22×", "×22", "22 ×", "6 kernels", "six kernels",
    "a single kernel"; a unit "×" also meets "22x"."""
    num = f"{n:g}".replace(".", r"\.")
    spelled = [w for w, v in NUMBERS.items() if v == n]
    head = "(?:" + "|".join([num] + [re.escape(w) for w in spelled]) + ")"
    if unit in ("×", "x"):
        return re.compile(rf"(?:(?<![\d.]){head}(?:\.0+)?\s*[×x](?![a-z])|×\s*{num}(?![\d.]))", re.I)
    base = re.escape(unit.rstrip("s"))
    return re.compile(rf"(?<![\w.]){head}\s+{base}(?:s|es)?\b", re.I)


def _choice_number(choice: str) -> tuple[float, str] | None:
    """The count a choice names, with its unit ("6 kernels", "6 or more kernels", "×22", "one",
    "none"); None for a range ("2–5×", "under 1.1×", "by 2^12")."""
    text = choice.strip()
    if re.search(r"\d\s*[–-]\s*\d|\bunder\b|\bover\b|\bbeyond\b|\bby\b|\^", text):
        return None
    m = re.fullmatch(r"[×x]\s*(\d+(?:\.\d+)?)", text) or re.fullmatch(r"(\d+(?:\.\d+)?)\s*[×x]", text)
    if m:
        return float(m.group(1)), "×"
    m = re.fullmatch(r"(\d+)(?: or more)?\s+([a-z][a-z ]*?)", text)
    if m:
        return float(m.group(1)), m.group(2).split()[0]
    return None


def tells(ask, subject: str = "") -> list[Tell]:
    """Every way a text could state a choice of ``ask`` (see the module's docstring); ``subject``:
    the part's title slide, whose words are no choice's own."""
    question = _stems(ask.question) | _stems(subject)
    out: list[Tell] = []
    for i, choice in enumerate(ask.choices):
        counted = _choice_number(choice)
        if counted is not None:
            n, unit = counted
            out.append(Tell(choice, "number", pattern=_number_pattern(n, unit)))
        others = set().union(*(_stems(c) for j, c in enumerate(ask.choices) if j != i))
        own = {stem(w) for w in words(choice) if w not in STOP and len(w) >= 3 and not w.isdigit()}
        distinct = own - others - question - {stem(w) for w in WEAK}
        if len(distinct) >= 2:  # one word alone ("none", "both") is no statement
            out.append(Tell(choice, "words", stems=frozenset(distinct), need=max(2, math.ceil(len(distinct) / 2))))
    for choice, pattern in ask.tells:
        out.append(Tell(choice, "declared", pattern=re.compile(pattern, re.I)))
    # a tell the question itself states is its premise, not the answer
    return [t for t in out if t.found(ask.question) is None]


# -- what the room sees before each vote ---------------------------------------------------
@dataclass
class Window:
    """One question and what was shown since the question before it."""

    part: str
    key: str
    subject: str  # the part's title slide
    cell: int  # the asking live cell's index in the notebook
    ask: Any
    shown: list[tuple[str, str, str]] = field(default_factory=list)  # (where, "slide" or "figure", text)
    unread: list[str] = field(default_factory=list)  # figures that could not be read (no record)


def _slide_type(cell) -> str:
    return cell.get("metadata", {}).get("slideshow", {}).get("slide_type", "-") or "-"


def windows(nb, by_key: dict, part: str = "", figure_texts=None) -> list[Window]:
    """The questions of one part in order, each with the slides' text and the figures shown before
    it in the part (``figure_texts(demo) -> list[str] | None``)."""
    from demos.deck.nbtools import live_call

    out: list[Window] = []
    shown: list[tuple[str, str, str]] = []
    unread: list[str] = []
    subject = nb["cells"][0]["source"] if nb["cells"] else ""
    for i, cell in enumerate(nb["cells"]):
        kind = _slide_type(cell)
        if kind in ("notes", "skip"):
            continue
        if cell["cell_type"] == "markdown":
            shown.append((f"cell {i}", "slide", cell["source"]))
            continue
        call = live_call(cell["source"]) if cell["cell_type"] == "code" else None
        if call is None:
            continue
        key, values = call
        demo = by_key.get(key)
        if demo is None:
            continue
        ask = demo.ask
        start = {**demo.defaults(), **values} if hasattr(demo, "defaults") else values
        if ask is not None and ask.asks(start):
            out.append(Window(part, key, subject, i, ask, list(shown), list(unread)))
        texts = figure_texts(demo) if figure_texts is not None else None
        if texts is None:
            unread.append(key) if key not in unread else None
        else:  # its figure is on screen from here on
            shown.append((f"cell {i}: the figure of {key}", "figure", "\n".join(texts)))
    return out


def findings(window: Window) -> list[str]:
    """Each place that states a choice of the window's question, as a line."""
    out, seen = [], set()
    for tell in tells(window.ask, window.subject):
        for where, kind, text in window.shown:
            if (tell.kind == "number" and kind == "figure") or (where, tell.choice) in seen:
                continue
            said = tell.found(text)
            if said is not None:
                seen.add((where, tell.choice))
                out.append(f"part {window.part} {where} states {tell.choice!r} ({tell.kind}: {said!r}) "
                           f"before cell {window.cell} asks {window.ask.question!r}")
    return out


def recorded_figure_texts(demo) -> list[str] | None:
    """The texts of ``demo``'s figure drawn from the newest committed record that holds it, as
    the deck draws a record (None where no record holds it)."""
    from matplotlib.text import Text

    for record in _records():
        data = demo.reference(None, record=record, seed=False)
        if data is None:
            continue
        drawn = demo.figure(data, None)
        fig = drawn[0] if isinstance(drawn, tuple) else drawn
        return [t.get_text() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    return None


def _records() -> list:
    """The committed records, newest first."""
    from demos.engine.results import Record
    from demos.engine.settings import PROJECT_ROOT

    return [Record.load(p) for p in sorted((PROJECT_ROOT / "assets" / "results").glob("*.json"), reverse=True)]


def check(demos: Sequence, notebooks: Iterable | None = None, figure_texts=recorded_figure_texts) -> tuple[list[str], list[str]]:
    """(the findings, the demos whose figures could not be read) over every part."""
    import nbformat

    from demos.deck.nbtools import parts

    by_key = {d.key: d for d in demos}
    cache: dict[str, list[str] | None] = {}

    def texts(demo):
        if demo.key not in cache:
            cache[demo.key] = figure_texts(demo) if figure_texts is not None else None
        return cache[demo.key]

    found, unread = [], []
    for path in (notebooks if notebooks is not None else parts()):
        nb = nbformat.read(str(path), as_version=4)
        for w in windows(nb, by_key, str(path).split("/")[-1][:2], texts):
            found += findings(w)
            unread += [k for k in w.unread if k not in unread]
    return found, unread


def main(demos: Sequence) -> int:
    found, unread = check(list(demos))
    for line in found:
        print(line)
    if unread:
        print(f"(figures read from their slides only, no committed record holds them: {', '.join(unread)})")
    print(f"{len(found)} place(s) state a choice before its vote" if found else "every vote comes before its answer")
    return 1 if found else 0
