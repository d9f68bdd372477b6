"""A real JupyterHub serving the deck on this machine, as a course's hub does (docs/course.md).

The hub loads the course's own config, ``docs/jupyterhub_config.py``, and adds only what a test
needs: JupyterHub's DummyAuthenticator for the named students, its SimpleLocalProcessSpawner (each
student's server a process on this machine, with a home folder of its own), loopback ports, and
the paths of this checkout. The proxy is configurable-http-proxy from ``node_modules/`` (pinned in
package.json). The students' servers run this checkout's Python.

The hub and everything it starts run in a mount namespace of their own where the checkout, and the
shared cache folder when one is given, are read-only bind mounts (``unshare``: root's own mount
namespace, or a user namespace that maps this user to root): a student's process that tried to
write there would get "Read-only file system", whoever it runs as, as in an image whose repository
is read-only. Where neither can be made, :func:`read_only` says so in one line.

Used by tests/test_hub.py and by ``python -m demos.deck.hubsize`` (the sizing table).
"""
from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from demos.engine.settings import PROJECT_ROOT
from demos.engine.errors import DemoError

COURSE_CONFIG = PROJECT_ROOT / "docs" / "jupyterhub_config.py"
PROXY = PROJECT_ROOT / "node_modules" / ".bin" / "configurable-http-proxy"
PASSWORD = "jit-deck-class"   # any password logs in to DummyAuthenticator; the students type this one
_MOUNT = ('for p in "$@"; do [ "$p" = -- ] && break; mount --bind "$p" "$p" && mount -o remount,bind,ro "$p" '
          '|| exit 97; done; while [ "$1" != -- ]; do shift; done; shift; exec "$@"')


def _unshare(as_root: bool) -> list[str]:
    base = ["unshare", "--mount", "--propagation", "private"]
    return base if as_root else ["unshare", "--user", "--map-root-user", "--mount", "--propagation", "private"]


def read_only(paths: list[Path], argv: list[str]) -> list[str]:
    """``argv`` run where every folder of ``paths`` is a read-only bind mount (a private mount
    namespace). DemoError, one line, where this machine cannot make one."""
    if shutil.which("unshare") is None:
        raise DemoError("`unshare` (util-linux) is missing: the hub cannot be started with a read-only repository")
    as_root = hasattr(os, "geteuid") and os.geteuid() == 0
    probe = subprocess.run(_unshare(as_root) + ["sh", "-c", _MOUNT, "sh", str(PROJECT_ROOT), "--", "true"],
                           capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        raise DemoError("this machine cannot make a read-only mount for the hub ("
                        + (probe.stderr.strip().splitlines() or ["unshare failed"])[-1] + ")")
    return _unshare(as_root) + ["sh", "-c", _MOUNT, "sh", *map(str, paths), "--", *argv]


def free_port() -> int:
    from demos.deck.present import free_port as port

    return port("127.0.0.1")


@dataclass
class Hub:
    """A running hub: its URL, an admin token for its REST API, and each student's home."""

    url: str
    workdir: Path
    users: tuple[str, ...]
    token: str
    proc: subprocess.Popen | None = None
    log: Path | None = None
    extra: dict = field(default_factory=dict)

    def home(self, user: str) -> Path:
        return self.workdir / "home" / user

    def api(self, path: str, method: str = "GET", body: dict | None = None) -> dict | list | None:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"{self.url}hub/api/{path}", data=data, method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=30) as r:
            text = r.read()
        return json.loads(text) if text else None

    def user_token(self, user: str) -> str:
        """A token for ``user``'s own server (its REST API: kernels, sessions)."""
        return self.api(f"users/{user}/tokens", "POST", {"note": "jit-deck test", "expires_in": 3600})["token"]

    def server(self, user: str) -> "UserServer":
        return UserServer(f"{self.url}user/{user}/", self.user_token(user))

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log and self.log.exists() else ""


@dataclass
class UserServer:
    """A student's single-user server as :mod:`demos.deck.walk`'s helpers address a server."""

    url: str
    token: str

    def base_url(self) -> str:
        return self.url


def local_config(workdir: Path, users: tuple[str, ...], port: int, token: str,
                shared_cache: Path | None = None) -> str:
    """The lines a test hub adds after the course's config (``COURSE_CONFIG``)."""
    singleuser = Path(sys.executable).parent / "jupyterhub-singleuser"
    env = {} if shared_cache is None else {"DEMOS_CACHE_DIR": str(shared_cache)}
    # the hub runs as root inside its mount namespace (root's own, or a user namespace that maps
    # this user to root: read_only), so the students' servers must be allowed to
    args = ["--allow-root"]
    return f"""
# -- added by demos.deck.hub for a hub on this machine (not for a course) ---------------------
c.JupyterHub.authenticator_class = "dummy"
c.Authenticator.allowed_users = {set(users)!r}
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = {str(workdir / "home" / "{username}")!r}
c.Spawner.environment.update({env!r})
c.Spawner.cmd = [{str(singleuser)!r}]
c.Spawner.args = c.Spawner.args + {args!r}
c.Spawner.start_timeout = 180
c.Spawner.http_timeout = 120
c.JupyterHub.bind_url = "http://127.0.0.1:{port}"
c.JupyterHub.hub_bind_url = "http://127.0.0.1:{free_port()}"
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{free_port()}"
c.ConfigurableHTTPProxy.command = [{str(PROXY)!r}]
c.JupyterHub.db_url = "sqlite:///{workdir / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = {str(workdir / "jupyterhub_cookie_secret")!r}
c.JupyterHub.pid_file = {str(workdir / "jupyterhub.pid")!r}
c.JupyterHub.cleanup_servers = True
c.JupyterHub.services = [{{"name": "jit-deck-test", "api_token": {token!r}}}]
c.JupyterHub.load_roles = [{{"name": "jit-deck-test", "scopes": ["read:hub", "admin:users", "admin:servers", "tokens",
                                                              "access:servers"],
                            "services": ["jit-deck-test"]}}]
"""


def hub_environment() -> dict[str, str]:
    """The hub's environment: this process's, less the deck's own settings (a student's server
    gets only what the config gives it), with JIT_DECK_DIR naming this checkout for the course's
    config."""
    env = {k: v for k, v in os.environ.copy().items()
           if not k.startswith(("DEMOS_", "JUPYTER", "TORCHINDUCTOR_", "PYTHONSTARTUP"))}
    env["JIT_DECK_DIR"] = str(PROJECT_ROOT)
    return env


def start(workdir: Path, users: tuple[str, ...] = ("alice", "bob"), shared_cache: Path | None = None,
          timeout_s: float = 90.0) -> Hub:
    """A hub on 127.0.0.1 at a free port, the checkout (and ``shared_cache``) read-only for it and
    everything it spawns; its log in ``workdir/hub.log``. Stop it with :func:`stop`."""
    if not PROXY.exists():
        raise DemoError(f"configurable-http-proxy is not installed ({PROXY}): run `npm ci`")
    hub_bin = Path(sys.executable).parent / "jupyterhub"
    if not hub_bin.exists():
        raise DemoError("jupyterhub is not installed in this Python: pip install -e '.[dev]'")
    workdir.mkdir(parents=True, exist_ok=True)
    if shared_cache is not None:
        shared_cache.mkdir(parents=True, exist_ok=True)
    for u in users:
        (workdir / "home" / u).mkdir(parents=True, exist_ok=True)
    port, token = free_port(), secrets.token_hex(24)
    config = workdir / "jupyterhub_config.py"
    config.write_text(COURSE_CONFIG.read_text() + local_config(workdir, users, port, token, shared_cache))
    ro = [PROJECT_ROOT] + ([shared_cache] if shared_cache is not None else [])
    argv = read_only(ro, [str(hub_bin), "-f", str(config)])
    log = workdir / "hub.log"
    with log.open("ab") as out:
        proc = subprocess.Popen(argv, cwd=workdir, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                env=hub_environment())
    hub = Hub(f"http://127.0.0.1:{port}/", workdir, users, token, proc, log)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout_s:
        if proc.poll() is not None:
            raise DemoError(f"the hub exited with code {proc.returncode}: " + hub.log_text()[-1500:])
        try:
            hub.api("info")
            hub.extra["ready_s"] = time.perf_counter() - t0
            return hub
        except (urllib.error.URLError, ConnectionError, OSError):
            time.sleep(0.3)
    stop(hub)
    raise DemoError(f"the hub did not answer within {timeout_s:.0f} s: " + hub.log_text()[-1500:])


def stop(hub: Hub, timeout_s: float = 30.0) -> None:
    """Stop every student's server, then the hub, its proxy and everything they started (the
    process group; SIGKILL after ``timeout_s``)."""
    import signal

    if hub.proc is None or hub.proc.poll() is not None:
        return
    for u in hub.users:
        try:
            hub.api(f"users/{u}/server", "DELETE")
        except (urllib.error.URLError, OSError):
            pass
    try:
        os.killpg(hub.proc.pid, signal.SIGTERM)
        hub.proc.wait(timeout=timeout_s)
    except (subprocess.TimeoutExpired, ProcessLookupError):
        pass
    try:
        os.killpg(hub.proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    hub.proc.wait(timeout=10)


@contextlib.contextmanager
def student_browsers(n: int) -> Iterator[list]:
    """``n`` browser contexts of one headless Debian chromium, each with its own cookies, as
    ``n`` students on their own laptops; each records its console errors and failed requests
    (``ctx.console``, :func:`demos.deck.walk.watch_console`)."""
    from demos.deck.printing import CHROMIUM_ARGS, chromium_path
    from demos.deck.walk import SLIDE_H, SLIDE_W, watch_console

    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        raise DemoError("Playwright for Python is missing: pip install -e '.[dev]'") from exc
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS)
        try:
            ctxs = []
            for _ in range(n):
                ctx = browser.new_context(viewport={"width": SLIDE_W, "height": SLIDE_H})
                ctx.console = []
                watch_console(ctx, ctx.console, {})
                ctxs.append(ctx)
            yield ctxs
        finally:
            browser.close()


def login(ctx, hub: Hub, user: str, timeout_s: float = 180.0):
    """``user`` logs in through the hub's login page in a page of ``ctx``, and lands on their
    server's default URL (part 1's slideshow): returns (page, seconds from the login click to the
    first slide on screen)."""
    from demos.deck.walk import SLIDE_H, SLIDE_W

    page = ctx.new_page()
    page.set_viewport_size({"width": SLIDE_W, "height": SLIDE_H})
    page.goto(f"{hub.url}hub/login", timeout=timeout_s * 1000)
    page.fill("input[name=username]", user)
    page.fill("input[name=password]", PASSWORD)
    t0 = time.perf_counter()
    page.click("#login_submit, input[type=submit], button[type=submit]")
    page.wait_for_selector(".reveal .slides section.present .jp-Cell", timeout=timeout_s * 1000)
    return page, time.perf_counter() - t0
