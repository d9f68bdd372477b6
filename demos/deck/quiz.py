"""``python -m demos quiz``: the lecturer's sheet. Every question a live slide asks, in slide
order, with its choices, this machine's answer and the reference record's.

This machine's answer comes from a measurement at the panel's defaults, made from the declared
state as a live cell makes it; a panel that opens on the result `make warm` measured is answered
from that result (what the room will see first), unless ``--measure`` asks for every one again.
``--record-only`` measures nothing and prints the record's answers alone.
"""
from __future__ import annotations

import sys
import time
from typing import Iterable, Sequence, TextIO

from demos.deck.asks import LETTERS
from demos.deck.demo import load_warmed
from demos.engine.plots import this_machine
from demos.engine.errors import one_line, release_memory
from demos.engine.settings import temporarily


def slide_order(demos: Sequence) -> list[tuple[str, object]]:
    """(part, demo) for each demo that asks, in the order the slides ask them; demos on no slide
    come last, under "-"."""
    import nbformat

    from demos.deck.nbtools import live_calls, parts

    by_key = {d.key: d for d in demos if d.ask is not None}
    out, seen = [], set()
    for nb_path in parts():
        for key in live_calls(nbformat.read(str(nb_path), as_version=4)):
            if key in by_key and key not in seen:
                out.append((nb_path.name[:2], by_key[key]))
                seen.add(key)
    out += [("-", d) for k, d in by_key.items() if k not in seen]
    return out


def answer_here(demo, measure: bool) -> tuple[dict | None, str]:
    """(this machine's data for the question, how it was got) — (None, the error) on failure."""
    if not measure and demo.opens_warmed:
        data = load_warmed(demo)
        if data is not None:
            return data, "make warm's result"
    try:
        demo.forget()  # from the declared state, as a live cell measures
        with temporarily({"DEMOS_STATIC": "1"}):
            return demo.run(), "measured now"
    except Exception as exc:  # one line; the sheet goes on
        release_memory()
        return None, one_line(exc)


def rows(demos: Sequence) -> list[dict]:
    """Every question in slide order, measuring nothing: its choices, the record's answer and,
    for a panel that opens on `make warm`'s result, that result's answer (what the room sees
    first). What the notes window shows before a panel has measured (:mod:`demos.deck.notes`)."""
    out = []
    for part, demo in slide_order(demos):
        ask = demo.ask
        ref, ref_label = demo.answering_reference(demo.defaults())
        warm = load_warmed(demo) if demo.opens_warmed else None
        out.append({"part": part, "key": demo.key, "title": demo.title, "question": ask.question,
                    "choices": ask.lettered(),
                    "record": {"label": ref_label, "said": ask.said(ref)} if ref is not None else None,
                    "warm": {"label": f"{this_machine()} (make warm)", "said": ask.said(warm)} if warm else None})
    return out


def sheet(demos: Sequence, measure: bool = True, everything: bool = False, out: TextIO = sys.stdout) -> int:
    """Print the sheet; returns how many questions this machine could not answer."""
    here_label = this_machine()
    unanswered = 0
    for part, demo in slide_order(demos):
        ask = demo.ask
        ref, ref_label = demo.answering_reference(demo.defaults())
        print(f"\nPart {part} · {demo.key} — {demo.title}", file=out)
        print(f"  {ask.question}", file=out)
        print("    " + "   ".join(f"{LETTERS[i]}. {c}" for i, c in enumerate(ask.choices)), file=out)
        line = []
        if measure:
            t0 = time.perf_counter()
            data, how = answer_here(demo, everything)
            if data is None:
                unanswered += 1
                line.append(f"{here_label}: ⚠ {how}")
            else:
                line.append(f"{here_label}: {ask.said(data)} [{how}, {time.perf_counter() - t0:.1f} s]")
                unanswered += ask.answer(data)[0] is None
        line.append(f"{ref_label}: {ask.said(ref)}" if ref is not None else "no recorded answer")
        print("  " + "   ·   ".join(line), file=out, flush=True)
    return unanswered


def main(demos: Iterable, measure: bool = True, everything: bool = False, as_json: bool = False) -> int:
    demos = list(demos)
    if as_json:  # measures nothing: the questions, the record's answers and make warm's
        import json

        print(json.dumps(rows(demos), ensure_ascii=False))
        return 0
    if not any(d.ask is not None for d in demos):
        print("none of these demos asks a question")
        return 0
    missed = sheet(demos, measure=measure, everything=everything)
    if measure and missed:
        print(f"\n{missed} question(s) this machine's measurement could not answer (the lines above say why)")
    return 0
