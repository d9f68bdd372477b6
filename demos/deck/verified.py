"""Verdicts: what each claim says of a measurement (the figure's footer), and what each committed
GPU record verified, generated from the records (``python -m demos records``).

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

from demos.engine.settings import PROJECT_ROOT

BEGIN, END = "<!-- records:begin -->", "<!-- records:end -->"
README = PROJECT_ROOT / "README.md"


# =======================================================================================
# A demo's verdicts on a measurement, and its figure's footer
# =======================================================================================
def verdicts(demo, data: dict) -> list:
    """Each claim of ``demo`` that speaks of ``data``, with its verdict
    (:class:`demos.deck.claims.Verdict`); on an accelerator whose compiled and eager results
    disagree, none holds."""
    import dataclasses

    from demos.deck.claims import FAILS, HOLDS, verdicts as of
    from demos.engine.devices import accelerator_disagrees

    found = of(demo.claims, data)
    if found and accelerator_disagrees():
        found = [dataclasses.replace(v, status=FAILS) if v.status == HOLDS else v for v in found]
    return found


def footer(demo, data: dict) -> list[str]:
    """What a figure's footer says of its claims (``plots.stamp_figure`` reads ``data["verdicts"]``):
    each timing or accuracy claim's verdict beside the condition this measurement was in, and, on a
    live measurement, the GPU claims no committed record has measured yet, as expectations."""
    from demos.deck.claims import HOLDS, REGIME

    shown = [v for v in verdicts(demo, data) if v.kind == REGIME and (v.measured or v.status != HOLDS)]
    return [v.line() for v in shown] + ([] if data.get("recorded") else expected_on_gpu(demo, data, shown))


def as_recorded(data: dict, record) -> dict:
    """A record's measurement, judged as its own machine: its device kind (whose thresholds it
    meets) and, for a record made before measurements carried them, a known GPU's cache levels."""
    from demos.engine.peaks import recorded_caches

    data.setdefault("device", record.machine.get("device"))
    if not data.get("cache_levels"):
        data["cache_levels"] = recorded_caches(record.machine)
    return data


# =======================================================================================
# What the committed GPU records measured, per demo
# =======================================================================================
def gpu_verdicts(demo) -> dict[str, list]:
    """Each claim key of ``demo`` → its verdicts on the committed GPU records that hold the demo
    (newest first; empty: no GPU record has measured it). Read once per process."""
    cached = _GPU_VERDICTS.get(demo.key)
    if cached is None:
        from demos.engine.results import recorded

        cached = {c.key: [] for c in _claims_of(demo)}
        if cached and "records" not in _GPU_RECORDS:
            _GPU_RECORDS["records"] = recorded()
        for rec in (_GPU_RECORDS["records"] if cached else ()):
            data = demo.reference(None, record=rec, seed=False)
            if data is None:
                continue
            for v in demo.claims.verdicts(data):
                cached.setdefault(v.key, []).append(v)
        _GPU_VERDICTS[demo.key] = cached
    return cached


_GPU_VERDICTS: dict[str, dict[str, list]] = {}
_GPU_RECORDS: dict[str, list] = {}  # the committed GPU records, read once per process


def _claims_of(demo) -> list:
    """The declared :class:`demos.deck.claims.Claim` s of a demo (none for a plain function)."""
    from demos.deck.claims import Claims

    return list(demo.claims) if isinstance(demo.claims, Claims) else []


def unmeasured_on_gpu(demo) -> list:
    """The claims ``demo`` makes on a GPU that no committed GPU record has measured (held, or
    failed, with its condition measured): expectations until a record confirms them."""
    from demos.deck.claims import NOT_HERE

    seen = gpu_verdicts(demo)
    return [c for c in _claims_of(demo) if c.makes_claim("gpu")
            and not any(v.status != NOT_HERE for v in seen.get(c.key, ()))]


EXPECTED = "expected; not yet measured on a GPU"


def expected_on_gpu(demo, data: dict, above: list | None = None) -> list[str]:
    """The footer's line, on a measurement from a CPU (or MPS), for the GPU claims no record has
    measured: stated as expectations, never as facts. A claim the lines ``above`` already state in
    the same words is named as one of them."""
    from demos.deck.claims import Claim
    from demos.engine.devices import device_kind

    if device_kind() == "gpu":
        return []
    texts = []
    for c in unmeasured_on_gpu(demo):
        if isinstance(c, Claim) and (c.applies is None or _applies(c, data)):
            try:
                texts.append(c.render(data, "gpu"))
            except (KeyError, IndexError, TypeError, ValueError):
                texts.append(c.key)
    texts = list(dict.fromkeys(texts))
    if not texts:
        return []
    stated = {v.text for v in above or ()}
    new = [t for t in texts if t not in stated]
    if not new:
        said = "the claim above" if len(texts) == 1 else "the claims above"
    elif len("; ".join(new)) > 200:  # two footer lines at most: the speaker notes state them
        said = f"{len(texts)} claims of this slide, which its speaker notes state"
    else:
        both = len(stated & set(texts))
        said = "; ".join(new) + (f"; and the claim{'s' * (both > 1)} above" if both else "")
    return [f"On a GPU ({EXPECTED}): {said}"]


def _applies(claim, data: dict) -> bool:
    try:
        return bool(claim.applies(data))
    except Exception:  # noqa: BLE001 - a selector written for the GPU's measurement
        return False


# =======================================================================================
# What each record verified: README's table
# =======================================================================================
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


def table(all_demos) -> str:
    """The markdown for the declared demos (``topics.load()``): one row per GPU record, then the
    claims no record measured on a GPU."""
    from demos.deck.claims import FAILS, HOLDS, NOT_HERE, Claims

    demos = [d for d in all_demos if isinstance(d.claims, Claims)]
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


def write_readme(demos, path: Path = README) -> bool:
    """Rewrite the table between the markers; True when README changed."""
    text = path.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{path}: no {BEGIN} … {END} markers")
    new = re.sub(re.escape(BEGIN) + r".*?" + re.escape(END), lambda _: f"{BEGIN}\n{table(demos)}\n{END}", text,
                 flags=re.S)
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


def main(demos, readme: bool = False) -> int:
    if readme:
        changed = write_readme(demos)
        print(f"README.md {'updated' if changed else 'already agrees with the records'}", file=sys.stderr)
        return 0
    print(table(demos))
    return 0
