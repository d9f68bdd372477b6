"""What each committed GPU record verified, generated from the records: ``python -m demos records``.

For every GPU record in ``assets/results/``: the demos it holds, and how many of their claims hold,
fail or do not apply there (a regime whose condition the record did not meet, or did not measure).
Then the claims no record has measured on a GPU: the slides state them as expectations
(:data:`demos.deck.demo.EXPECTED`). README.md carries the table between two markers;
``--readme`` rewrites it, and a test fails when README and the records disagree.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

from demos.engine.env import PROJECT_ROOT

BEGIN, END = "<!-- records:begin -->", "<!-- records:end -->"
README = PROJECT_ROOT / "README.md"


def _records() -> list[tuple[str, object]]:
    from demos.engine.errors import DemoError
    from demos.engine.results import RESULTS_DIR, Record

    out = []
    for p in sorted(RESULTS_DIR.glob("*.json"), reverse=True):
        try:
            rec = Record.load(p)
        except DemoError:
            continue
        if rec.is_gpu:
            out.append((p.name, rec))
    return out


def table() -> str:
    """The markdown: one row per GPU record, then the claims no record measured on a GPU."""
    from demos import topics
    from demos.deck.claims import FAILS, HOLDS, NOT_HERE, Claims
    from demos.deck.demo import unmeasured_on_gpu

    demos = [d for d in topics.load() if isinstance(d.claims, Claims)]
    lines = ["| record | machine | demos held | claims hold | fail | do not apply there |",
             "| --- | --- | --- | --- | --- | --- |"]
    for name, rec in _records():
        held, counts = 0, {HOLDS: 0, FAILS: 0, NOT_HERE: 0}
        for d in demos:
            data = d.reference(None, record=rec, seed=False)
            if data is None or not isinstance(rec.sections.get(d.topic, {}).get(d.name), dict):
                continue
            held += 1
            for v in d.claims.verdicts(data):
                counts[v.status] += 1
        machine = rec.machine.get("device_name", "?")
        lines.append(f"| `{name}` | {machine}, torch {rec.machine.get('torch', '?')} | {held} | "
                     f"{counts[HOLDS]} | {counts[FAILS]} | {counts[NOT_HERE]} |")
    missing = [(d.key, [c.key for c in unmeasured_on_gpu(d)]) for d in demos]
    missing = [(k, keys) for k, keys in missing if keys]
    total = sum(len(keys) for _, keys in missing)
    lines.append("")
    lines.append(f"Claims no committed record has measured on a GPU ({total}; the slides and figures call them "
                 "\"expected; not yet measured on a GPU\"):")
    lines.append("")
    lines += [f"- `{k}`: {', '.join(keys)}" for k, keys in missing]
    return "\n".join(lines)


def readme_block(text: str | None = None) -> str | None:
    """The table README.md holds now (None where it has no markers)."""
    text = README.read_text(encoding="utf-8") if text is None else text
    m = re.search(re.escape(BEGIN) + r"(.*?)" + re.escape(END), text, re.S)
    return m.group(1).strip("\n") if m else None


def write_readme(path: Path = README) -> bool:
    """Rewrite the table between the markers; True when README changed."""
    text = path.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{path}: no {BEGIN} … {END} markers")
    new = re.sub(re.escape(BEGIN) + r".*?" + re.escape(END), lambda _: f"{BEGIN}\n{table()}\n{END}", text,
                 flags=re.S)
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


def main(readme: bool = False) -> int:
    if readme:
        changed = write_readme()
        print(f"README.md {'updated' if changed else 'already agrees with the records'}", file=sys.stderr)
        return 0
    print(table())
    return 0
