"""The words the deck uses, each defined on or before the first slide that uses it.

Part 1 ends with the glossary slides (a heading that starts ``## Words``): each term below is
written there in bold with its definition. A slide the audience sees before them may use a term
only where it defines it itself, with the term in bold (``**kernel**: …``). Agenda slides name
what is coming and are exempt. :func:`problems` lists each term used before it is defined, in
deck order; ``make lint-slides`` prints them and the tests fail on them.
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
GLOSSARY_HEADING = "## Words"


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


def problems(nbs: Sequence[tuple[str, object]]) -> list[str]:
    """Each term used on a slide before the glossary defines it (and not defined there), each
    term the glossary lacks, and a missing glossary; empty when the deck is in order."""
    slides = _seen_slides(nbs)
    at = next((k for k, (_p, _n, t) in enumerate(slides)
               if any(line.startswith(GLOSSARY_HEADING) for line in t.strip().splitlines()[:1])), None)
    if at is None:
        return [f"no glossary slide (a slide whose heading starts {GLOSSARY_HEADING!r})"]
    glossary = "\n".join(t for _p, _n, t in slides[at:] if t.strip().startswith(GLOSSARY_HEADING))
    out = [f"the glossary does not define {term!r} (write it in bold with its meaning)"
           for term in TERMS if not defines(glossary, term)]
    for term, pattern in TERMS.items():
        for part, n, text in slides[:at]:
            heading = text.strip().splitlines()[0] if text.strip() else ""
            if heading.startswith("## Agenda") or not re.search(pattern, text):
                continue
            if not defines(text, term):
                out.append(f"{part} slide {n} ({heading[:40]}): uses {term!r} before the glossary defines it "
                           "(define it here, in bold, or reword)")
            break
    return out
