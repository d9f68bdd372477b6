"""Environment that must be set before torch or JAX initialise."""
from __future__ import annotations

import os
from pathlib import Path

from demos.engine.settings import PROJECT_ROOT, at_import, get

CACHE_ROOT = Path(at_import("DEMOS_CACHE_DIR") or PROJECT_ROOT / ".cache")
# Results `make warm` stores for the panels that open on them (DEMOS_WARMED_DIR moves them alone:
# the tests keep theirs in a temporary folder, never the developer's).
WARMED_DIR = Path(at_import("DEMOS_WARMED_DIR") or CACHE_ROOT / "warmed")
# Packages whose version changes what the deck measures or compiles.
VERSIONED = ("torch", "jax", "jaxlib")


def package_version(name: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


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
    # Persistent compile caches inside the project, so `make warm` warms what the deck uses.
    if _writable(CACHE_ROOT):
        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(CACHE_ROOT / "inductor"))
        os.environ.setdefault("DEMOS_JAX_CACHE_DIR", str(CACHE_ROOT / "jax"))


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
