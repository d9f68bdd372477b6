"""``make present``: a token-protected JupyterLab + RISE server on localhost, opened on part 1.

    python -m demos.deck.present [--part 1] [--port 8888] [--no-browser] [--dry-run]
    python -m demos.deck.present --mark-warm      (run by `make warm` after the caches are filled)
    python -m demos.deck.present --cache-status

Safety, on purpose not configurable away: the server always requires a token (a fresh random
one unless JUPYTER_TOKEN is set to a non-empty value) and binds only to a loopback address. To
present from a remote GPU machine, run `make present` there and tunnel the port:

    ssh -L 8888:127.0.0.1:8888 gpu-box      # then open the printed URL on your laptop

The token travels in the child's environment (JUPYTER_TOKEN), never on its command line, so it
does not show up in `ps`. Ctrl-C, SIGTERM and SIGHUP stop the server cleanly (kernels shut
down, port released). Slides saved while presenting are stored clean (nbtools.pre_save_hook).
"""
from __future__ import annotations

import argparse
import ipaddress
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import webbrowser
from dataclasses import dataclass, field
from pathlib import Path

from demos.deck import notes
from demos.engine.env import (CACHE_ROOT, FINGERPRINT, VERSIONED, cache_problem, compile_root, other_fingerprints,
                              package_digest, package_version)
from demos.engine.errors import DemoError
from demos.engine.settings import PROJECT_ROOT, get, parse

LOOPBACK_NAMES = ("localhost",)
WARM_MARKER = CACHE_ROOT / "warm.json"
KERNEL_STARTUP = PROJECT_ROOT / "demos" / "topics" / "_kernel_startup.py"
# demos/ code that compiles nothing: editing it leaves the caches warm.
_NOT_COMPILED = ("deck/", "cli.py", "__main__.py")


# -- what to start ----------------------------------------------------------------------
def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_token(token: str | None) -> str:
    if token is None or not token.strip():
        raise DemoError("refusing to start Jupyter without a token: set JUPYTER_TOKEN to a non-empty "
                        "value or leave it unset (a random token is generated)")
    if len(token.strip()) < 16:
        raise DemoError("refusing a token shorter than 16 characters (anyone on this machine could guess it)")
    return token.strip()


def check_ip(ip: str) -> str:
    if not is_loopback(ip):
        raise DemoError(f"refusing to bind to {ip!r}: the server only listens on localhost; to present "
                        "from a remote machine use an SSH tunnel: ssh -L 8888:127.0.0.1:8888 <host>")
    return ip


def new_token() -> str:
    return secrets.token_hex(24)


def part_path(part: str | int | None = None, root: Path = PROJECT_ROOT) -> str:
    """Server-relative path of a part: 1 → slides/01_eager_mode.ipynb (or a given .ipynb path)."""
    from demos.deck.nbtools import parts

    if part is None or str(part).strip() == "":
        part = 1
    text = str(part)
    if text.endswith(".ipynb"):
        p = Path(text)
        p = p if p.is_absolute() else (root / p)
        if not p.exists():
            raise DemoError(f"no notebook {text}")
        return p.resolve().relative_to(root.resolve()).as_posix()
    try:
        n = int(text)
    except ValueError:
        raise DemoError(f"--part takes a number or a .ipynb path, not {text!r}") from None
    found = [p for p in parts() if p.name.startswith(f"{n:02d}_")]
    if not found:
        have = ", ".join(p.name for p in parts()) or "none yet"
        raise DemoError(f"no part {n} in slides/ (parts: {have})")
    return found[0].resolve().relative_to(root.resolve()).as_posix()


@dataclass
class ServerPlan:
    """The exact command and environment `make present` runs (tests assert on it)."""

    argv: list[str]
    env: dict[str, str]
    ip: str
    port: int
    token: str
    root: Path
    notebook: str
    extra: dict = field(default_factory=dict)

    def base_url(self) -> str:
        host = f"[{self.ip}]" if ":" in self.ip else self.ip
        return f"http://{host}:{self.port}/"

    def slideshow_url(self, with_token: bool = True) -> str:
        url = f"{self.base_url()}rise/{self.notebook}"
        return url + (f"?token={self.token}" if with_token else "")


def free_port(ip: str = "127.0.0.1") -> int:
    fam = socket.AF_INET6 if ":" in ip else socket.AF_INET
    with socket.socket(fam, socket.SOCK_STREAM) as s:
        s.bind((ip, 0))
        return s.getsockname()[1]


def plan(part: str | int | None = None, port: int | None = None, ip: str = "127.0.0.1",
         token: str | None = None, root: Path = PROJECT_ROOT, python: str | None = None) -> ServerPlan:
    """Build the server command. Refuses an empty token and any non-loopback address."""
    ip = check_ip(ip)
    if token is None:
        env_token = get("JUPYTER_TOKEN")  # empty is a value here, refused below
        token = new_token() if env_token is None else env_token
    token = check_token(token)
    port = int(port) if port else 8888
    notebook = part_path(part, root)
    env = dict(os.environ)
    env["JUPYTER_TOKEN"] = token
    env.pop("DEMOS_STATIC", None)          # live cells must be live in the slideshow
    env.pop("DEMOS_RESULTS", None)
    # each kernel preloads the deck as it starts, so the first Shift+Enter pays no import
    # (demos/topics/_kernel_startup.py; a path, not an import: deck code never imports topics)
    if env.get("PYTHONSTARTUP") and "DEMOS_USER_PYTHONSTARTUP" not in env:
        env["DEMOS_USER_PYTHONSTARTUP"] = env["PYTHONSTARTUP"]
    env["PYTHONSTARTUP"] = str(KERNEL_STARTUP)
    argv = [
        python or sys.executable, "-m", "jupyterlab",
        "--no-browser",
        f"--ServerApp.ip={ip}",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--ServerApp.root_dir={root}",
        "--ServerApp.allow_remote_access=False",
        "--ServerApp.open_browser=False",
        "--ServerApp.allow_origin=",
        # a slide saved from JupyterLab, or by autosave while presenting, is stored clean (no
        # outputs, no session metadata): presenting leaves the checkout as it was
        "--FileContentsManager.pre_save_hook=demos.deck.nbtools.pre_save_hook",
        # jupyterlab_rise points MathJax at a CDN by default; serve nothing remote.
        "--ServerApp.tornado_settings={'mathjax_url': '/static/nonexistent-mathjax.js'}",
        # the notes window (key t in the slideshow): its page and the lab extension that drives it
        *notes.server_args(),
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        argv.append("--allow-root")        # CI containers run as root; the token still applies
    return ServerPlan(argv=argv, env=env, ip=ip, port=port, token=token, root=Path(root), notebook=notebook)


# (jupyterlab_rise, ipywidgets, jupyterlab_widgets) version prefixes proven, in headless chromium
# on the whole deck, to render and answer inside the slideshow. The deck's pins: RISE 0.42.0 (its
# page built on JupyterLab 4.0) with ipywidgets 8.1.2 and jupyterlab_widgets 3.0.10 (3.0.11 and
# later import @jupyterlab/console, which RISE's page does not share: widgets show as text). The
# older pair, RISE 0.43.1 with ipywidgets 7.8, renders too, with ~40 console errors per part from
# RISE's own bundle; ipywidgets 8 in RISE 0.43 shows plain text (jupyterlab-contrib/rise #119).
RENDERING_WIDGETS = (("0.42.", "8.1.2", "3.0.10"), ("0.43.", "7.8.", "1.1."))
PINNED_WIDGETS = "jupyterlab_rise==0.42.0 ipywidgets==8.1.2 jupyterlab_widgets==3.0.10"


def widgets_problem() -> str | None:
    """One line when the installed widget packages will not render in RISE (None: fine)."""
    rise = package_version("jupyterlab_rise")
    ipw, jlw = package_version("ipywidgets"), package_version("jupyterlab_widgets")
    if ipw is None:
        return "ipywidgets is not installed: live cells show no controls"
    for want_rise, want_ipw, want_jlw in RENDERING_WIDGETS:
        if (rise or "").startswith(want_rise) and ipw.startswith(want_ipw) and (jlw or "").startswith(want_jlw):
            return None
    return (f"ipywidgets {ipw} with jupyterlab_widgets {jlw} in jupyterlab_rise {rise} is not a combination "
            f"known to render inside the RISE slideshow (widgets may appear as text); install the deck's pins: "
            f"{PINNED_WIDGETS}")


# -- caches -----------------------------------------------------------------------------
def fingerprint(root: Path = PROJECT_ROOT) -> dict:
    """What a warm cache depends on: framework versions and the demos' source code."""
    return {"versions": {k: package_version(k) for k in VERSIONED}, "python": sys.version.split()[0],
            "demos_sha256": package_digest(skip=_NOT_COMPILED, root=root)}


def mark_warm(marker: Path = WARM_MARKER, root: Path = PROJECT_ROOT) -> Path:
    """Record that `make warm` filled the caches (atomically; one line when it cannot)."""
    data = fingerprint(root)
    data["warmed_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    data["machine"] = FINGERPRINT  # the folder it lies in: caches of another machine are never read
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        tmp = marker.with_name(marker.name + ".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        os.replace(tmp, marker)
    except OSError as exc:
        raise DemoError(f"cannot write the warm marker {marker}: {exc.strerror or exc}") from None
    return marker


def cache_status(marker: Path = WARM_MARKER, root: Path = PROJECT_ROOT) -> tuple[bool, str]:
    """(warm?, one line for the lecturer). Where the shared folder is not writable (a hub's
    read-only image), the line also says where this user's new compiles go."""
    problem = cache_problem()
    if problem:
        return False, f"compile caches cannot be kept: {problem}"
    own = compile_root() if cache_problem(shared=True) else None
    mine = f"; {CACHE_ROOT} is not writable here, so new compiles go to {own}" if own is not None else ""
    warm, line = _warmth(marker, root)
    return warm, line + mine


def _warmth(marker: Path, root: Path) -> tuple[bool, str]:
    base = marker.parent.parent  # .cache/: one folder per machine fingerprint, the marker in each
    if not marker.exists():
        others = other_fingerprints(base)
        if others:  # warmed on another kind of machine (another ISA, GPU or version): never read here
            return False, (f"compile caches are cold for this machine ({FINGERPRINT}); {base.name}/ holds "
                           f"caches warmed for {', '.join(others)}, which are not read here: run `make warm`")
        if (base / "warm.json").exists():  # warmed before the caches were kept per machine
            return False, (f"compile caches are cold for this machine ({FINGERPRINT}); {base.name}/ holds "
                           "caches warmed before they were kept per machine, which are not read: run `make warm`")
        return False, "compile caches are cold (`make warm` has not run here)"
    try:
        data = json.loads(marker.read_text())
    except (OSError, ValueError):
        return False, "compile caches are cold (unreadable warm marker)"
    if data.get("machine", FINGERPRINT) != FINGERPRINT:  # a marker copied from another machine's folder
        return False, f"compile caches are cold for this machine ({FINGERPRINT}): warmed for {data['machine']}"
    now = fingerprint(root)
    if data.get("versions") != now["versions"] or data.get("python") != now["python"]:
        return False, "compile caches are cold (torch/JAX/Python changed since `make warm`)"
    if data.get("demos_sha256") != now["demos_sha256"]:
        return False, "compile caches may be cold (demos/ changed since `make warm`)"
    caches = [CACHE_ROOT / "inductor", CACHE_ROOT / "jax"]
    if not any(p.exists() and any(p.iterdir()) for p in caches):
        return False, "compile caches are cold (.cache/ is empty)"
    return True, f"compile caches warm (since {data.get('warmed_at', '?')})"


def cold_notice() -> str | None:
    warm, line = cache_status()
    if warm:
        return None
    return (f"NOTE: {line}.\n"
            "      The first run of each live cell will stall for its compiles (seconds on a GPU, "
            "longer on a CPU).\n"
            "      Run `make warm` before the lecture to avoid it.")


# -- running ----------------------------------------------------------------------------
def wait_ready(p: ServerPlan, proc: subprocess.Popen | None = None, timeout: float = 120.0) -> float:
    """Poll /api/status with the token until the server answers; returns seconds waited."""
    t0 = time.perf_counter()
    url = f"{p.base_url()}api/status"
    req = urllib.request.Request(url, headers={"Authorization": f"token {p.token}"})
    while time.perf_counter() - t0 < timeout:
        if proc is not None and proc.poll() is not None:
            raise DemoError(f"the Jupyter server exited with code {proc.returncode} before it was ready")
        try:
            with urllib.request.urlopen(req, timeout=2) as r:
                if r.status == 200:
                    return time.perf_counter() - t0
        except (urllib.error.URLError, ConnectionError, socket.timeout, OSError):
            pass
        time.sleep(0.2)
    raise DemoError(f"the Jupyter server did not answer on {p.base_url()} within {timeout:.0f} s")


def start(p: ServerPlan, log=None) -> subprocess.Popen:
    """Start the server in its own session (so Ctrl-C reaches us first and we stop it cleanly)."""
    return subprocess.Popen(p.argv, env=p.env, cwd=str(p.root), stdout=log or subprocess.DEVNULL,
                            stderr=subprocess.STDOUT if log else subprocess.DEVNULL, start_new_session=True)


def stop(proc: subprocess.Popen, timeout: float = 15.0) -> int:
    """SIGTERM (Jupyter shuts its kernels down), then SIGKILL if it hangs."""
    if proc.poll() is None:
        try:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
    return proc.returncode


class _Stop(Exception):
    """SIGTERM or SIGHUP reached `make present` (a closed terminal, a process manager)."""


def _raise_stop(signum, _frame):
    raise _Stop(signal.Signals(signum).name)


def _can_open_browser() -> bool:
    if sys.platform.startswith("linux") and not (get("DISPLAY") or get("WAYLAND_DISPLAY")):
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    from demos.engine.entry import Parser, guarded

    ap = Parser(prog="python -m demos.deck.present", description=__doc__,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", default=None, help="part number or .ipynb path (default: PART, else 1)")
    ap.add_argument("--port", default=None, help="port, 1-65535 (default: PORT, else 8888)")
    ap.add_argument("--ip", default="127.0.0.1", help="a loopback address only (use an SSH tunnel for remote)")
    ap.add_argument("--no-browser", action="store_true", help="only print the URL")
    ap.add_argument("--dry-run", action="store_true", help="print the command it would run and exit")
    ap.add_argument("--mark-warm", action="store_true", help="record that `make warm` filled the caches")
    ap.add_argument("--cache-status", action="store_true", help="say whether the compile caches are warm")
    args = ap.parse_args(argv)
    return guarded("make present", lambda: _present(args))


def _present(args) -> int:
    if args.mark_warm:
        print(f"wrote {mark_warm()}")
        return 0
    if args.cache_status:
        warm, line = cache_status()
        print(line)
        return 0 if warm else 1
    # the Makefile passes PORT and PART as --port/--part: either way one parser says what is allowed
    args.port = get("PORT") if args.port is None else parse("PORT", args.port)
    args.part = get("PART") if args.part is None else parse("PART", args.part)
    p = plan(args.part, args.port, args.ip)
    if args.dry_run:
        print(" ".join(p.argv))
        print(f"JUPYTER_TOKEN=<{len(p.token)} characters> · {p.slideshow_url(with_token=False)}")
        return 0

    notice = cold_notice()
    if notice:
        print(notice, flush=True)
    problem = widgets_problem()
    if problem:
        print(f"WARNING: {problem}", flush=True)
    t0 = time.perf_counter()
    # every way the presenter leaves stops the server and its kernels: Ctrl-C, SIGTERM, SIGHUP
    for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if sig is not None:
            signal.signal(sig, _raise_stop)
    proc = start(p, log=None if get("DEMOS_PRESENT_QUIET") else sys.stderr)
    try:
        try:
            wait_ready(p, proc)
        except DemoError as exc:
            print(f"make present: {exc} (is port {p.port} taken? try `make present PORT=8890`)", file=sys.stderr)
            stop(proc)
            return 1
        url = p.slideshow_url()
        print("\n" + "=" * 72)
        print(f"Slideshow (part {args.part}) — server ready in {time.perf_counter() - t0:.1f} s:\n  {url}")
        print(f"JupyterLab (edit): {p.base_url()}lab/tree/{p.notebook}?token={p.token}")
        print("Keys: Space/→ next · Shift-Enter runs a live cell · , toggles controls · Ctrl-C here stops")
        print("=" * 72, flush=True)
        if not args.no_browser and _can_open_browser():
            webbrowser.open(url)
        while proc.poll() is None:
            time.sleep(0.5)
        return proc.returncode or 0
    except (KeyboardInterrupt, _Stop):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second signal must not cut the shutdown short
        print("\nstopping the Jupyter server…", flush=True)
        rc = stop(proc)
        print(f"stopped (exit {rc}).")
        return 0
    finally:
        if proc.poll() is None:
            stop(proc)


if __name__ == "__main__":
    sys.exit(main())
