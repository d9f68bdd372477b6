"""`make present`, `make warm` and the theme: token and localhost are enforced, caches are tracked,
one palette everywhere, every part links to the next. (The browser tests are in test_browser.py.)"""
from __future__ import annotations

import json
import re
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import pytest

from demos.deck import present
from demos.engine.errors import DemoError
from demos.deck.nbtools import RISE_SETTINGS, parts
from demos.engine.plots import PALETTE

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = "tests/fixtures/sample_deck.ipynb"


# -- the command make present runs ------------------------------------------------------
def test_plan_binds_loopback_and_keeps_token_off_the_command_line(monkeypatch):
    monkeypatch.delenv("JUPYTER_TOKEN", raising=False)
    p = present.plan(FIXTURE, port=8899)
    joined = " ".join(p.argv)
    assert "--ServerApp.ip=127.0.0.1" in p.argv
    assert "0.0.0.0" not in joined and "--ip=*" not in joined
    assert "--ServerApp.port=8899" in p.argv and "--ServerApp.port_retries=0" in p.argv
    assert "token" not in joined.lower().replace("--identityprovider", "")  # never disabled, never in ps
    assert p.env["JUPYTER_TOKEN"] == p.token and len(p.token) >= 32
    assert p.slideshow_url().startswith("http://127.0.0.1:8899/rise/tests/fixtures/sample_deck.ipynb?token=")
    assert present.plan(FIXTURE).token != p.token  # a fresh random token each time


@pytest.mark.parametrize("token", ["", "   ", "short"])
def test_refuses_to_start_without_a_real_token(monkeypatch, token):
    with pytest.raises(DemoError, match="token"):
        present.plan(FIXTURE, token=token)
    monkeypatch.setenv("JUPYTER_TOKEN", token)
    with pytest.raises(DemoError, match="token"):
        present.plan(FIXTURE)
    assert present.main(["--part", FIXTURE, "--dry-run"]) == 2


@pytest.mark.parametrize("ip", ["0.0.0.0", "::", "192.168.1.20", "example.org", "*"])
def test_refuses_non_loopback_addresses(ip):
    with pytest.raises(DemoError, match="SSH tunnel"):
        present.plan(FIXTURE, ip=ip, token="x" * 32)


@pytest.mark.parametrize("ip", ["127.0.0.1", "::1", "localhost", "127.0.0.2"])
def test_accepts_loopback_addresses(ip):
    assert present.plan(FIXTURE, ip=ip, token="x" * 32).ip == ip


def test_makefile_present_uses_the_guarded_launcher():
    out = subprocess.run(["make", "-n", "present"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    line = [ln for ln in out.splitlines() if "demos.deck.present" in ln]
    assert line, out
    assert "--ip" not in line[0] and "token" not in line[0].lower()
    out = subprocess.run(["make", "-n", "warm"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "-m demos warm" in out and "--mark-warm" in out
    out = subprocess.run(["make", "-n", "pdf", "RESULTS=assets/results/r.json"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    assert "-m demos export pdf --results assets/results/r.json" in out
    out = subprocess.run(["make", "-n", "pdf", "RESULTS=r.json", "PLACEHOLDERS=1"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    assert "--results r.json" in out and "--placeholders" in out


def test_part_paths():
    assert present.part_path(FIXTURE) == FIXTURE
    with pytest.raises(DemoError, match="no part 42"):
        present.part_path(42)
    with pytest.raises(DemoError):
        present.part_path("tests/fixtures/nope.ipynb")
    for p in parts():
        assert present.part_path(int(p.name[:2])) == f"slides/{p.name}"


def _lan_ip() -> str | None:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("10.254.254.254", 1))  # UDP connect sends nothing; it only picks a route
        ip = s.getsockname()[0]
        return None if ip.startswith("127.") else ip
    except OSError:
        return None
    finally:
        s.close()


@pytest.mark.slow
def test_real_server_requires_the_token_listens_only_on_localhost_and_stops(monkeypatch, artifacts):
    monkeypatch.delenv("JUPYTER_TOKEN", raising=False)
    p = present.plan(FIXTURE, port=present.free_port())
    t0 = time.perf_counter()
    proc = present.start(p)
    try:
        present.wait_ready(p, proc)
        ready = time.perf_counter() - t0
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(f"{p.base_url()}api/contents", timeout=10)
        assert e.value.code == 403
        with urllib.request.urlopen(f"{p.base_url()}api/contents?token={p.token}", timeout=10) as r:
            assert r.status == 200
        with urllib.request.urlopen(p.slideshow_url(), timeout=30) as r:
            assert r.status == 200 and b"rise" in r.read().lower()
        lan = _lan_ip()
        if lan:
            with pytest.raises(OSError):
                socket.create_connection((lan, p.port), timeout=3).close()
        (artifacts / "present-server-ready.txt").write_text(f"server ready in {ready:.1f} s\n")
    finally:
        rc = present.stop(proc)
    assert rc is not None
    with pytest.raises(ConnectionRefusedError):  # nothing listens any more: stopped cleanly
        socket.create_connection(("127.0.0.1", p.port), timeout=3).close()


def _api(p, method: str, path: str, body: dict | None = None) -> dict:
    req = urllib.request.Request(f"{p.base_url()}api/{path}", method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Authorization": f"token {p.token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        text = r.read()
    return json.loads(text) if text else {}


def _children(pid: int) -> set[int]:
    """Every live descendant of ``pid`` (from /proc)."""
    parent = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                parent[int(d.name)] = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    out, todo = set(), [pid]
    while todo:
        cur = todo.pop()
        kids = {c for c, pp in parent.items() if pp == cur}
        out |= kids
        todo += list(kids)
    return out


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.slow
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP"])
def test_make_present_stopped_by_a_signal_stops_the_server_and_its_kernels(sig, tmp_path):
    import os
    import signal
    import sys

    port = present.free_port()
    token = "t" * 32
    env = dict(os.environ, JUPYTER_TOKEN=token, DEMOS_PRESENT_QUIET="1")
    proc = subprocess.Popen([sys.executable, "-m", "demos.deck.present", "--part", FIXTURE, "--port", str(port),
                             "--no-browser"], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    p = present.plan(FIXTURE, port=port, token=token)
    try:
        present.wait_ready(p, timeout=120)
        kernel = _api(p, "POST", "kernels", {"name": "python3"})
        deadline = time.time() + 60
        while time.time() < deadline and not _children(proc.pid):
            time.sleep(0.2)
        family = _children(proc.pid)
        assert family, "the server and a kernel run under make present"
        assert kernel["id"]
        proc.send_signal(getattr(signal, sig))
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "stopping the Jupyter server" in out, out[-2000:]
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=3).close()
    deadline = time.time() + 20
    while time.time() < deadline and any(_alive(pid) for pid in family):
        time.sleep(0.3)
    assert not [pid for pid in family if _alive(pid)], "a server or kernel process outlived make present"


@pytest.mark.slow
def test_a_slide_saved_from_jupyterlab_is_stored_clean(tmp_path, monkeypatch):
    """The lecturer edits a slide in JupyterLab (after running cells) and saves: the file keeps the
    edit, loses outputs and session metadata, and still passes the deck's lint; saving an
    unchanged slide (autosave while presenting) leaves the file byte for byte as it was."""
    import shutil

    from demos.deck.nbtools import problems

    src = parts()[0]
    (tmp_path / "slides").mkdir()
    stored = tmp_path / "slides" / src.name
    shutil.copy(src, stored)
    original = stored.read_bytes()
    monkeypatch.delenv("JUPYTER_TOKEN", raising=False)
    p = present.plan(f"slides/{src.name}", port=present.free_port(), root=tmp_path)
    proc = present.start(p)
    try:
        present.wait_ready(p, proc)
        path = f"contents/slides/{src.name}"
        model = _api(p, "GET", path)
        _api(p, "PUT", path, {"type": "notebook", "format": "json", "content": model["content"]})
        assert stored.read_bytes() == original, "saving an unchanged slide changed the file"
        nb = model["content"]
        nb["metadata"]["language_info"] = {"name": "python", "version": "3.11.7", "mimetype": "text/x-python"}
        nb["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
        code = next(c for c in nb["cells"] if c["cell_type"] == "code")
        code["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "hello\n"}]
        code["execution_count"] = 3
        code["metadata"]["execution"] = {"iopub.status.busy": "2026-11-22T00:00:00Z"}
        nb["cells"][0]["source"] = nb["cells"][0]["source"].replace("Eager mode", "Eager mode, edited")
        _api(p, "PUT", path, {"type": "notebook", "format": "json", "content": nb})
    finally:
        present.stop(proc)
    saved = nbformat.read(str(stored), as_version=4)
    assert "Eager mode, edited" in saved.cells[0].source
    assert problems(saved) == []
    assert all(c.outputs == [] and c.execution_count is None for c in saved.cells if c.cell_type == "code")
    assert "widgets" not in saved.metadata and "version" not in saved.metadata["language_info"]


# -- warm caches ------------------------------------------------------------------------
def test_cache_status_cold_then_warm_then_stale(tmp_path, monkeypatch):
    marker = tmp_path / "warm.json"
    warm, line = present.cache_status(marker)
    assert not warm and "make warm" in line
    present.mark_warm(marker)
    data = json.loads(marker.read_text())
    assert data["versions"]["torch"] and data["demos_sha256"]
    monkeypatch.setattr(present, "CACHE_ROOT", tmp_path)
    (tmp_path / "inductor").mkdir()
    warm, line = present.cache_status(marker)
    assert not warm and "empty" in line
    (tmp_path / "inductor" / "x").write_text("compiled")
    warm, line = present.cache_status(marker)
    assert warm, line
    data["versions"]["torch"] = "0.0.1"
    marker.write_text(json.dumps(data))
    warm, line = present.cache_status(marker)
    assert not warm and "changed" in line


def test_cold_notice_tells_the_lecturer(monkeypatch):
    monkeypatch.setattr(present, "cache_status", lambda *a, **k: (False, "compile caches are cold (x)"))
    assert "make warm" in present.cold_notice()
    monkeypatch.setattr(present, "cache_status", lambda *a, **k: (True, "warm"))
    assert present.cold_notice() is None


# -- theme ------------------------------------------------------------------------------
THEME = (ROOT / "assets" / "theme.css").read_text()


def test_theme_palette_matches_the_figures():
    names = {"torch_eager": "--deck-torch-eager", "torch_compile": "--deck-torch-compile",
             "jax_eager": "--deck-jax-eager", "jax_jit": "--deck-jax-jit", "reference": "--deck-reference"}
    for backend, var in names.items():
        m = re.search(rf"{var}:\s*(#[0-9A-Fa-f]{{6}})", THEME)
        assert m, var
        assert m.group(1).upper() == PALETTE[backend].upper(), backend


def test_theme_fetches_nothing_and_uses_large_type():
    assert not re.search(r"url\(\s*['\"]?(https?:)?//", THEME)
    assert "@font-face" not in THEME and "googleapis" not in THEME
    size = int(re.search(r"--deck-text-size:\s*(\d+)px", THEME).group(1))
    code = int(re.search(r"--deck-code-size:\s*(\d+)px", THEME).group(1))
    assert size >= 26 and code >= 20  # readable from the back at 1280×720


@pytest.mark.parametrize("css", ["slides/rise.css", "tests/fixtures/rise.css"])
def test_rise_reads_the_theme(css):
    """jupyterlab_rise loads <notebook folder>/rise.css; it must import the deck theme."""
    path = ROOT / css
    m = re.search(r'@import url\("([^"]+)"\)', path.read_text())
    assert m and (path.parent / m.group(1)).resolve() == (ROOT / "assets" / "theme.css").resolve()


# -- parts ------------------------------------------------------------------------------
PART_NAMES = ["01_eager_mode", "02_what_compilers_do", "03_when_compilation_pays", "04_inside_the_compilers",
              "05_the_bill", "06_a_real_model", "07_your_own_function"]


def test_each_part_ends_with_a_link_to_the_next():
    found = parts()
    if not found:
        pytest.skip("no part in slides/ yet")
    for cur in found:
        assert cur.stem in PART_NAMES, f"unexpected part name {cur.name}"
        i = PART_NAMES.index(cur.stem)
        if i + 1 == len(PART_NAMES):
            continue
        nb = nbformat.read(str(cur), as_version=4)
        tail = "\n".join(c.source for c in nb.cells[-3:] if c.cell_type == "markdown")
        assert f"]({PART_NAMES[i + 1]}.ipynb)" in tail, f"{cur.name} does not end with a link to the next part"


def test_parts_use_the_deck_slideshow_settings():
    for p in parts():
        rise = nbformat.read(str(p), as_version=4).metadata.get("rise", {})
        # the slide is the window (RISE's default): a pixel size made reveal scale the slide past a
        # 1920×1080 projector's edges while RISE kept the slides' box at the window
        assert rise.get("width") == "100%" and rise.get("height") == "100%", p.name
        assert rise == RISE_SETTINGS, p.name
        assert rise.get("theme") == "white", f"{p.name}: only 'white' fetches no web fonts"


def test_a_presenter_kernel_starts_with_the_deck_loaded_but_no_names(monkeypatch):
    """`make present`'s kernels run demos/topics/_kernel_startup.py (PYTHONSTARTUP): the frameworks
    and every topic are imported before the first Shift+Enter, yet a live cell still has to import
    what it calls (the notebook's namespace holds none of it)."""
    from jupyter_client.manager import start_new_kernel

    monkeypatch.setenv("PYTHONSTARTUP", "/nonexistent/presenter-own-startup.py")
    p = present.plan(port=present.free_port(), token="t" * 48)
    assert p.env["PYTHONSTARTUP"] == str(present.KERNEL_STARTUP) and present.KERNEL_STARTUP.is_file()
    assert p.env["DEMOS_USER_PYTHONSTARTUP"] == "/nonexistent/presenter-own-startup.py"
    km, kc = start_new_kernel(kernel_name="python3", env=p.env, cwd=str(ROOT), startup_timeout=180)
    try:
        out = []
        code = ("import sys; print(sorted(m for m in ('torch', 'jax', 'ipywidgets', 'demos.topics.fusion', "
                "'demos.topics.model') if m in sys.modules), [n for n in ('torch', 'fusion', 'preload', "
                "'_jitdeck_preload') if n in dir()])")
        reply = kc.execute_interactive(code, timeout=60, output_hook=lambda m: out.append(m["content"].get("text", "")))
        assert reply["content"]["status"] == "ok"
        text = "".join(out)
        assert "['demos.topics.fusion', 'demos.topics.model', 'ipywidgets', 'jax', 'torch'] []" in text, text
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
