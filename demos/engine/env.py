"""Environment that must be set before torch or JAX initialise."""
from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CACHE_ROOT = Path(os.environ.get("DEMOS_CACHE_DIR", PROJECT_ROOT / ".cache"))


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
    # Persistent compile caches inside the project, so `make warm` warms what the deck uses.
    if _writable(CACHE_ROOT):
        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(CACHE_ROOT / "inductor"))
        os.environ.setdefault("DEMOS_JAX_CACHE_DIR", str(CACHE_ROOT / "jax"))


def static_mode() -> bool:
    """True when live cells should render a static figure (headless execution, export).

    Set DEMOS_STATIC=1 for nbclient/nbconvert runs; outside a Jupyter kernel it is always on.
    """
    if os.environ.get("DEMOS_STATIC", "").lower() in ("1", "true", "yes"):
        return True
    try:
        from IPython import get_ipython
    except ImportError:
        return True
    ip = get_ipython()
    return ip is None or not hasattr(ip, "kernel")
