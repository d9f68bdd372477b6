"""The declared state every measurement starts from, in one place.

The protocol is a training loop's steady state, measured the same way in a presenter's kernel,
in ``make warm``/``check``/``record`` and in the tests:

1. **Fresh compile state.** A demo compiles its own copy of a function (:func:`fresh_function`:
   a new code object, so Dynamo's per-code caches and recompile limits are its own), and Dynamo's
   counters are reset before it measures. :func:`forget_all` drops every piece of per-process
   state the engine keeps (every cache registered with :func:`engine_cache`) and Dynamo's in-memory
   caches: only compiled code in the persistent on-disk caches (what ``make warm`` fills)
   carries over. ``Demo.forget()`` (the Run button, a re-executed live cell) calls it.
2. **Allocator in steady state.** glibc serves each new buffer of ≥ 128 KiB by ``mmap`` and
   returns it on ``free``, so eager torch pays a page fault per 4 KiB page of every intermediate
   until the dynamic threshold happens to rise: the same chain ran 15 ms in a fresh process and
   5.7 ms once warm (1 thread, 2^20 floats). :func:`steady_allocator` (called at ``import demos``)
   keeps buffers up to 32 MiB on the heap and trims it only beyond 64 MiB, which is where a training loop's
   allocator ends up after its first step; first calls are still timed apart.
3. **Threads from what the machine offers.** On 2 cores, a second busy process makes each of
   torch's parallel regions wait for a descheduled worker (~8 ms, a scheduler timeslice). At the
   first measurement from the declared state :func:`choose_threads` reads how much CPU other
   processes used (``/proc/stat`` minus this process) and gives torch no more threads than are
   free; Inductor's C++ follows the same count at run time (``TORCHINDUCTOR_CPP_DYNAMIC_THREADS=1``,
   set by ``demos.engine.env``). The count is then held until ``forget_all`` (Run, a re-executed
   cell): Dynamo guards compiled code on torch's thread count, so changing it between two calls
   recompiles, and recompile counts are exact claims.
   ``DEMOS_THREADS`` fixes the count instead. :class:`Conditions` says afterwards which policy ran
   and whether other processes took the cores while it measured; the panel's status line and the
   figure's stamp say so.
4. **On a GPU, who else holds it.** Before and after each measurement, NVML names the other
   processes on the GPU and how busy it was while this process idled
   (:mod:`demos.engine.gpu_share`); the stamp says so, "GPU sharing unknown" where NVML cannot
   tell, and the status line warns when the GPU was shared.

Nothing here imports torch at module level.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import time
import types
from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterator

# =======================================================================================
# 1. Per-process state: every cache a demo keeps is registered here, and cleared together
# =======================================================================================
_CACHES: dict[str, Any] = {}


def engine_cache(name: str, container: Any) -> Any:
    """Register a cache of the engine's (anything with ``.clear()``) under ``name``; returns it.

    ``forget_all()`` empties every registered cache, so a Run or a re-executed cell measures
    again instead of returning something an earlier measurement left behind. A demo's own memory
    is ``run.cache`` (:mod:`demos.engine.measurement`); this is for what the engine shares across
    demos (inputs, compiled workloads, the machine's measured peaks)."""
    if not hasattr(container, "clear") and not hasattr(container, "cache_clear"):
        raise TypeError(f"{name}: an engine cache needs .clear() (or an lru_cache's .cache_clear())")
    _CACHES[name] = container
    return container


def cache_names() -> list[str]:
    return sorted(_CACHES)


def cached_entries() -> int:
    """How many entries the registered caches hold (0 right after ``forget_all``)."""
    return sum(len(c) if hasattr(c, "__len__") else c.cache_info().currsize for c in _CACHES.values())


def forget_all() -> None:
    """Back to the declared state: every registered cache emptied, Dynamo's in-memory caches and
    counters reset. The persistent compile caches on disk are kept."""
    for c in _CACHES.values():
        (c.clear if hasattr(c, "clear") else c.cache_clear)()
    reset_policy()
    reset_dynamo()
    reset_jax()


def reset_jax() -> None:
    """JAX's in-memory executables dropped (the persistent cache on disk stays); no-op without JAX."""
    import sys

    if "jax" not in sys.modules:
        return
    try:
        sys.modules["jax"].clear_caches()
    except Exception:  # noqa: BLE001
        pass


def reset_dynamo() -> None:
    """Dynamo's in-memory caches and counters, reset (no-op without torch)."""
    import sys

    if "torch" not in sys.modules:
        return
    try:
        import torch._dynamo

        torch._dynamo.reset()
    except Exception:  # noqa: BLE001 - an old or broken torch: nothing to reset
        pass


def reset_counters() -> None:
    """Dynamo's counters (graph breaks, unique graphs, …) zeroed before a measurement."""
    import sys

    if "torch" not in sys.modules:
        return
    try:
        from torch._dynamo.utils import counters

        counters.clear()
    except Exception:  # noqa: BLE001
        pass


_FRESH = [0]


def _calling(target: Callable) -> types.FunctionType:
    """A Python function that calls ``target``, named after it (``gelu`` for ``F.gelu``)."""
    def call(*args, **kwargs):
        return target(*args, **kwargs)

    name = getattr(target, "__name__", None) or type(target).__name__
    call.__name__ = call.__qualname__ = name if name.isidentifier() else "call"
    call.__doc__ = getattr(target, "__doc__", None)
    return call


def fresh_function(fn: Callable, tag: str = "") -> Callable:
    """``fn`` with a new code object of its own name (``<name>_<tag>``, a fresh numbered tag when
    none is given). Dynamo keeps compiled code, guards and the recompile budget per code object,
    and its automatic-dynamic state per (file, line, *name*): a copy that kept the name would
    inherit another copy's "this dimension varies" and compile dynamic from its first call. The
    persistent Inductor cache still matches (it keys on the graph, not the name).

    The one helper for this: every demo that compiles a function of its own goes through it.
    A callable with no code of its own (a builtin such as ``F.gelu``, a module, a partial) is
    called from a fresh Python function of its name."""
    if isinstance(fn, types.MethodType):
        return types.MethodType(fresh_function(fn.__func__, tag), fn.__self__)
    if not isinstance(fn, types.FunctionType):
        if not callable(fn):
            raise TypeError(f"fresh_function needs a callable, not {type(fn).__name__}")
        fn = _calling(fn)
    if not tag:
        _FRESH[0] += 1
        tag = f"fresh{_FRESH[0]}"
    name = f"{fn.__name__}_{tag}"
    code = fn.__code__.replace(co_name=name)
    g = types.FunctionType(code, fn.__globals__, name, fn.__defaults__, fn.__closure__)
    g.__kwdefaults__ = fn.__kwdefaults__
    g.__dict__.update(fn.__dict__)
    g.__wrapped_original__ = fn
    g.__qualname__ = fn.__qualname__
    g.__module__ = fn.__module__
    g.__doc__ = fn.__doc__
    return g


# =======================================================================================
# 2. The allocator
# =======================================================================================
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
STEADY_MMAP_BYTES = 32 * 2**20   # glibc's largest allowed mmap threshold on 64-bit
# Free memory above this at the heap's top goes back to the OS: the heap keeps enough for a step's
# intermediates, and a buffer of 64 MiB or more always gets fresh pages (a request the top could
# serve bypasses the mmap threshold), so the top of part 1's sweep compares like with like.
STEADY_TRIM_BYTES = 64 * 2**20
_ALLOCATOR: dict[str, Any] = {"policy": "default"}


def steady_allocator() -> str:
    """Keep freed buffers up to 32 MiB in the heap and trim only beyond 64 MiB (glibc ``mallopt``), so
    eager's intermediates are reused as in a training loop's steady state instead of page-faulting
    anew each call. Returns the policy in force ("steady" or why not). ``DEMOS_ALLOCATOR=default``
    leaves glibc's defaults (to show the difference)."""
    if _ALLOCATOR["policy"] != "default":
        return _ALLOCATOR["policy"]
    from demos.engine.settings import SettingError, get

    try:
        wanted = get("DEMOS_ALLOCATOR")
    except SettingError:  # import time: `python -m demos …` names the bad value before any work
        wanted = "steady"
    if wanted == "default":
        _ALLOCATOR["policy"] = "glibc defaults (DEMOS_ALLOCATOR=default)"
        return _ALLOCATOR["policy"]
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        _ALLOCATOR["policy"] = "the platform's (no glibc)"
        return _ALLOCATOR["policy"]
    ok = mallopt(_M_MMAP_THRESHOLD, STEADY_MMAP_BYTES) == 1 and mallopt(_M_TRIM_THRESHOLD, STEADY_TRIM_BYTES) == 1
    _ALLOCATOR["policy"] = "steady" if ok else "glibc defaults (mallopt refused)"
    return _ALLOCATOR["policy"]


def allocator_policy() -> str:
    return _ALLOCATOR["policy"]


# =======================================================================================
# 3. Cores: who else is using them, and how many threads to use
# =======================================================================================
def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _ticks() -> float:
    return float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0


def _cpu_snapshot() -> tuple[float, float, float] | None:
    """(wall seconds, busy CPU-seconds of the whole machine, CPU-seconds of this process), or
    None off Linux. Busy counts steal time: a core the hypervisor gave away is not free."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()[1:]
        with open("/proc/self/stat") as f:
            own = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    vals = [float(x) for x in fields]
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0.0)       # idle + iowait
    busy = sum(vals[:8]) - idle                                 # user…steal, without guest (counted in user)
    # utime + stime of every thread, and of the children this process waited for (a cold compile
    # measured in a fresh process is this measurement's own work, not another process's load)
    mine = sum(float(x) for x in own[11:15]) + _helpers_ticks()
    hz = _ticks()
    return time.monotonic(), busy / hz, mine / hz


# Processes that work for this one without being its waited-for children: a worker kept warm between
# jobs (demos.engine.worker) measures on this process's behalf, so its CPU is this process's, not
# another's load. pid -> its last CPU ticks read (kept after it exits, so a kill is no negative load).
_HELPERS: dict[int, float] = {}


def own_helper(pid: int) -> None:
    """Count ``pid``'s CPU (and its waited children's) as this process's own from now on."""
    _HELPERS.setdefault(pid, 0.0)
    _helpers_ticks()


def _helpers_ticks() -> float:
    for pid in list(_HELPERS):
        try:
            with open(f"/proc/{pid}/stat") as f:
                _HELPERS[pid] = sum(float(x) for x in f.read().rsplit(")", 1)[1].split()[11:15])
        except (OSError, IndexError, ValueError):
            pass  # gone: its last reading stands
    return sum(_HELPERS.values())


def others_busy(since: tuple[float, float, float] | None, now: tuple[float, float, float] | None = None) -> float | None:
    """Cores' worth of CPU that other processes used between two snapshots (None: unknown)."""
    now = now or _cpu_snapshot()
    if since is None or now is None or now[0] - since[0] < 0.02:
        return None
    wall = now[0] - since[0]
    return max(0.0, ((now[1] - since[1]) - (now[2] - since[2])) / wall)


_LAST_SNAPSHOT: list = [None]
BUSY_CORE = 0.5   # another process using over half a core makes a 2-core parallel timing wait


def load_now(window_s: float = 0.1, fresh: bool = False) -> float | None:
    """Other processes' CPU use (in cores) over the last moments: since the previous reading when
    that was between ``window_s`` and 2 s ago (free), else over a fresh ``window_s`` sample; with
    ``fresh``, always a window of at least ``window_s`` (what choosing a policy needs)."""
    prev = _LAST_SNAPSHOT[0]
    age = time.monotonic() - prev[0] if prev is not None else None
    if age is None or age > 2.0 or (fresh and age < window_s):
        prev = _cpu_snapshot()
        time.sleep(window_s)
    now = _cpu_snapshot()
    _LAST_SNAPSHOT[0] = now
    return others_busy(prev, now)


def fixed_threads() -> int | None:
    """``DEMOS_THREADS`` when set (a whole number ≥ 1), else None."""
    from demos.engine.settings import get

    return get("DEMOS_THREADS")  # a malformed value is one line naming it (SettingError)


def threads_for(others: float | None, n_cores: int | None = None) -> int:
    """No more threads than cores free: other processes' load rounded so that a process using over
    a quarter of a core takes that core (``cores - others + 0.25``, floored, at least 1)."""
    n_cores = n_cores or cores()
    if others is None:
        return n_cores
    return max(1, min(n_cores, int(n_cores - others + 0.25)))


# The policy in force: (threads, why). Chosen at the first measurement from the declared state and
# held until the next ``forget_all()``: Dynamo guards compiled code on torch's thread count, so a
# count that followed every flicker of the load would recompile (and spend the recompile limit).
_POLICY: list[tuple[int, str] | None] = [None]


def policy_threads() -> int:
    """The thread count in force: ``DEMOS_THREADS``, else the policy chosen, else all cores."""
    return fixed_threads() or (_POLICY[0][0] if _POLICY[0] else cores())


def reset_policy() -> None:
    """Choose the threads again at the next measurement (``forget_all`` does this)."""
    _POLICY[0] = None


@dataclass
class Conditions:
    """How a measurement ran: the thread policy, and whether others took the cores meanwhile."""

    threads: int
    cores: int
    policy: str                      # "all cores free", "1 of 2 cores busy elsewhere", "DEMOS_THREADS=1"
    others_before: float | None      # cores' worth used by other processes just before
    others_during: float | None = None
    allocator: str = "steady"
    seconds: float | None = None
    gpu: str | None = None           # on a GPU: who else held it (demos.engine.gpu_share), or "… unknown"
    gpu_busy: bool = False           # others held or used the GPU around this measurement

    @property
    def cores_busy(self) -> bool:
        """Other processes used more of the cores than the policy left them."""
        return self.others_during is not None and self.others_during + self.threads > self.cores + BUSY_CORE

    @property
    def reliable(self) -> bool:
        """False when other processes took the cores the policy left them, or shared the GPU."""
        return not (self.cores_busy or self.gpu_busy)

    def stamp(self) -> str:
        """The thread policy a figure's stamp names, and, where others took the cores while it
        measured, that they did (the figure says so on its own, a slide or an export away from
        its status line)."""
        return (f"{self.threads} of {self.cores} threads ({self.policy})"
                + (f" · ⚠ cores shared: other processes used {self.others_during:.1f} of {self.cores} while "
                   "it measured" if self.cores_busy else "")
                + (f" · allocator: {self.allocator}" if self.allocator != "steady" else "")
                + (f" · {self.gpu}" if self.gpu else ""))

    def warning(self) -> str:
        """One line for the panel's status when timings are unreliable ('' when they are fine)."""
        if self.reliable:
            return ""
        why = []
        if self.cores_busy:
            why.append(f"other processes used {self.others_during:.1f} of {self.cores} cores while this measured "
                       f"on {self.threads} thread{'s' if self.threads != 1 else ''}")
        if self.gpu_busy:
            why.append(f"{self.gpu} while this measured")
        return "; ".join(why) + ": timings may be inflated — close them and press Run or move a control"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["reliable"] = self.reliable
        return d


def choose_threads() -> Conditions:
    """Set torch's intra-op threads for the next measurement: from the load when no policy is in
    force (the first measurement, or the first after ``forget_all``), else the policy held."""
    import sys

    n_cores = cores()
    fixed = fixed_threads()
    others = load_now(fresh=fixed is None and _POLICY[0] is None)
    if fixed is not None:
        n, policy = fixed, f"DEMOS_THREADS={fixed}"
    elif _POLICY[0] is not None:
        n, policy = _POLICY[0]
    else:
        n = threads_for(others, n_cores)
        busy = n_cores - n
        policy = ("load unknown without /proc: all cores used" if others is None else
                  "all cores free" if busy == 0 else f"{busy} of {n_cores} cores busy elsewhere")
        _POLICY[0] = (n, policy)
    torch = sys.modules.get("torch")
    if torch is not None and torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return Conditions(n, n_cores, policy, others, allocator=allocator_policy())


@contextlib.contextmanager
def declared_state() -> Iterator[Conditions]:
    """Around one measurement: threads chosen, Dynamo's counters zeroed; afterwards the
    conditions say how much other processes used the cores while it ran."""
    cond = choose_threads()
    reset_counters()
    gpu_before = gpu_reading()  # this process idle: utilisation now is someone else's
    t0 = time.monotonic()
    start = _cpu_snapshot()
    try:
        yield cond
    finally:
        end = _cpu_snapshot()
        _LAST_SNAPSHOT[0] = end
        cond.seconds = time.monotonic() - t0
        cond.others_during = others_busy(start, end)
        if gpu_before is not None:
            after = gpu_reading() or gpu_before
            shown = after if after.known and after.others > gpu_before.others else gpu_before
            cond.gpu, cond.gpu_busy = shown.text(), gpu_before.busy or (after.known and after.others > 0)


def gpu_reading():
    """Who else holds the GPU (:func:`demos.engine.gpu_share.read`), when this process measures on
    one (torch has started CUDA); None otherwise."""
    import sys

    torch = sys.modules.get("torch")
    try:
        on_gpu = torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized()
    except Exception:
        on_gpu = False
    if not on_gpu:
        return None
    from demos.engine.gpu_share import read

    return read()


def parallel_probe(reps: int = 7) -> dict[str, float] | None:
    """Time a tiny parallel torch op (an add over 2^18 floats): tens of µs when the cores are free,
    a scheduler timeslice (~8 ms) when a worker thread waits for a core. None without torch."""
    import statistics
    import sys

    torch = sys.modules.get("torch")
    if torch is None:
        return None
    x = torch.ones(2**18)
    out = torch.empty_like(x)
    torch.add(x, 1.0, out=out)
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        torch.add(x, 1.0, out=out)
        samples.append(time.perf_counter() - t0)
    return {"median_s": statistics.median(samples), "max_s": max(samples), "threads": torch.get_num_threads()}
