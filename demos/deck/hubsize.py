"""How much a student costs a hub: ``python -m demos.deck.hubsize [--parts 1,3] [--out build/hubsize]``.

Measured through a real hub on this machine (:mod:`demos.deck.hub`: the course's config, the
checkout read-only), with one student at a time and nothing else running, so the figures are one
student's:

- **login → first figure, cold and warm**: from the click on the hub's login button to part 1's
  first live figure on screen (the student presses Space to it and Shift+Enter at once, and
  answers its question): the server spawns, RISE loads, the kernel starts and preloads the deck,
  the cell measures. Cold: a shared cache folder that nobody warmed (every compile happens in the
  student's own folder); warm: the checkout's ``.cache/`` as ``make warm`` left it.
- **per part**: the part opened in JupyterLab with a fresh kernel, Run All, every question
  answered (:func:`demos.deck.labrun.run_all`), while a sampler reads ``/proc`` every 0.1 s: the
  peak resident memory of the kernel with every process it started (Inductor's compile workers,
  the compiler, the deck's worker processes), the kernel's own high-water mark (VmHWM), its
  memory when the part is done (what a kernel left running keeps), and the CPU seconds of each of
  those processes (user + system, the last reading of each). Once from the warm caches, then
  again from a shared cache nobody warmed (CPU only: what warming saves).
- the student's single-user server's own peak memory.

It writes ``figures.json`` and ``sizing.md`` (the table docs/course.md quotes) to ``--out``.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from demos.engine.settings import PROJECT_ROOT

OUT = PROJECT_ROOT / "build" / "hubsize"
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _proc(pid: int) -> dict[str, Any] | None:
    """One process's parent, resident memory, peak resident memory and CPU seconds (None: gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        fields = stat[stat.rindex(")") + 2:].split()
        status = Path(f"/proc/{pid}/status").read_text()
    except (OSError, ValueError):
        return None
    hwm = next((int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith("VmHWM:")), 0)
    return {"ppid": int(fields[1]), "cpu_s": (int(fields[11]) + int(fields[12])) / TICKS,
            "rss": int(fields[21]) * PAGE_SIZE, "hwm": hwm}


def _user_of(pid: int) -> str | None:
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    for kv in env:
        if kv.startswith(b"JUPYTERHUB_USER="):
            return kv.split(b"=", 1)[1].decode()
    return None


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


class Sampler(threading.Thread):
    """Polls the kernels of ``user`` (and everything they start) until stopped."""

    def __init__(self, user: str, every_s: float = 0.1):
        super().__init__(daemon=True)
        self.user, self.every_s = user, every_s
        self.stop_flag = threading.Event()
        self.peak_tree = 0          # bytes: the most the kernel and its descendants held at once
        self.last_tree = 0          # bytes: the last reading (the kernel idle at the part's end)
        self.kernel_hwm = 0         # bytes: the kernel process's own high-water mark
        self.cpu: dict[int, float] = {}   # pid → last CPU seconds read
        self.workers: set[int] = set()

    def run(self) -> None:
        while not self.stop_flag.is_set():
            procs = {int(p): info for p in os.listdir("/proc") if p.isdigit() and (info := _proc(int(p)))}
            kernels = [pid for pid in procs if b"ipykernel_launcher" in _cmdline(pid) and _user_of(pid) == self.user]
            tree = set(kernels)
            grew = True
            while grew:
                more = {pid for pid, info in procs.items() if info["ppid"] in tree} - tree
                tree |= more
                grew = bool(more)
            self.workers |= tree - set(kernels)
            if tree:
                self.last_tree = sum(procs[p]["rss"] for p in tree)
                self.peak_tree = max(self.peak_tree, self.last_tree)
                self.kernel_hwm = max([self.kernel_hwm] + [procs[p]["hwm"] for p in kernels])
                for p in tree:
                    self.cpu[p] = max(self.cpu.get(p, 0.0), procs[p]["cpu_s"])
            time.sleep(self.every_s)

    def finish(self) -> dict[str, Any]:
        self.stop_flag.set()
        self.join(timeout=5)
        return {"peak_tree_mib": self.peak_tree / 2**20, "kernel_hwm_mib": self.kernel_hwm / 2**20,
                "idle_mib": self.last_tree / 2**20,
                "cpu_s": sum(self.cpu.values()), "worker_processes": len(self.workers)}


def server_hwm_mib(user: str) -> float:
    """The single-user server's own peak resident memory (VmHWM)."""
    for p in filter(str.isdigit, os.listdir("/proc")):
        if b"jupyterhub-singleuser" in _cmdline(int(p)) and _user_of(int(p)) == user:
            info = _proc(int(p))
            return (info or {"hwm": 0})["hwm"] / 2**20
    return 0.0


def first_figure(shared_cache: Path | None, workdir: Path, shots: Path) -> dict[str, Any]:
    """A student logs in to a fresh hub and goes straight to part 1's first live figure."""
    from demos.deck import hub
    from demos.deck.walk import first_live_cell, time_to_figure

    h = hub.start(workdir, ("alice",), shared_cache=shared_cache)
    try:
        with hub.student_browsers(1) as (ctx,):
            t0 = time.perf_counter()
            page, login_s = hub.login(ctx, h, "alice")
            row = time_to_figure(page, first_live_cell(page), timeout_s=600)
            total = time.perf_counter() - t0
            page.screenshot(path=str(shots))
        return {"login_to_slide_s": login_s, "login_to_figure_s": total, "shown": row["shown"],
                "status": row["status"], "server_hwm_mib": server_hwm_mib("alice")}
    finally:
        hub.stop(h)


def per_part(notebooks: list[Path], workdir: Path, shots: Path | None,
             shared_cache: Path | None = None) -> list[dict[str, Any]]:
    """Run All on each part in JupyterLab through the hub, one fresh kernel a part: from the
    checkout's warm caches, or from ``shared_cache`` (an empty one: every compile cold)."""
    from demos.deck import hub, labrun

    h = hub.start(workdir, ("alice",), shared_cache=shared_cache)
    rows = []
    try:
        with hub.student_browsers(1) as (ctx,):
            page, _ = hub.login(ctx, h, "alice")
            page.close()
            server = h.server("alice")
            for nb in notebooks:
                rel = nb.relative_to(PROJECT_ROOT).as_posix()
                sampler = Sampler("alice")
                sampler.start()
                t0 = time.perf_counter()
                got = labrun.run_all(ctx, server, rel, shots=shots)
                wall = time.perf_counter() - t0
                figures = sampler.finish()
                bad = [p for p in got["panels"] if not p.get("figure")]
                rows.append({"part": nb.stem, "wall_s": wall, **figures, "panels": len(got["panels"]),
                             "panels_without_figure": [p.get("code") for p in bad]})
                print(f"  {nb.stem}: {wall:.0f} s, peak {figures['peak_tree_mib']:.0f} MiB, idle {figures['idle_mib']:.0f} MiB "
                      f"(kernel {figures['kernel_hwm_mib']:.0f}), CPU {figures['cpu_s']:.0f} s, "
                      f"{figures['worker_processes']} worker processes", flush=True)
            rows.append({"part": "server", "server_hwm_mib": server_hwm_mib("alice")})
    finally:
        hub.stop(h)
    return rows


def table(figs: dict[str, Any]) -> str:
    parts = [r for r in figs["parts"] if r["part"] != "server"]
    cold = {r["part"]: r for r in figs.get("parts_cold", []) if r["part"] != "server"}
    server = next((r["server_hwm_mib"] for r in figs["parts"] if r["part"] == "server"), 0.0)
    lines = [f"Measured {figs['when']} on {figs['machine']}, through a JupyterHub on that machine "
             "(`python -m demos.deck.hubsize`), one student at a time, that student's browser on the same machine. "
             "Warm: the image's caches after `make warm`; cold: a shared cache nobody warmed.", "",
             "| part | Run All, wall (s): warm / cold | CPU (s): warm / cold | peak memory (MiB): warm / cold "
             "| kernel idle at the end (MiB) | processes the kernel started: warm / cold |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    nan = {"wall_s": float("nan"), "cpu_s": float("nan"), "peak": float("nan"), "worker_processes": "?"}
    for r in parts:
        c = cold.get(r["part"], nan)
        peak = max(r["peak_tree_mib"], r["kernel_hwm_mib"])
        cpeak = max(c["peak_tree_mib"], c["kernel_hwm_mib"]) if "peak_tree_mib" in c else float("nan")
        lines.append(f"| {r['part']} | {r['wall_s']:.0f} / {c['wall_s']:.0f} | {r['cpu_s']:.0f} / {c['cpu_s']:.0f} | "
                     f"{peak:.0f} / {cpeak:.0f} | {r['idle_mib']:.0f} | {r['worker_processes']} / {c['worker_processes']} |")
    first_cold, first_warm = figs["cold"], figs["warm"]
    lines += ["", f"The student's single-user server: {server:.0f} MiB at its peak.",
              f"Login → part 1's first figure: cold {first_cold['login_to_figure_s']:.1f} s, warm "
              f"{first_warm['login_to_figure_s']:.1f} s (login → first slide {first_cold['login_to_slide_s']:.1f} s "
              f"and {first_warm['login_to_slide_s']:.1f} s)."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from demos.engine.entry import parts_command

    return parts_command(argv, "python -m demos.deck.hubsize", __doc__, "hubsize", str(OUT), "figures.json and sizing.md", _size)


def _size(args) -> int:
    from demos.deck import export, present
    from demos.engine.devices import machine_info
    from demos.engine.outputs import output_folder, write_atomic
    from demos.engine.results import now_iso

    notebooks = export.select_parts(args.parts)
    out = output_folder(args.out, "--out")
    warm, line = present.cache_status()
    print(line, flush=True)
    info = machine_info()
    figs: dict[str, Any] = {"when": now_iso()[:10], "cache": line,
                            "machine": f"{info.get('device_name', '?')}, {os.cpu_count()} cores, "
                                       f"{os.sysconf('SC_PHYS_PAGES') * PAGE_SIZE / 2**30:.0f} GiB"}
    with tempfile.TemporaryDirectory(prefix="jitdeck-hubsize-") as tmp:
        tmp = Path(tmp)
        empty = tmp / "nobody-warmed"
        print("cold: a shared cache nobody warmed…", flush=True)
        figs["cold"] = first_figure(empty, tmp / "cold", out / "cold-first-figure.png")
        print(f"  {figs['cold']['login_to_figure_s']:.1f} s", flush=True)
        print("warm: the checkout's .cache/…", flush=True)
        figs["warm"] = first_figure(None, tmp / "warm", out / "warm-first-figure.png")
        print(f"  {figs['warm']['login_to_figure_s']:.1f} s", flush=True)
        figs["parts"] = per_part(notebooks, tmp / "parts", out / "panels")
        print("every part again from a shared cache nobody warmed…", flush=True)
        figs["parts_cold"] = per_part(notebooks, tmp / "parts-cold", None, shared_cache=tmp / "nobody-warmed-2")
    write_atomic(out / "figures.json", json.dumps(figs, indent=1))
    write_atomic(out / "sizing.md", table(figs))
    print(table(figs))
    return 0 if warm else 1


if __name__ == "__main__":
    sys.exit(main())
