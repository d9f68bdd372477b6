"""``make check``: the pre-lecture check, on this machine's device (the GPU when there is one).

Runs every declared demo at its default configuration, headless, and for each one checks the
claims its slide makes (``Demo.claims``), that its figure keeps every text inside it with this
machine's numbers (``plots.texts_outside``), times measurement + figure, and reads peak memory. A
demo whose claim fails is measured once more from the declared state; it fails only if the claim
fails again, and its row says it was measured twice.
Then checks the environment the slideshow needs: widget versions RISE can render, warm compile
caches, chromium for the PDF export, JAX not preallocating the GPU next to torch, torch and JAX on
the same device (JAX on the CPU beside torch on the GPU fails, naming the fix). Prints a
table (demo, device, pass/fail, seconds, memory, fix), writes it with every figure to
``build/check/``, and exits non-zero when anything failed.
"""
from __future__ import annotations

import json
import resource
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

from demos.deck.claims import HOLDS, NOT_HERE
from demos.engine.errors import one_line, release_memory
from demos.engine.settings import PROJECT_ROOT, get, raw, temporarily

OUT = PROJECT_ROOT / "build" / "check"

@dataclass
class Row:
    what: str
    device: str
    ok: bool
    seconds: float | None = None
    memory: str = ""
    detail: str = ""
    fix: str = ""
    # each claim's verdict: {"key", "text", "status" (holds / fails / does not apply), "kind", "condition"}
    verdicts: list = field(default_factory=list)


def _reset_peak(device: str) -> None:
    """On a GPU, peak device memory is per demo; on a CPU it is the process's peak RSS so far."""
    if device == "cuda":
        import torch

        torch.cuda.reset_peak_memory_stats()


def _read_peak(device: str) -> float:
    if device == "cuda":
        import torch

        return torch.cuda.max_memory_allocated() / 2**30
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB → GiB (Linux)


def check_demo(demo, out: Path, laws_only: bool = False) -> Row:
    from demos.engine.devices import torch_device
    from demos.engine.plots import texts_outside, to_png

    device = torch_device()
    _reset_peak(device)
    t0 = time.perf_counter()
    first_failed: list[str] = []
    try:
        for attempt in (1, 2):
            demo.forget()  # from the declared state, as a live cell does
            data = demo.run()
            if attempt == 1:
                result = demo.draw(data, None)
                fig = result[0] if isinstance(result, tuple) else result
                (out / f"{demo.key}.png").write_bytes(to_png(fig))
                outside = texts_outside(fig)  # with this machine's numbers, as the slide draws them
                seconds = time.perf_counter() - t0
            verdicts = [v for v in demo.verdicts(data) if not laws_only or v.kind == "law"]
            claims = {v.text: v.status == HOLDS for v in verdicts if v.status != NOT_HERE}
            failed = [c for c, ok in claims.items() if not ok]
            if not failed or attempt == 2:
                break
            # a timing claim that fails once is measured once more, from the declared state: the
            # row says so, and it fails only if the second measurement fails too
            first_failed, busy = failed, _busy_line(data)
    except Exception as exc:
        release_memory()
        return Row(demo.key, device, False, time.perf_counter() - t0, detail=one_line(exc),
                   fix="see the line above; `python -m demos info --check` says which backends work")
    mem = f"{_read_peak(device):.2f} " + ("GiB" if device == "cuda" else "GiB RSS")
    detail = (f"claim fails here: {'; '.join(failed)}" if failed
              else f"{len(claims)} claim{'s hold' if len(claims) != 1 else ' holds'}" if claims else "draws")
    apart = [v for v in verdicts if v.status == NOT_HERE]
    if apart:
        detail += f"; {len(apart)} do{'es' * (len(apart) == 1)} not apply here: " + "; ".join(
            f"{v.key} ({v.condition})" for v in apart)
    first = _first_on_gpu(demo, data, verdicts) if device != "cpu" else ""
    if first:
        detail += f"; first measurement here: {first}"
    if first_failed:
        detail += (f" ({'also ' if failed else ''}measured twice: the first measurement failed "
                   f"{'; '.join(first_failed)}{busy})")
    if outside:
        detail += f"; its figure clips {len(outside)} text{'s' * (len(outside) > 1)}: {'; '.join(outside[:3])}"
    fix = ("the slide must say what this device shows; report it" if failed
           else "a text leaves the figure with these numbers; report it" if outside else "")
    return Row(demo.key, device, not failed and not outside, seconds, mem, detail, fix,
               [{"key": v.key, "text": v.text, "status": v.status, "kind": v.kind, "condition": v.condition}
                for v in verdicts])


def _first_on_gpu(demo, data: dict, verdicts: list) -> str:
    """The GPU claims no committed record has measured, with what this GPU measured: the numbers
    a record will confirm them with (``make record``)."""
    from demos.deck.verified import unmeasured_on_gpu

    keys = {c.key: c for c in unmeasured_on_gpu(demo)}
    out = []
    for v in verdicts:
        if v.key in keys:
            try:
                x = keys[v.key].value(data)
            except Exception:  # noqa: BLE001 - a value this measurement lacks
                x = None
            shown = f"{x:.3g}" if isinstance(x, float) else repr(x)
            out.append(f"{v.key} {v.status} (measured {shown})")
    return ", ".join(out)


def _busy_line(data: dict) -> str:
    """', while other processes used the cores' when the measurement's conditions say so."""
    cond = data.get("conditions") or {}
    return "" if cond.get("reliable", True) else ", while other processes used the cores or GPU"


def check_environment() -> list[Row]:
    from demos.deck.present import cache_status, widgets_problem
    from demos.engine.env import package_version as _version
    from demos.engine.devices import same_device

    rows = []
    problem = widgets_problem()
    rows.append(Row("widgets render in RISE", "-", problem is None,
                    detail=f"ipywidgets {_version('ipywidgets')}, jupyterlab_widgets {_version('jupyterlab_widgets')}, jupyterlab_rise {_version('jupyterlab_rise')}",
                    fix=problem or ""))
    warm, line = cache_status()
    rows.append(Row("compile caches warm", "-", warm, detail=line, fix="" if warm else "run `make warm`"))
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or raw("DEMOS_CHROMIUM")
    rows.append(Row("chromium for `make pdf`", "-", bool(browser), detail=browser or "not found",
                    fix="" if browser else "apt-get install chromium"))
    ok, where, fix = same_device()
    rows.append(Row("torch and JAX on the same device", "-", ok, detail=where, fix=fix))
    prealloc = get("XLA_PYTHON_CLIENT_PREALLOCATE") or ""
    ok = prealloc.lower() == "false"
    rows.append(Row("JAX does not preallocate the GPU", "-", ok, detail=f"XLA_PYTHON_CLIENT_PREALLOCATE={prealloc!r}",
                    fix="" if ok else "unset XLA_PYTHON_CLIENT_PREALLOCATE (demos sets it to false)"))
    return rows


def table(rows: Sequence[Row]) -> str:
    head = f"{'check':<34} {'device':<7} {'':<4} {'seconds':>8} {'memory':>16}  detail / fix"
    lines = [head, "-" * len(head)]
    for r in rows:
        secs = f"{r.seconds:8.2f}" if r.seconds is not None else " " * 8
        text = r.detail + (f"  → {r.fix}" if r.fix and not r.ok else "")
        lines.append(f"{r.what:<34} {r.device:<7} {'ok' if r.ok else 'FAIL':<4} {secs} {r.memory:>16}  {text}")
    failed = sum(not r.ok for r in rows)
    lines.append(f"\n{len(rows) - failed} of {len(rows)} checks pass" + (f"; {failed} FAIL" if failed else ""))
    return "\n".join(lines)


def check_demos(demos: Sequence, out: Path = OUT, verbose: bool = True, laws_only: bool = False) -> list[Row]:
    with temporarily({"DEMOS_STATIC": "1"}):  # headless: figures as PNG, no widgets (only while checking)
        return _run(demos, out, verbose, laws_only)


def _run(demos: Sequence, out: Path, verbose: bool, laws_only: bool = False) -> list[Row]:
    out.mkdir(parents=True, exist_ok=True)
    rows = check_environment()
    for demo in demos:
        row = check_demo(demo, out, laws_only)
        rows.append(row)
        if verbose:
            print(f"{'ok  ' if row.ok else 'FAIL'} {demo.key:<30} {row.seconds or 0:6.2f} s  {row.detail}", flush=True)
    (out / "report.txt").write_text(table(rows) + "\n")
    (out / "report.json").write_text(json.dumps([asdict(r) for r in rows], indent=1) + "\n")
    return rows


def main(demos: Sequence, out: Path = OUT, laws_only: bool = False) -> int:
    t0 = time.perf_counter()
    rows = check_demos(demos, out, laws_only=laws_only)
    print()
    print(table(rows))
    where = out.relative_to(PROJECT_ROOT) if out.is_relative_to(PROJECT_ROOT) else out
    print(f"figures and report in {where}/ · {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return 0 if all(r.ok for r in rows) else 1
