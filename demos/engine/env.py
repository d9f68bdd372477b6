"""Environment that must be set before torch or JAX initialise."""
from __future__ import annotations

import os
import re
from pathlib import Path

from demos.engine.settings import PROJECT_ROOT, at_import, get, raw

# Packages whose version changes what the deck measures or compiles.
VERSIONED = ("torch", "jax", "jaxlib")
_ISAS = ("default", "avx2", "avx512")  # torch's x86 CPU capabilities, weakest first


# Instruction-set extensions among /proc/cpuinfo's flags (x86; an Arm server's "Features" are all
# such): what the C++ Inductor compiles with -march=native may use, whatever ISA torch is capped to.
_EXTENSION = re.compile(r"^(pni|sse|ssse|avx|amx|fma|f16c|bmi|adx|aes|vaes|pclmul|vpclmul|gfni|sha|popcnt|abm|"
                        r"movbe|movdir|xsave|rdrand|rdseed|clflushopt|clwb|cx16|3dnowprefetch|serialize|"
                        r"waitpkg|cldemote|xop|tbm|clzero|mwaitx|rdpid)")


def _proc_cpuinfo() -> str:
    global _CPUINFO
    if _CPUINFO is None:
        try:
            _CPUINFO = Path("/proc/cpuinfo").read_text()
        except OSError:
            _CPUINFO = ""
    return _CPUINFO


_CPUINFO: str | None = None


def _cpuinfo_words(key: str, cpuinfo: str | None = None) -> set[str]:
    """The words of /proc/cpuinfo's ``key`` lines ("flags" on x86, "Features" on Arm); none elsewhere."""
    if cpuinfo is None:
        cpuinfo = _proc_cpuinfo()
    words: set[str] = set()
    for line in cpuinfo.splitlines():
        if line.lower().startswith(key.lower()):
            words.update(line.split(":", 1)[-1].split())
    return words


def cpu_isa(cpuinfo: str | None = None) -> str:
    """The vector ISA torch's CPU kernels run with here, as ``torch.backends.cpu.get_cpu_capability()``
    says it, read without importing torch (the presenter's server never imports it): the CPU's
    flags (AVX512 needs avx512f/vl/bw/dq, AVX2 needs avx2 and fma), capped by ATEN_CPU_CAPABILITY
    as torch reads it: exactly "default", "avx2" or "avx512" (torch ignores "AVX2" and runs the
    CPU's ISA). Off x86 (a Mac, an Arm server): the machine's name, and ATEN_CPU_CAPABILITY's
    value when set."""
    import platform

    flags = _cpuinfo_words("flags", cpuinfo)
    cap = raw("ATEN_CPU_CAPABILITY") or ""  # unstripped: compared as torch compares it (strcmp)
    if not flags:
        return (platform.machine().lower() or "unknown") + (f"-{cap}" if cap else "")
    hw = ("avx512" if {"avx512f", "avx512vl", "avx512bw", "avx512dq"} <= flags
          else "avx2" if {"avx2", "fma"} <= flags else "default")
    if cap in _ISAS:  # a cap above the CPU's ISA: Inductor keeps to the CPU's
        return _ISAS[min(_ISAS.index(cap), _ISAS.index(hw))]
    return hw


def cpu_extensions(cpuinfo: str | None = None) -> str:
    """The CPU's instruction-set extensions, sorted, space-separated ("" where /proc/cpuinfo is
    missing). Inductor compiles C++ with ``-march=native``, which ATEN_CPU_CAPABILITY does not cap:
    capped to AVX2 on an AVX-512 CPU, its bfloat16 kernels still hold AVX-512 (EVEX) instructions,
    an illegal instruction on an AVX2 CPU; and CPUs of one ISA differ (AVX512-BF16, AMX)."""
    words = {w for w in _cpuinfo_words("flags", cpuinfo) if _EXTENSION.match(w)}
    return " ".join(sorted(words | _cpuinfo_words("Features", cpuinfo)))


def _accelerator() -> str:
    """The NVIDIA GPUs here, by name and compute capability (``nvidia-smi``; by name alone where the
    driver is too old to report the capability), "mps" on an Apple-silicon Mac, else "cpu"."""
    import platform
    import shutil
    import subprocess
    import sys

    smi = shutil.which("nvidia-smi")
    if smi is None:
        return "mps" if sys.platform == "darwin" and platform.machine() == "arm64" else "cpu"
    for query in ("name,compute_cap", "name"):
        try:
            r = subprocess.run([smi, f"--query-gpu={query}", "--format=csv,noheader"], capture_output=True,
                               text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return "cpu"
        gpus = sorted({" ".join(line.replace(",", " ").split()) for line in r.stdout.splitlines() if line.strip()})
        if r.returncode == 0 and gpus:
            return "+".join(gpus)
    return "cpu"


def fingerprint_parts() -> dict[str, str]:
    """What a compile cache or a warm result depends on besides the code: the CPU's vector ISA as
    torch sees it (and oneDNN's and MKL's caps, and the -march Inductor's C++ is built for), the
    CPU's instruction-set extensions, the GPU and its compute capability, and the torch and JAX
    versions."""
    return {"isa": cpu_isa(), "extensions": cpu_extensions(), "onednn": at_import("ONEDNN_MAX_CPU_ISA") or "",
            "mkl": at_import("MKL_ENABLE_INSTRUCTIONS") or "", "march": at_import("TORCHINDUCTOR_CPP_MARCH") or "",
            "accelerator": _accelerator(),
            **{k: package_version(k) or "none" for k in VERSIONED}}


def machine_fingerprint(parts: dict[str, str] | None = None) -> str:
    """The folder name of this machine's caches: readable, then a hash of every part, e.g.
    ``cpu-avx512-torch2.13.0-jax0.10.2-1a2b3c4d``. Caches of another fingerprint are never read."""
    import hashlib

    p = parts or fingerprint_parts()
    accel = p["accelerator"].lower().replace("nvidia ", "")[:40]  # "cpu", or e.g. "h100 80gb hbm3 9.0"
    readable = f"{accel}-{p['isa']}-torch{p['torch'].split('+')[0]}-jax{p['jax']}"
    digest = hashlib.sha256(repr(sorted(p.items())).encode()).hexdigest()[:8]
    return re.sub(r"[^A-Za-z0-9._-]+", "_", readable).lower() + "-" + digest


def other_fingerprints(base: Path | None = None) -> list[str]:
    """The folders of ``base`` (``.cache/``) warmed under another fingerprint (each holds a ``warm.json``)."""
    base = CACHE_BASE if base is None else base
    try:
        return sorted(p.name for p in base.iterdir() if p.name != FINGERPRINT and (p / "warm.json").exists())
    except OSError:
        return []


def package_version(name: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


# All caches live under .cache/ (DEMOS_CACHE_DIR moves it), one folder per machine fingerprint:
# Inductor's and JAX's compile caches, `make warm`'s results and its marker.
CACHE_BASE = Path(at_import("DEMOS_CACHE_DIR") or PROJECT_ROOT / ".cache")
FINGERPRINT = machine_fingerprint()
CACHE_ROOT = CACHE_BASE / FINGERPRINT
# Results `make warm` stores for the panels that open on them (DEMOS_WARMED_DIR moves them alone:
# the tests keep theirs in a temporary folder, never the developer's).
WARMED_DIR = Path(at_import("DEMOS_WARMED_DIR") or CACHE_ROOT / "warmed")


_DIGESTS: dict[tuple, str] = {}


def package_digest(skip: tuple[str, ...] = (), with_versions: bool = False, extra: str = "",
                   root: Path = PROJECT_ROOT) -> str:
    """A hash of every module of the ``demos`` package under ``root`` (paths under ``demos/``
    starting with one of ``skip`` left out), optionally with the torch/JAX versions and ``extra``
    (a device): what a warm result, a warm cache or an executed export depends on. Computed once
    per process for this checkout (its modules are loaded once)."""
    key = (skip, with_versions, extra)
    if root != PROJECT_ROOT or key not in _DIGESTS:
        import hashlib

        h = hashlib.sha256()
        pkg = root / "demos"
        for p in sorted(pkg.rglob("*.py")):
            rel = p.relative_to(pkg).as_posix()
            if skip and rel.startswith(skip):
                continue
            h.update(rel.encode())
            h.update(p.read_bytes())
        if with_versions:
            h.update(repr([(k, package_version(k)) for k in VERSIONED]).encode())
        h.update(extra.encode())
        if root != PROJECT_ROOT:
            return h.hexdigest()[:16]
        _DIGESTS[key] = h.hexdigest()[:16]
    return _DIGESTS[key]


def _writable(path: Path) -> bool:
    """Can files be created in ``path`` (made if missing)? Tried for real: os.access says yes to
    root even on a read-only mount."""
    import tempfile

    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".probe-"):
            return True
    except OSError:
        return False


def temporary_root() -> Path:
    """This machine's cache folder when neither the shared nor the user's own can be written: in
    the system's temporary folder, kept by no one, and still one per fingerprint (torch's own
    default, ``/tmp/torchinductor_USER``, is shared by every ISA a process runs with)."""
    import tempfile

    return Path(tempfile.gettempdir()) / f"jitdeck-{getattr(os, 'getuid', lambda: 'user')()}" / FINGERPRINT


def own_root() -> Path:
    """This user's own cache folder, for a shared ``.cache/`` that cannot be written (a hub's
    read-only image): DEMOS_USER_CACHE_DIR, else $XDG_CACHE_HOME/jit-deck, else ~/.cache/jit-deck;
    one folder per machine fingerprint, as the shared one."""
    base = at_import("DEMOS_USER_CACHE_DIR") or Path(at_import("XDG_CACHE_HOME") or "~/.cache") / "jit-deck"
    return Path(base).expanduser() / FINGERPRINT


# The compile caches a user's own folder reads from the shared one (`make warm`'s), file by file.
LAYERED = ("inductor", "jax")
_LAYER_STAMP = ".layered.json"


def layer_shared(shared: Path, own: Path) -> int:
    """Make the shared (read-only) warm caches readable through ``own``: every folder of
    ``shared/inductor`` and ``shared/jax`` made in ``own``, every file linked (a symbolic link to
    the shared file), so torch and JAX, pointed at ``own``, find every warm entry and write each
    new compile into ``own`` alone. Inductor and JAX write a cache file by creating it (a
    temporary file renamed over the path, or only where none exists), never by opening an
    existing one for writing, so a link is replaced, never written through. Links whose shared
    file is gone are removed. Done again only when the shared folder's warm marker changed (a
    stamp in ``own``). Returns the links made."""
    import json

    marker = shared / "warm.json"
    try:
        mark = f"{shared}|{marker.stat().st_mtime_ns}" if marker.exists() else f"{shared}|unwarmed"
    except OSError:
        return 0
    stamp = own / _LAYER_STAMP
    try:
        if json.loads(stamp.read_text()).get("from") == mark:
            return 0
    except (OSError, ValueError):
        pass
    made = 0
    for sub in LAYERED:
        top = shared / sub
        if not top.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(top):
            here = Path(dirpath)
            if here == top:  # Inductor's lock files and its build folders are no one's to share
                dirnames[:] = [d for d in dirnames if d != "locks" and not d.startswith("tmp")]
            mine = own / here.relative_to(shared)
            mine.mkdir(parents=True, exist_ok=True)
            for name in filenames:
                link = mine / name
                if not os.path.lexists(link):
                    os.symlink(here / name, link)
                    made += 1
        for dirpath, _dirs, filenames in os.walk(own / sub):  # shared entries removed since
            for name in filenames:
                link = Path(dirpath) / name
                if link.is_symlink() and not link.exists():
                    link.unlink()
    stamp.write_text(json.dumps({"from": mark, "links": made}))
    return made


def compile_root() -> Path | None:
    """Where this process's compile caches are written: the shared CACHE_ROOT where it can be
    written (a checkout), else this user's own folder layered over it (:func:`layer_shared`: the
    warm entries read from the shared folder, new compiles written here), else a temporary folder;
    None when not even that can be written."""
    if _writable(CACHE_ROOT):
        return CACHE_ROOT
    own = own_root()
    if _writable(own):
        try:
            layer_shared(CACHE_ROOT, own)
        except OSError:
            pass  # a partial layer still works: what is not linked is compiled again, into own
        return own
    return temporary_root() if _writable(temporary_root()) else None


def cache_problem(shared: bool = False) -> str | None:
    """One line when no compile-cache folder a warm cache reaches can be written (None when the
    shared one can, or this user's own folder layered over it). ``shared``: when the shared one,
    which `make warm` fills, cannot be written."""
    if shared:
        return None if _writable(CACHE_ROOT) else (
            f"`make warm` fills the shared compile-cache folder {CACHE_ROOT}, which is not writable here "
            "(a read-only image: warm it where the image is built, or set DEMOS_CACHE_DIR to a writable folder)")
    if _writable(CACHE_ROOT) or _writable(own_root()):
        return None
    where = (f"a temporary folder of this machine's ({temporary_root()})" if _writable(temporary_root())
             else "their own temporary caches")
    return (f"the compile-cache folder {CACHE_ROOT} is not writable, nor is this user's own ({own_root()}), "
            f"so torch and JAX compile into {where}, which `make warm` cannot fill (set DEMOS_USER_CACHE_DIR "
            "to a writable folder)")


def configure_environment() -> None:
    """Set framework environment variables, never overriding what the user set."""
    # JAX grabs 75% of GPU memory at start-up by default; torch would then starve.
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    # Keep JAX on the CPU quietly when no accelerator plugin exists.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    # Inductor's C++ reads torch's thread count at run time, not at codegen: the deck picks its
    # threads per measurement from the load (demos.engine.protocol), and compiled code must follow.
    os.environ.setdefault("TORCHINDUCTOR_CPP_DYNAMIC_THREADS", "1")
    # A training loop's steady state: freed buffers stay in the heap (demos.engine.protocol).
    from demos.engine.protocol import steady_allocator

    steady_allocator()
    # Persistent compile caches inside the project, so `make warm` warms what the deck uses: this
    # machine's folder; where it cannot be written (a hub's read-only image), this user's own
    # folder, which reads the shared folder's warm entries (compile_root); else one in the system's
    # temporary folder, still this machine's. Triton's cache is inside Inductor's unless
    # TRITON_CACHE_DIR is set. A child of a demos process inherits the folders its parent chose
    # (DEMOS_CACHES_FOR names whose they are); a child of another fingerprint (`check --as avx2`)
    # takes its own, or it would run code compiled for another ISA. Folders a user set are kept.
    inherited = at_import("DEMOS_CACHES_FOR")
    root = compile_root()
    if root is not None:
        for var, folder in (("TORCHINDUCTOR_CACHE_DIR", "inductor"), ("DEMOS_JAX_CACHE_DIR", "jax")):
            if inherited and inherited != FINGERPRINT:
                os.environ[var] = str(root / folder)
            else:
                os.environ.setdefault(var, str(root / folder))
        os.environ["DEMOS_CACHES_FOR"] = FINGERPRINT


def static_mode() -> bool:
    """True when live cells should render a static figure (headless execution, export).

    Set DEMOS_STATIC=1 for nbclient/nbconvert runs; outside a Jupyter kernel it is always on.
    """
    if get("DEMOS_STATIC"):
        return True
    try:
        from IPython import get_ipython
    except ImportError:
        return True
    ip = get_ipython()
    return ip is None or not hasattr(ip, "kernel")
