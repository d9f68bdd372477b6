"""A class on a real JupyterHub (docs/course.md): the hub from the course's own config
(docs/jupyterhub_config.py) with configurable-http-proxy, DummyAuthenticator and
SimpleLocalProcessSpawner on loopback (demos.deck.hub); the repository and the shared warm cache
read-only for everything the hub starts; two students, alice and bob, in headless chromium.

Each logs in through the hub's login page, lands on part 1's slideshow at /user/<name>/rise/...,
Shift+Enters its first live cell, answers its question and sees the figure; then both move the
cell's slider at once, and each figure's stamp and status line say the cores were shared. Each
student's kernel writes only under their own home (its compile caches there, reading the shared
warm ones), and neither the repository nor the shared cache changes. Screenshots go to
test-artifacts/hub/.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ARTIFACTS, PANEL_IMG, SLIDER_HANDLE, SLIDER_TRACK, _new_image, in_ci, require_browser

pytestmark = [pytest.mark.slow, pytest.mark.browser]

ROOT = Path(__file__).resolve().parent.parent
STUDENTS = ("alice", "bob")


def _listing(folder: Path) -> list:
    return sorted((p.relative_to(folder).as_posix(), p.lstat().st_mtime_ns) for p in folder.rglob("*"))


def _git_status() -> str:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "--", "slides", "demos", "docs"],
                          cwd=ROOT, capture_output=True, text=True).stdout


def _kernels(user: str) -> list[dict[str, str]]:
    """The environment of each kernel process of ``user``'s server (its JUPYTERHUB_USER)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if not any(b"ipykernel_launcher" in c for c in cmd):
                continue
            env = dict(kv.split("=", 1) for kv in Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace")
                       .split("\0") if "=" in kv)
        except OSError:
            continue
        if env.get("JUPYTERHUB_USER") == user:
            found.append(env)
    return found


def _read_only_mounts(pid: int) -> set[str]:
    ro = set()
    for line in Path(f"/proc/{pid}/mountinfo").read_text().splitlines():
        fields = line.split()
        if "ro" in fields[5].split(","):
            ro.add(fields[4])
    return ro


def _warm_shared(shared: Path) -> None:
    """The image's warm step (what postBuild would run), for part 1's first live cell only."""
    from demos.deck import hub

    env = {**hub.hub_environment(), "DEMOS_CACHE_DIR": str(shared), "PYTHONWARNINGS": "ignore"}
    for argv in (["-m", "demos", "warm", "--demo", "eager.timeline"], ["-m", "demos.deck.present", "--mark-warm"]):
        r = subprocess.run([sys.executable, *argv], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stdout[-1500:] + r.stderr[-1500:]


def test_two_students_on_one_hub_share_cores_not_files(tmp_path):
    from demos.deck import hub
    from demos.deck.walk import CURRENT, first_live_cell, time_to_figure, wait_kernel_idle
    from demos.engine.errors import DemoError

    require_browser()
    shots = ARTIFACTS / "hub"
    shots.mkdir(parents=True, exist_ok=True)
    shared = tmp_path / "shared-cache"
    _warm_shared(shared)
    shared_before, git_before = _listing(shared), _git_status()
    try:
        h = hub.start(tmp_path / "hub", STUDENTS, shared_cache=shared)
    except DemoError as exc:
        if in_ci():
            raise
        pytest.skip(str(exc))
    report: dict = {"hub_ready_s": h.extra["ready_s"]}
    try:
        # the hub and everything it spawned see the checkout and the shared cache read-only
        assert {str(ROOT), str(shared)} <= _read_only_mounts(h.proc.pid)
        with hub.student_browsers(len(STUDENTS)) as contexts:  # their own cookies, as on two laptops
            browsers = dict(zip(STUDENTS, contexts))
            pages, cells = {}, {}
            for user in STUDENTS:
                page, seconds = hub.login(browsers[user], h, user)
                assert page.url.startswith(f"{h.url}user/{user}/rise/slides/01_"), page.url
                pages[user] = page
                report[f"{user}_login_to_slide_s"] = seconds
            for user in STUDENTS:
                report[f"{user}_kernel_idle_s"] = wait_kernel_idle(h.server(user))
            for user, page in pages.items():
                cells[user] = cell = first_live_cell(page)
                row = time_to_figure(page, cell, shots=shots / f"{user}-asked.png")
                report[f"{user}_first_figure"] = row
                assert row["shown"] == "figure" and row["asked_s"] is not None, row  # asked, answered, shown
                assert "you said A" in row["mark"], row
                page.screenshot(path=str(shots / f"{user}-figure.png"))
                assert not page.evaluate(CURRENT)["errors"]
            # both move the slider at once: each measurement runs while the other's does
            old = {u: cells[u].locator(PANEL_IMG).first.get_attribute("src") for u in STUDENTS}
            clicked, drawn = {}, {}
            for user in STUDENTS:
                track = cells[user].locator(SLIDER_TRACK).first
                box, handle = track.bounding_box(), cells[user].locator(SLIDER_HANDLE).first.bounding_box()
                assert handle["x"] < box["x"] + 0.8 * box["width"], handle
                pages[user].mouse.click(box["x"] + 0.97 * box["width"], box["y"] + box["height"] / 2)
                clicked[user] = time.perf_counter()
            for user in STUDENTS:
                assert _new_image(cells[user], old[user], 180), f"{user}'s figure did not redraw"
                drawn[user] = time.perf_counter()
            report["redraws_s"] = {u: drawn[u] - clicked[u] for u in STUDENTS}
            assert max(clicked.values()) < min(drawn.values()), "the two redraws did not overlap"
            for user in STUDENTS:
                status = ""
                for _ in range(100):
                    status = cells[user].locator(".jitdeck-panel .jitdeck-status").inner_text()
                    if status and "measuring" not in status:
                        break
                    time.sleep(0.1)
                report[f"{user}_shared_status"] = status
                pages[user].evaluate("() => document.activeElement && document.activeElement.blur()")
                pages[user].screenshot(path=str(shots / f"{user}-both-at-once.png"))
                # shared cores, either way the deck meets them: its thread policy left a core to the
                # other student ("busy elsewhere", chosen at the first measurement), or the other
                # student took the cores it measured on (the warning)
                assert ("cores busy elsewhere" in status or
                        ("other processes used" in status and "timings may be inflated" in status)), status
            errors = [c for b in browsers.values() for c in b.console if c["kind"] != "console.warning"]
            assert not errors, errors
        # each student's kernel writes under their own home only: its caches there, reading the shared
        homes = {u: str(h.home(u)) for u in STUDENTS}
        for user in STUDENTS:
            kernels = _kernels(user)
            assert kernels, f"{user} has no kernel"
            for env in kernels:
                assert env["HOME"] == homes[user]
                for var in ("TORCHINDUCTOR_CACHE_DIR", "DEMOS_JAX_CACHE_DIR"):
                    assert env[var].startswith(homes[user] + "/.cache/jit-deck/"), (user, var, env[var])
            own = next(Path(homes[user], ".cache", "jit-deck").iterdir())
            links = [p for p in own.rglob("*") if p.is_symlink()]
            assert links and all(Path(os.readlink(p)).is_relative_to(shared) for p in links), user
            other = next(u for u in STUDENTS if u != user)
            assert not [p for p in Path(homes[user]).rglob("*") if p.is_symlink()
                        and homes[other] in os.readlink(p)], f"{user}'s files point into {other}'s home"
        # a student's server started on a read-only repository and logged no error
        log = h.log_text()
        bad = [line for line in log.splitlines() if line.startswith("[E ") or "Traceback" in line
               or "Read-only file system" in line or "Permission denied" in line]
        assert not bad, "\n".join(bad[:20])
        # the course's kernel culling took effect in each student's server (jupyter_server logs it)
        assert log.count("Culling kernels with idle durations > 1800 seconds") == len(STUDENTS), log[-3000:]
        assert log.count("Culling kernels even with connected clients") == len(STUDENTS)
    finally:
        hub.stop(h)
        (shots / "hub.log").write_text(h.log_text())
        (shots / "report.json").write_text(json.dumps(report, indent=1, default=str))
    assert _listing(shared) == shared_before, "a student wrote into the shared cache"
    assert _git_status() == git_before, "a student's session changed the repository"
