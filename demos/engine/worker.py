"""Run a job in a separate Python process with a time limit and a memory cap, kept warm between jobs.

Code a student types can loop forever, unroll a loop for minutes while tracing, or allocate the
machine's memory. :class:`Worker` runs such work in a child process (``python -m
demos.engine.worker``) that imports torch and JAX once and then serves jobs: ``call(module,
function, kwargs)`` imports ``module``, calls ``function(**kwargs, progress=…)`` there and returns
its JSON-able result. While waiting, the parent polls the child:

- past ``timeout_s`` the child's whole process group (compilers included) is killed and the call
  raises one line; the next call starts a new child, so no half-built compile state survives;
- above ``memory_bytes`` of resident memory (Linux ``/proc``) the same;
- a child that dies (a segfault, ``os._exit``) raises one line with the last line it wrote to stderr.

The protocol is one JSON object per line on the child's stdout; the job's own prints go to its
stderr file, never into the protocol. Progress lines reach the caller's ``progress(fraction,
message)`` as they come.
"""
from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

from demos.engine.errors import DemoError

PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def default_memory_bytes() -> int:
    """Half the memory available now, at most 8 GiB (4 GiB when it cannot be read)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return min(8 * 2**30, int(line.split()[1]) * 1024 // 2)
    except OSError:
        pass
    return 4 * 2**30


def rss_bytes(pid: int) -> int | None:
    """Resident memory of ``pid`` (None where /proc cannot say)."""
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
    except (OSError, ValueError, IndexError):
        return None


MIN_STAGE_S = 3.0  # a limited stage runs at least this long, however late it started
WHERE_SIGNAL = getattr(signal, "SIGUSR1", None)  # asks the child for its stack (faulthandler), before a stop


class StageStopped(DemoError):
    """A limited stage did not end in time; ``line`` is where the job was in ``locate`` (or None)."""

    def __init__(self, what: str, seconds: float, line: int | None, code: str | None = None):
        self.what, self.seconds, self.line = what, seconds, line
        at = "" if line is None else f" It was at line {line}" + (f": `{code}`" if code else "") + "."
        super().__init__(f"stopped: {what} had not returned within {seconds:.0f} s (an endless loop?).{at} "
                         "The worker was restarted with a clean compile state")

    def with_code(self, lines: list[str]) -> "StageStopped":
        """The same line, quoting the source line it was at."""
        code = lines[self.line - 1].strip() if self.line and 0 < self.line <= len(lines) else None
        return StageStopped(self.what, self.seconds, self.line, code)


class Worker:
    """A child process serving jobs (see the module docstring). ``preload`` names modules the
    child imports before it says it is ready (their import is not charged to the first job)."""

    def __init__(self, preload: tuple[str, ...] = (), env: dict[str, str] | None = None):
        self.preload = preload
        self.env = env
        self.proc: subprocess.Popen | None = None
        self.starts = 0
        self.start_s: float | None = None
        self._err = None
        self._buf = b""
        self._starting: threading.Thread | None = None
        self.cancelled = threading.Event()  # set by cancel() (a panel's Stop button, from another thread)

    # -- the child ---------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        """The child runs (once a start in the background has finished)."""
        self._wait_started()
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout_s: float = 180.0) -> float:
        """Start the child and wait until it has imported ``preload``; returns the seconds it took."""
        self.stop()
        t0 = time.perf_counter()
        self._err = tempfile.TemporaryFile()
        env = dict(os.environ, **(self.env or {}))
        env["PYTHONUNBUFFERED"] = "1"
        self.proc = subprocess.Popen([sys.executable, "-m", "demos.engine.worker", *self.preload],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err,
                                     env=env, start_new_session=True)
        self._buf = b""
        self.starts += 1
        from demos.engine.protocol import own_helper

        own_helper(self.proc.pid)  # its CPU is this process's work, not another's load
        msg = self._read(timeout_s, memory_bytes=None, progress=None)
        if not msg.get("ready"):
            self.stop()
            raise DemoError(f"the worker process did not start ({msg.get('error', 'no reply')})")
        self.start_s = time.perf_counter() - t0
        return self.start_s

    def start_in_background(self, then: Callable[["Worker"], Any] | None = None) -> None:
        """Start the child, then ``then(self)`` (a warm-up job), in a thread while the caller goes
        on (a slide that opens on `make warm`'s result); the next job waits for what is left of it.
        A failed start is left for the next job, which starts it again and says why."""
        if (self._starting is not None and self._starting.is_alive()) or self.alive:
            return
        self.cancelled.clear()  # a Stop pressed before is no reason not to start now

        def go() -> None:
            try:
                self.start()
                if then is not None:
                    then(self)
            except Exception:  # noqa: BLE001 - said by the next job's own start
                self.stop()

        self._starting = threading.Thread(target=go, name="worker-start", daemon=True)
        self._starting.start()

    def _wait_started(self) -> None:
        """Wait for a start in the background to finish (not from its own thread)."""
        t = self._starting
        if t is not None and t is not threading.current_thread():
            t.join()
            self._starting = None

    def stop(self) -> None:
        """Kill the child and everything it started (compilers), if it runs."""
        if self.proc is not None:
            if self.proc.poll() is None:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover
                pass
            for f in (self.proc.stdin, self.proc.stdout):
                try:
                    f.close()
                except Exception:
                    pass
        self.proc = None

    def where(self, filename: str, wait_s: float = 1.0) -> int | None:
        """The line of ``filename`` (a prefix: "<your code" matches "<your code #3>") the child is
        running now (its innermost frame there), read from the stack the child's faulthandler
        writes to its stderr on ``WHERE_SIGNAL``; None if it does not say within ``wait_s``."""
        if WHERE_SIGNAL is None or self.proc is None or self._err is None or self.proc.poll() is not None:
            return None
        try:
            self._err.seek(0, os.SEEK_END)
            start = self._err.tell()
            os.kill(self.proc.pid, WHERE_SIGNAL)
        except OSError:
            return None
        pattern = re.compile(r'File "' + re.escape(filename) + r'[^"]*", line (\d+)')
        end = time.monotonic() + wait_s
        while time.monotonic() < end:
            time.sleep(0.05)
            self._err.seek(start)
            text = self._err.read().decode("utf-8", "replace")
            for ln in text.splitlines(keepends=True):  # whole lines only: the dump may be half written
                m = pattern.search(ln)
                if m and ln.endswith("\n"):
                    return int(m.group(1))
        return None

    def cancel(self) -> None:
        """Stop the job under way from another thread (a panel's Stop button): the job kills the
        child at its next check, within 0.1 s, says so in one line and clears the flag (a panel
        also clears it as its Run starts and ends: a Stop pressed outside a job ends none)."""
        self.cancelled.set()

    def _last_stderr(self) -> str:
        if self._err is None:
            return ""
        try:
            self._err.seek(0)
            lines = [ln.strip() for ln in self._err.read().decode("utf-8", "replace").splitlines() if ln.strip()]
        except OSError:
            return ""
        return lines[-1][:200] if lines else ""

    # -- a job -------------------------------------------------------------------------
    def call(self, module: str, function: str, kwargs: dict[str, Any], timeout_s: float = 120.0,
             memory_bytes: int | None = None, progress: Callable[[float, str], None] | None = None,
             stage_limits: dict[str, tuple[float, str]] | None = None, begun: float | None = None,
             locate: str | None = None) -> Any:
        """``module.function(**kwargs)`` in the child; its result, or DemoError in one line.
        ``stage_limits``: {a progress message's start: (seconds, what it is, in words)}: a stage
        the job reports must reach its next progress message by ``begun`` (``time.monotonic()`` of
        the Run; this call's start by default) plus its seconds, and at least ``MIN_STAGE_S`` after
        it began. An endless loop is stopped there, not at ``timeout_s``; the seconds left are
        reported as it waits, and the stop says at which line of the file ``locate`` it was."""
        begun = time.monotonic() if begun is None else begun
        if not self.alive:
            self.start()
        request = json.dumps({"module": module, "function": function, "kwargs": kwargs}) + "\n"
        try:
            self.proc.stdin.write(request.encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self.stop()
            raise DemoError("the worker process had stopped; press Run again") from None
        msg = self._read(timeout_s, memory_bytes or default_memory_bytes(), progress, stage_limits or {},
                         begun, locate)
        if msg.get("ok"):
            return msg.get("result")
        raise DemoError(msg.get("error") or "the job failed")

    def _read(self, timeout_s: float, memory_bytes: int | None, progress,
              stage_limits: dict[str, tuple[float, str]] | None = None, begun: float | None = None,
              locate: str | None = None) -> dict[str, Any]:
        """The next result line, passing progress lines on; kills the child past the limits."""
        t0 = time.monotonic()
        begun = t0 if begun is None else begun
        deadline = t0 + timeout_s
        fd = self.proc.stdout.fileno()
        stage = None  # (fraction, message, what, its deadline) of a limited stage under way
        told = 0.0
        while True:
            while b"\n" in self._buf:
                line, self._buf = self._buf.split(b"\n", 1)
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue
                if "progress" in msg:
                    frac, text = float(msg["progress"]), str(msg.get("message", ""))
                    limit = next((v for k, v in (stage_limits or {}).items() if text.startswith(k)), None)
                    now = time.monotonic()
                    stage = (frac, text, limit[1], max(now + MIN_STAGE_S, begun + limit[0])) if limit else None
                    if progress is not None:
                        progress(frac, text)
                    continue
                return msg
            now = time.monotonic()
            if self.cancelled.is_set():
                self.cancelled.clear()  # one Stop ends one job
                self.stop()
                raise DemoError(f"stopped after {now - t0:.0f} s (Stop); the next Run starts a fresh worker")
            if stage is not None and now > stage[3]:
                line = self.where(locate) if locate else None
                self.stop()
                raise StageStopped(stage[2], time.monotonic() - begun, line)
            if stage is not None and progress is not None and now - told >= 1.0:
                progress(stage[0], f"{stage[1]} (stopped in {stage[3] - now:.0f} s if it does not return)")
                told = now
            if now > deadline:
                self.stop()
                raise DemoError(f"stopped after {timeout_s:.0f} s without an answer (an endless loop, or a "
                                "loop unrolled while tracing?); the worker was restarted with a clean compile state")
            if memory_bytes is not None:
                rss = rss_bytes(self.proc.pid)
                if rss is not None and rss > memory_bytes:
                    self.stop()
                    raise DemoError(f"stopped: it used over {memory_bytes / 2**30:.1f} GiB of memory; the worker "
                                    "was restarted (choose a smaller shape)")
            ready, _, _ = select.select([fd], [], [], min(0.1, max(0.0, deadline - now)))
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    code = self.proc.wait()
                    last = self._last_stderr()
                    self.stop()
                    how = f"signal {-code}" if code < 0 else f"exit code {code}"
                    raise DemoError(f"the worker process died ({how}{': ' + last if last else ''}); "
                                    "it restarts on the next Run")
                self._buf += chunk


def fresh_json(module: str, arg: str, env: dict[str, str], timeout: float, *, slow: str, failed: str) -> dict[str, Any]:
    """``python -m module arg`` in a fresh interpreter, from the project's root with the project on
    its path and ``env`` over this process's environment (``DEMOS_STATIC`` dropped: it measures);
    the last JSON object it printed. A measurement that must start from nothing (empty compile
    caches, a device count fixed as JAX starts) runs this way. One line on failure: ``slow`` past
    ``timeout`` seconds, ``failed: <its last stderr line>`` otherwise."""
    from demos.engine.settings import PROJECT_ROOT

    full = dict(os.environ, **env)
    full.pop("DEMOS_STATIC", None)
    full["PYTHONPATH"] = str(PROJECT_ROOT) + os.pathsep + full.get("PYTHONPATH", "")
    try:
        proc = subprocess.run([sys.executable, "-m", module, arg], capture_output=True, text=True, timeout=timeout,
                              env=full, cwd=str(PROJECT_ROOT))
    except subprocess.TimeoutExpired:
        raise DemoError(slow) from None
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        err = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise DemoError(f"{failed}: {err[:200]}")
    return json.loads(lines[-1])


def json_child(module: str, argv: list[str], measure: Callable[[dict[str, Any]], dict[str, Any]]) -> int:
    """The other end of :func:`fresh_json`, a module's ``__main__``: ``measure`` the JSON spec in
    ``argv`` and print its result as one JSON line; a DemoError is one line on stderr (exit 1)."""
    if len(argv) != 1:
        print(f"usage: python -m {module} SPEC  (SPEC: JSON, see the module docstring)", file=sys.stderr)
        return 2
    try:
        out = measure(json.loads(argv[0]))
    except DemoError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
    return 0


# =======================================================================================
# The child
# =======================================================================================
_SHARED: dict[tuple[str, ...], Worker] = {}


def shared_worker(preload: list[str]) -> Worker:
    """This process's one worker for ``preload`` (started on first use, kept warm between jobs:
    a worker is process state of the engine's, not a measurement's cache, so ``forget`` keeps it)."""
    key = tuple(preload)
    if key not in _SHARED:
        _SHARED[key] = Worker(preload=key)
    return _SHARED[key]


def _serve(preload: list[str]) -> None:  # pragma: no cover - runs in the child (tested through Worker)
    import importlib

    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # the jobs' prints (Python's and C's) go to stderr, never into the protocol
    sys.stdout = sys.stderr

    def send(obj: dict) -> None:
        proto.write(json.dumps(obj, default=str) + "\n")
        proto.flush()

    if WHERE_SIGNAL is not None:  # the parent asks where a job is before it stops it (Worker.where)
        import faulthandler

        faulthandler.register(WHERE_SIGNAL, file=sys.stderr, all_threads=False)
    try:
        # `python -m demos.engine.worker` imported the package `demos` first: the environment is set
        # before torch/JAX start
        for name in preload:
            importlib.import_module(name)
    except Exception as exc:
        send({"ready": False, "error": f"{type(exc).__name__}: {exc}"})
        return
    send({"ready": True})
    from demos.engine.errors import one_line

    for line in sys.stdin:
        try:
            req = json.loads(line)
            fn = getattr(importlib.import_module(req["module"]), req["function"])
            result = fn(**req.get("kwargs", {}), progress=lambda f, m="": send({"progress": f, "message": m}))
            send({"ok": True, "result": result})
        except Exception as exc:
            send({"ok": False, "error": one_line(exc)})


if __name__ == "__main__":  # pragma: no cover
    _serve(sys.argv[1:])
