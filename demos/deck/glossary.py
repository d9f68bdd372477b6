"""The words the deck uses, each defined where the audience first meets it.

The first slide (with its speaker notes) that uses a term below writes it in bold with its meaning
(``**kernel** (the compiled loop the device runs)``); later slides use it freely. Agenda slides
name what is coming and are exempt. :func:`problems` lists each term whose first use does not
define it, and each term no slide uses, in deck order; ``make lint-slides`` prints them and the
tests fail on them. :func:`first_uses` says where each term is defined (the term's slide).
"""
from __future__ import annotations

import re
from typing import Sequence

# term → the pattern of its uses (case as written on the slides)
TERMS: dict[str, str] = {
    "kernel": r"\bkernels?\b",
    "fuse": r"\bfus(?:e|es|ed|ion|ing)\b",
    "aten": r"\baten\b",
    "Dynamo": r"\bDynamo\b",
    "FX graph": r"\bFX\b",
    "guard": r"\bguards?\b",
    "graph break": r"\bgraph breaks?\b|\bbreaks the graph\b",
    "AOTAutograd": r"\bAOTAutograd\b",
    "Inductor": r"\bInductor\b",
    "Triton": r"\bTriton\b",
    "extern kernel": r"\bextern\b",
    "jaxpr": r"\bjaxprs?\b",
    "StableHLO": r"\bStableHLO\b",
    "HLO": r"(?<!Stable)\bHLO\b",
    "XLA": r"\bXLA\b",
    "TF32": r"\bTF32\b",
    "remat": r"\bremat\b|\brematerial",
    "CUDA graph": r"\bCUDA graphs?\b",
}


def _slide_type(cell) -> str:
    return cell.get("metadata", {}).get("slideshow", {}).get("slide_type", "-")


def _seen_slides(nbs: Sequence[tuple[str, object]]) -> list[tuple[str, int, str]]:
    """(part, slide number, the text the audience reads or hears: the slide and its speaker
    notes) for every slide, in deck order."""
    out: list[tuple[str, int, str]] = []
    for name, nb in nbs:
        n = 0
        for i, c in enumerate(nb["cells"]):
            st = _slide_type(c)
            if i == 0 or st in ("slide", "subslide"):
                n += 1
                out.append((name, n, ""))
            if c["cell_type"] == "markdown" and st != "skip":  # the notes are read out too
                out[-1] = (name, n, out[-1][2] + "\n" + c["source"])
    return out


def defines(text: str, term: str) -> bool:
    """Does this slide define ``term``: the term (or a form of it) in bold?"""
    return bool(re.search(r"\*\*(?:" + TERMS[term] + r")\*\*", text)) or f"**{term}**" in text


def first_uses(nbs: Sequence[tuple[str, object]]) -> dict[str, tuple[str, int, str, str]]:
    """term → (part, slide number, the slide's heading, its text) of the first slide that uses it,
    agenda slides skipped; a term no slide uses is left out."""
    found: dict[str, tuple[str, int, str, str]] = {}
    for part, n, text in _seen_slides(nbs):
        heading = text.strip().splitlines()[0] if text.strip() else ""
        if heading.startswith("## Agenda"):
            continue
        for term, pattern in TERMS.items():
            if term not in found and re.search(pattern, text):
                found[term] = (part, n, heading, text)
    return found


def problems(nbs: Sequence[tuple[str, object]]) -> list[str]:
    """Each term whose first slide does not define it, and each term no slide uses; empty when
    the deck is in order."""
    first = first_uses(nbs)
    out = [f"no slide uses {term!r} (drop it from the terms, or use it)" for term in TERMS if term not in first]
    for term, (part, n, heading, text) in first.items():
        if not defines(text, term):
            out.append(f"{part} slide {n} ({heading[:40]}): uses {term!r} first but does not define it "
                       "(write it in bold with its meaning here, or reword)")
    return out
