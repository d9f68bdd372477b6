"""A machine matrix on one box: ``make check-matrix`` / ``python -m demos check --as KIND``.

Each kind of machine a student brings is stood in for by this one, in a fresh process:

``native``      this CPU as it is
``avx2``        torch's kernels limited to AVX2 (``ATEN_CPU_CAPABILITY=avx2``, oneDNN and MKL too),
                Inductor's C++ built with ``-march=haswell`` (``TORCHINDUCTOR_CPP_MARCH``): the
                ISA of most laptops
``one-thread``  one torch thread (``DEMOS_THREADS=1``)
``busy``        a second process keeps one core busy all along
``no-simd``     no vector ISA (``ATEN_CPU_CAPABILITY=default``, ``-march=x86-64``), where torch.compile
                can build there

Each kind runs ``demos check`` in its own process, whose compile caches are its own: they live
under the machine fingerprint (:func:`demos.engine.env.fingerprint`), which the ISA is part of.
One table comes out: every claim by kind, each one holds, does not apply (with the condition that
was measured) or fails. A kind that cannot run here (no-simd where Inductor's C++ cannot build)
is one line saying why. The whole matrix is a benchmark (minutes per kind), not a timed test; CI
runs the law claims of the fast demos under ``avx2``, and every claim and figure of the fast timed
demos under ``busy`` (``tests/test_matrix.py``).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Sequence

from demos.engine.settings import PROJECT_ROOT
from demos.engine.errors import one_line

OUT = PROJECT_ROOT / "build" / "matrix"
# an AVX2 laptop: torch's, oneDNN's and MKL's kernels capped to AVX2, and Inductor's C++ built for
# Haswell (AVX2 + FMA), not -march=native, which would let the compiler use this CPU's AVX-512
AVX2 = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2",
        "TORCHINDUCTOR_CPP_MARCH": "haswell"}
KINDS: dict[str, dict[str, str]] = {
    "native": {},
    "avx2": AVX2,
    "one-thread": {"DEMOS_THREADS": "1"},
    "busy": {},
    "no-simd": {"ATEN_CPU_CAPABILITY": "default", "TORCHINDUCTOR_CPP_MARCH": "x86-64"},
}
MARK = {"holds": "holds", "fails": "FAILS", "does not apply": "n/a"}
# the fast demos whose law claims CI checks under avx2 (each a few seconds here)
FAST_LAWS = ("eager.timeline", "fusion.kernels", "fusion.memory", "fusion.dead_code", "reuse.plan",
             "internals.pipeline", "internals.guards", "internals.graph_breaks", "recompilation.recompile_live")
# the fast demos CI checks in full under busy: every claim, timings too, holds or does not apply (its
# condition says why), and every figure keeps its texts inside with the numbers a shared core gives
# (firstcall.costs once clipped a label with what a busy 2-core VM measured)
FAST_TIMED = ("eager.sync_trap", "eager.regimes", "firstcall.costs", "fusion.latency", "fusion.timeline",
              "roofline.overheads", "internals.capture_cost", "recompilation.recompile_live")


def kind_env(kind: str) -> dict[str, str]:
    if kind not in KINDS:
        from demos.engine.errors import unknown_name

        raise unknown_name("kind", kind, list(KINDS))
    # this process's environment with the kind's settings over it (``native``: as this process runs)
    return dict(os.environ, **KINDS[kind], PYTHONWARNINGS="ignore")


def cannot_build(kind: str, timeout: float = 300) -> str | None:
    """Why torch.compile cannot build a kernel under ``kind`` here, in one line (None: it can)."""
    probe = ("import torch\n"
             "f = torch.compile(lambda x: torch.sin(x) + 1)\n"
             "print(float(f(torch.ones(64)).sum()))\n")
    try:
        r = subprocess.run([sys.executable, "-c", probe], env=kind_env(kind), capture_output=True, text=True,
                           timeout=timeout, cwd=PROJECT_ROOT)
    except subprocess.TimeoutExpired:
        return f"a one-line torch.compile did not finish in {timeout:.0f} s"
    if r.returncode == 0:
        return None
    lines = [ln for ln in (r.stderr or r.stdout).splitlines() if "error" in ln.lower()]
    return "torch.compile cannot build here: " + one_line((lines or [r.stderr.strip() or "failed"])[-1])[:200]


def run_kind(kind: str, demos: Sequence[str] | None = None, laws_only: bool = False, out: Path = OUT,
             stream: bool = True) -> dict:
    """``demos check`` under ``kind`` in a fresh process: {"kind", "rows" (check's report rows),
    "seconds", "skipped" (why it could not run, or "")}."""
    folder = out / kind
    folder.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    why = cannot_build(kind) if kind == "no-simd" else None
    if why:
        return {"kind": kind, "rows": [], "seconds": time.perf_counter() - t0, "skipped": why}
    cmd = [sys.executable, "-m", "demos", "check", "--out", str(folder)]
    if demos:
        cmd += ["--demo", ",".join(demos)]
    if laws_only:
        cmd.append("--laws")
    spinner = None
    if kind == "busy":  # a second process keeps one core busy for the whole check
        spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        r = subprocess.run(cmd, env=kind_env(kind), cwd=PROJECT_ROOT, text=True,
                           stdout=None if stream else subprocess.PIPE, stderr=subprocess.STDOUT if not stream else None)
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()
    try:
        rows = json.loads((folder / "report.json").read_text())
    except (OSError, ValueError):
        rows = []
    skipped = "" if rows else f"`demos check` exited {r.returncode} and wrote no report"
    return {"kind": kind, "rows": rows, "seconds": round(time.perf_counter() - t0, 1), "skipped": skipped}


def claim_table(results: Sequence[dict]) -> tuple[str, int]:
    """The table of claims by kind (markdown), and how many cells fail. A demo that raised is one
    row of its own, failing."""
    kinds = [r["kind"] for r in results]
    cells: dict[tuple[str, str], dict[str, str]] = {}
    reasons: list[str] = []
    for r in results:
        for row in r["rows"]:
            if row["device"] == "-":
                continue  # the environment's rows: not claims
            if not row.get("verdicts") and not row["ok"]:
                cells.setdefault((row["what"], "(runs)"), {})[r["kind"]] = "FAILS"
                reasons.append(f"{r['kind']} · {row['what']}: {row['detail']}")
            for v in row.get("verdicts", []):
                key = (row["what"], v["key"])
                cells.setdefault(key, {})[r["kind"]] = MARK[v["status"]]
                if v["status"] != "holds":
                    reasons.append(f"{r['kind']} · {row['what']}.{v['key']} {MARK[v['status']]}: "
                                   + (v["condition"] or v["text"]))
    head = "| claim | law/regime | " + " | ".join(kinds) + " |"
    lines = [head, "|" + " --- |" * (len(kinds) + 2)]
    kinds_of = {(row["what"], v["key"]): v["kind"] for r in results for row in r["rows"] for v in row.get("verdicts", [])}
    fails = 0
    for (what, key), by in cells.items():
        marks = [by.get(k, "—") for k in kinds]
        fails += sum(m == "FAILS" for m in marks)
        lines.append(f"| {what}.{key} | {kinds_of.get((what, key), '')} | " + " | ".join(marks) + " |")
    for r in results:
        if r["skipped"]:
            lines.append(f"\n{r['kind']}: not run: {r['skipped']}")
    totals = []
    for k in kinds:
        col = [by.get(k) for by in cells.values() if by.get(k)]
        totals.append(f"{k}: {col.count('holds')} hold, {col.count('n/a')} do not apply, {col.count('FAILS')} fail")
    lines.append("\n" + "; ".join(totals))
    if reasons:
        lines.append("\nWhy each cell that does not hold:\n" + "\n".join(f"- {x}" for x in reasons))
    return "\n".join(lines), fails


def main(kinds: Sequence[str], demos: Sequence[str] | None = None, laws_only: bool = False,
         out: Path = OUT) -> int:
    from demos.engine.devices import cpu_model

    for k in kinds:
        kind_env(k)  # an unknown kind: one line, before minutes of measuring
    results = []
    for k in kinds:
        print(f"== {k}", flush=True)
        results.append(run_kind(k, demos, laws_only, out))
        print(f"== {k}: {results[-1]['seconds']:.0f} s" + (f" (not run: {results[-1]['skipped']})"
                                                             if results[-1]["skipped"] else ""), flush=True)
    text, fails = claim_table(results)
    import torch

    head = (f"Machine matrix on {cpu_model()} ({os.cpu_count()} cores, torch {torch.__version__}, native ISA "
            f"{torch.backends.cpu.get_cpu_capability()}), {time.strftime('%Y-%m-%d')}\n\n")
    out.mkdir(parents=True, exist_ok=True)
    (out / "matrix.md").write_text(head + text + "\n")
    (out / "matrix.json").write_text(json.dumps(results, indent=1) + "\n")
    print()
    print(head + text)
    print(f"\nwritten to {out / 'matrix.md'}", file=sys.stderr)
    return 1 if fails or any(r["skipped"] and r["kind"] != "no-simd" for r in results) else 0
