"""Environment that must be set before torch or JAX initialise."""
from __future__ import annotations

import os
from pathlib import Path

from demos.engine.settings import PROJECT_ROOT, at_import, get

# Packages whose version changes what the deck measures or compiles.
VERSIONED = ("torch", "jax", "jaxlib")
_ISAS = ("default", "avx2", "avx512")  # torch's x86 CPU capabilities, weakest first


def cpu_isa(cpuinfo: str | None = None) -> str:
    """The vector ISA torch's CPU kernels run with here, as ``torch.backends.cpu.get_cpu_capability()``
    says it, read without importing torch (the presenter's server never imports it): the CPU's
    flags (AVX512 needs avx512f/vl/bw/dq, AVX2 needs avx2 and fma), capped by ATEN_CPU_CAPABILITY.
    Off x86 (a Mac, an Arm server): the machine's name."""
    import platform

    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            cpuinfo = ""
    flags: set[str] = set()
    for line in cpuinfo.splitlines():
        if line.lower().startswith("flags"):
            flags.update(line.split(":", 1)[-1].split())
    if not flags:
        return platform.machine().lower() or "unknown"
    hw = ("avx512" if {"avx512f", "avx512vl", "avx512bw", "avx512dq"} <= flags
          else "avx2" if {"avx2", "fma"} <= flags else "default")
    cap = (at_import("ATEN_CPU_CAPABILITY") or "").strip().lower()
    if cap in _ISAS:
        return _ISAS[min(_ISAS.index(cap), _ISAS.index(hw))]
    return hw


def _accelerator() -> str:
    """The NVIDIA GPUs here, by name and compute capability (``nvidia-smi``), else "cpu"."""
    import shutil
    import subprocess

    smi = shutil.which("nvidia-smi")
    if smi is None:
        return "cpu"
    try:
        out = subprocess.run([smi, "--query-gpu=name,compute_cap", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return "cpu"
    gpus = sorted({" ".join(line.replace(",", " ").split()) for line in out.splitlines() if line.strip()})
    return "+".join(gpus) or "cpu"


def fingerprint_parts() -> dict[str, str]:
    """What a compile cache or a warm result depends on besides the code: the CPU's vector ISA as
    torch sees it (and oneDNN's and MKL's caps), the GPU and its compute capability, and the
    torch and JAX versions."""
    return {"isa": cpu_isa(), "onednn": at_import("ONEDNN_MAX_CPU_ISA") or "",
            "mkl": at_import("MKL_ENABLE_INSTRUCTIONS") or "", "accelerator": _accelerator(),
            **{k: package_version(k) or "none" for k in VERSIONED}}


def machine_fingerprint(parts: dict[str, str] | None = None) -> str:
    """The folder name of this machine's caches: readable, then a hash of every part, e.g.
    ``cpu-avx512-torch2.13.0-jax0.10.2-1a2b3c4d``. Caches of another fingerprint are never read."""
    import hashlib
    import re

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


def cache_problem() -> str | None:
    """One line when the compile-cache folder cannot be written (None when it can)."""
    if _writable(CACHE_ROOT):
        return None
    return (f"the compile-cache folder {CACHE_ROOT} is not writable, so torch and JAX use their own "
            "temporary caches, which `make warm` cannot fill (set DEMOS_CACHE_DIR to a writable folder)")


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
    # machine's folder. A child of a demos process inherits the folders its parent chose
    # (DEMOS_CACHES_FOR names whose they are); a child of another fingerprint (`check --as avx2`)
    # takes its own, or it would run code compiled for another ISA. Folders a user set are kept.
    if _writable(CACHE_ROOT):
        inherited = at_import("DEMOS_CACHES_FOR")
        for var, folder in (("TORCHINDUCTOR_CACHE_DIR", "inductor"), ("DEMOS_JAX_CACHE_DIR", "jax")):
            if inherited and inherited != FINGERPRINT:
                os.environ[var] = str(CACHE_ROOT / folder)
            else:
                os.environ.setdefault(var, str(CACHE_ROOT / folder))
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
