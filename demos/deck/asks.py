"""What a live slide asks the room before it shows its figure.

A demo that makes claims declares one :class:`Ask`: a question, three or four choices, and which
choice a measurement makes true. The choices are read through one of the demo's claims where
they can be (:func:`count`, :func:`bands`), so the threshold the slide claims is still declared
once, in the claim: it becomes a choice, or the edge between two choices. Where the answer is
which of several things happened (which form was faster, which kernel a compiler chose),
:func:`among` names the choices and reads the measurement for the one that is true.

    >>> from demos.deck.claims import Claim
    >>> fused = Claim("{0} ops become {1} kernel", lambda d: (d["ops"], d["kernels"]), "==", (6, 1))
    >>> ask = count("Six ops, compiled: how many kernels?", fused, (2, 3, 6), part=1, noun="kernel")
    >>> ask.choices
    ('1 kernel', '2 kernels', '3 kernels', '6 kernels')
    >>> ask.answer({"ops": 6, "kernels": 1})
    (0, '1 kernel')
    >>> speed = Claim("over {threshold:g}× faster", lambda d: d["speedup"], ">", {"cpu": 1.5, "gpu": 2.0})
    >>> bands("How much faster?", speed, (1,)).choices
    ('under 1×', '1–1.5×', '1.5–2×', 'over 2×')

The panel (:mod:`demos.deck.ui`) shows the question and its choices first and the figure on a
choice or on the reveal button, then marks the choice against what this machine measured and
the reference record's answer. Headless, the question is printed as its own output, which the
export turns into its own page before the answer (:func:`questions_first`). ``python -m demos
quiz`` prints every question with both answers: the lecturer's sheet.
"""
from __future__ import annotations

import bisect
import html
import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

LETTERS = "ABCD"
# the metadata key of a headless question output, which the export lifts onto its own page
QUESTION_META = "jitdeck_question"


@dataclass(frozen=True)
class Ask:
    """One question, 3–4 choices, and ``pick(data)``: the index of the choice a measurement makes
    true (None: this measurement cannot tell). ``says(data)``: what was measured, in a few words
    ("1 kernel", "2.3×"), shown beside the letter. ``when(values)``: which panels ask it."""

    question: str
    choices: tuple[str, ...]
    pick: Callable[[dict], int | None]
    says: Callable[[dict], str] | None = None
    # asked only of a panel whose starting values pass (a demo on several slides asks on one)
    when: Callable[[dict], bool] | None = None
    # how the lecture's own prose would state a choice, beyond its words and numbers: (choice,
    # regular expression) pairs that demos.deck.spoilers looks for on the slides before the vote
    tells: tuple[tuple[str, str], ...] = ()

    def asks(self, values: dict) -> bool:
        """Does a panel starting at ``values`` ask this question?"""
        return self.when is None or bool(self.when(values))

    def __post_init__(self):
        object.__setattr__(self, "choices", tuple(self.choices))
        if not 3 <= len(self.choices) <= 4:
            raise ValueError(f"ask {self.question!r}: {len(self.choices)} choices; a question offers 3 or 4")
        if len(set(self.choices)) != len(self.choices):
            raise ValueError(f"ask {self.question!r}: two choices read the same: {self.choices}")
        object.__setattr__(self, "tells", told(self.tells))
        unknown = [c for c, _ in self.tells if c not in self.choices]
        if unknown:
            raise ValueError(f"ask {self.question!r}: tells for {unknown}, which are not among its choices {self.choices}")

    def answer(self, data: dict | None) -> tuple[int | None, str]:
        """(the choice ``data`` makes true or None, what it measured in a few words)."""
        if not isinstance(data, dict):
            return None, ""
        try:
            i = self.pick(data)
        except (KeyError, TypeError, IndexError, ZeroDivisionError, ValueError, AttributeError):
            i = None
        if i is not None and not 0 <= i < len(self.choices):
            i = None
        try:
            said = self.says(data) if self.says is not None else ""
        except (KeyError, TypeError, IndexError, ZeroDivisionError, ValueError, AttributeError):
            said = ""
        return i, said

    def lettered(self) -> list[str]:
        return [f"{LETTERS[i]}. {c}" for i, c in enumerate(self.choices)]

    def markdown(self) -> str:
        """The question page, headless: the question, the choices, and where the answer is."""
        items = "\n".join(f"- **{x.split('.', 1)[0]}.**{x.split('.', 1)[1]}" for x in self.lettered())
        return f"## Predict first\n\n**{self.question}**\n\n{items}\n\n*Vote, then turn the page: the figure answers.*"

    def said(self, data: dict | None) -> str:
        """One answer as a sheet writes it: "B (1 kernel)", or "—" where the measurement cannot tell."""
        i, said = self.answer(data)
        if i is None:
            return f"— ({said})" if said else "—"
        return f"{LETTERS[i]}" + (f" ({said})" if said else f" ({self.choices[i]})")


def told(tells) -> tuple[tuple[str, str], ...]:
    """``{choice: (regex, …)}`` (or pairs already) as (choice, regex) pairs; each regex compiles."""
    import re

    pairs = tuple(tells.items()) if isinstance(tells, dict) else tuple(tells or ())
    out = []
    for choice, patterns in pairs:
        for pat in ((patterns,) if isinstance(patterns, str) else patterns):
            re.compile(pat)
            out.append((choice, pat))
    return tuple(out)


# -- choices read through a claim --------------------------------------------------------
@dataclass(frozen=True)
class Unbound:
    """A question declared on its claim (``Claim(..., ask=count(question, options))``): the claim
    binds it to itself (``bind(claim) -> Ask``), so the claim's threshold becomes a choice or an edge."""

    make: Callable[[Any], Ask]

    def bind(self, claim) -> Ask:
        return self.make(claim)


def _claim_given(x: Any) -> bool:
    """Is ``x`` a claim (or None: a question that reads no claim), not the options that follow it?"""
    return x is None or callable(getattr(x, "threshold_for", None))


def _fmt(x: float) -> str:
    return f"{x:,g}"


def _component(claim, part: int | None) -> Callable[[dict], Any]:
    return (lambda d: claim.value(d)) if part is None else (lambda d: claim.value(d)[part])


def _claimed(claim, part: int | None) -> list[float]:
    """The numbers the claim compares with (one component of a tuple threshold with ``part``)."""
    out = []
    for kind in ("cpu", "gpu"):
        t = claim.threshold_for(kind)
        if t is None:
            continue
        if isinstance(t, (tuple, list)):
            t = t[part] if part is not None else None
        if isinstance(t, (int, float)) and not isinstance(t, bool):
            out.append(float(t))
    return out


def count(question: str, claim, options: Sequence[int] = (), *, part: int | None = None,
          noun: str = "", plural: str = "", fmt: str = "", open_top: bool = False,
          read: Callable[[dict], Any] | None = None, when: Callable[[dict], bool] | None = None,
          tells: dict | None = None) -> Ask | Unbound:
    """Exact counts as choices: ``options`` and the count the claim states (its threshold, or
    component ``part`` of a tuple threshold). With ``open_top`` the largest reads "N or more" and
    takes every larger count. A choice reads "6 kernels" (``noun``) or as ``fmt`` ("{}N");
    ``read`` overrides what is counted (default: the claim's value); ``when``: which panels ask it
    (:attr:`Ask.when`). Without the claim (``count(question, options, ...)``), it is declared on
    the claim: ``Claim(..., ask=...)``."""
    if not _claim_given(claim):
        kw = dict(part=part, noun=noun, plural=plural, fmt=fmt, open_top=open_top, read=read, when=when, tells=tells)
        return Unbound(lambda c: count(question, c, claim, **kw))
    values = sorted({int(v) for v in options} | {int(v) for v in _claimed(claim, part)})
    plural = plural or (noun + "s" if noun else "")

    def label(v: int, top: bool = False) -> str:
        if fmt:
            return fmt.format(v) + (" or more" if top else "")
        word = (noun if v == 1 else plural) if noun else ""
        return f"{v}{' or more' if top else ''}" + (f" {word}" if word else "")

    choices = tuple(label(v, open_top and v == values[-1]) for v in values)
    read = read or _component(claim, part)

    def pick(d: dict) -> int | None:
        x = read(d)
        if x is None:
            return None
        if open_top and x >= values[-1]:
            return len(values) - 1
        return values.index(int(x)) if float(x).is_integer() and int(x) in values else None

    return Ask(question, choices, pick, lambda d: label(int(read(d))), when, told(tells))


def bands(question: str, claim, extra: Sequence[float] = (), *, unit: str = "×", part: int | None = None,
          digits: int = 3, read: Callable[[dict], float] | None = None,
          when: Callable[[dict], bool] | None = None, tells: dict | None = None) -> Ask | Unbound:
    """Ranges as choices, their edges the claim's thresholds (on every device kind, and both ends
    of a "within" band) and ``extra`` edges: "under 1×", "1–1.5×", "1.5–2×", "over 2×". ``read``
    overrides what is placed (default: the claim's value). ``claim`` None: a quantity the slide
    shows but claims nothing of (a quiz's bins, no threshold), read by ``read``. ``when``: which
    panels ask it (:attr:`Ask.when`). Without the claim (``bands(question, extra, ...)``), it is
    declared on the claim: ``Claim(..., ask=...)``."""
    if not _claim_given(claim):
        kw = dict(unit=unit, part=part, digits=digits, read=read, when=when, tells=tells)
        return Unbound(lambda c: bands(question, c, claim, **kw))
    claimed = set() if claim is None else set(_claimed(claim, part)) | {x for b in claim.bands() for x in b}
    edges = sorted(claimed | {float(e) for e in extra})
    if claim is None and read is None:
        raise ValueError(f"ask {question!r}: bands without a claim need read=")
    choices = ([f"under {_fmt(edges[0])}{unit}"]
               + [f"{_fmt(a)}–{_fmt(b)}{unit}" for a, b in zip(edges, edges[1:])]
               + [f"over {_fmt(edges[-1])}{unit}"])
    value = read or _component(claim, part)

    def pick(d: dict) -> int | None:
        x = value(d)
        if x is None or not math.isfinite(float(x)):
            return None
        return bisect.bisect_right(edges, float(x))

    def says(d: dict) -> str:
        x = float(value(d))
        return (f"{x:,.0f}" if abs(x) >= 10 else f"{x:#.{digits}g}") + unit

    return Ask(question, tuple(choices), pick, says, when, told(tells))


def among(question: str, choices: Sequence[str], pick: Callable[[dict], int | None],
          says: Callable[[dict], str] | None = None, tells: dict | None = None) -> Ask:
    """Named choices; ``pick(data)`` reads the measurement for the one that is true."""
    return Ask(question, tuple(choices), pick, says, tells=told(tells))


# -- the mark ------------------------------------------------------------------------------
def mark_html(ask: Ask, chosen: int | None, here: dict | None, here_label: str,
              record: dict | None, record_label: str) -> str:
    """The line under a revealed figure: the room's choice, this machine's answer (✓ or ✗ against
    the choice) and the reference record's answer."""
    i, said = ask.answer(here)
    parts = []
    if " record" in record_label:  # the stamp under the figure names the machine in full
        record_label = record_label.split(" ")[0] + " record" + record_label.split(" record", 1)[1]
    if chosen is not None:
        parts.append(f"you said <b>{LETTERS[chosen]}</b>")
    if i is None:
        parts.append(f"{html.escape(here_label)}: —" + (f" ({html.escape(said)})" if said else ""))
    else:
        tick = "" if chosen is None else (" <span style='color:#1a7f37'>✓</span>" if chosen == i
                                           else " <span style='color:#b00020'>✗</span>")
        parts.append(f"{html.escape(here_label)}: <b>{LETTERS[i]}</b>{tick} ({html.escape(said or ask.choices[i])})")
    if record is not None:
        parts.append(f"{html.escape(record_label)}: {html.escape(ask.said(record))}")
    return "<span class='jitdeck-mark'>" + " · ".join(parts) + "</span>"


def answer_line(ask: Ask, here: dict | None, here_label: str, record: dict | None, record_label: str) -> str:
    """The answer as plain text, for the page after the question (headless) and the quiz."""
    out = f"Answer — {here_label}: {ask.said(here)}"
    if record is not None:
        out += f" · {record_label}: {ask.said(record)}"
    return out


# -- headless: the question on its own page ------------------------------------------------
def questions_first(nb) -> int:
    """Lift each question a headless panel printed (an output marked :data:`QUESTION_META`) out of
    its cell onto a slide of its own, just before the slide that holds the cell: the question page
    comes before the answer. Returns how many were lifted (the notebook is changed in place)."""
    import nbformat

    from demos.deck.nbtools import slide_groups

    lifted = 0
    for group in slide_groups(nb):
        for cell in group:
            if cell.get("cell_type") != "code":
                continue
            keep, questions = [], []
            for o in cell.get("outputs", []):
                meta = o.get("metadata", {}) or {}
                if o.get("output_type") == "display_data" and meta.get(QUESTION_META):
                    questions.append(o["data"].get("text/markdown", ""))
                else:
                    keep.append(o)
            if not questions:
                continue
            cell["outputs"] = keep
            first = group[0]
            at = nb.cells.index(first)
            for q in questions:
                page = nbformat.v4.new_markdown_cell(q)
                page.metadata["slideshow"] = {"slide_type": "slide"}
                nb.cells.insert(at, page)
                at += 1
                lifted += 1
            if first.get("metadata", {}).get("slideshow", {}).get("slide_type") not in ("slide", "subslide"):
                first.setdefault("metadata", {})["slideshow"] = {"slide_type": "slide"}
    return lifted
