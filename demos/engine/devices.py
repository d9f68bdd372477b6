"""Which devices and frameworks exist here, described as data (never an import-time crash).

The environment the frameworks read when they start is set by ``demos/__init__.py``, which Python
runs before any module of ``demos.engine`` (a parent package is imported first).
"""
from __future__ import annotations

import functools
import os
import platform
import shutil
import sys
import sysconfig
from pathlib import Path
from typing import Any, Callable

from demos.engine.env import package_version
from demos.engine.errors import DemoError
from demos.engine.hardware import torch_or_none
from demos.engine.settings import get, parse, raw

DTYPES = ("float32", "bfloat16", "float16")
# The four forms every workload runs in.
BACKENDS = ("torch_eager", "torch_compile", "jax_eager", "jax_jit")


@functools.lru_cache(maxsize=None)
def jax_or_none():
    """Import JAX configured for a fair comparison, or None when it is missing."""
    try:
        import jax
    except Exception:
        return None
    # PyTorch runs fp32 matmuls in full fp32 unless told otherwise; JAX uses TF32 on
    # recent GPUs by default. Align them: full precision for both.
    jax.config.update("jax_default_matmul_precision", "highest")
    cache_dir = raw("DEMOS_JAX_CACHE_DIR")
    if cache_dir:
        try:
            jax.config.update("jax_compilation_cache_dir", cache_dir)
            jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
            jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
            # JAX derives XLA's GPU autotune-cache folder from the cache's path and hashes it into
            # every key (jax/_src/compiler.py, get_compile_options; cache_key.py does not clear it):
            # the same program under another path missed, so `make warm`'s cache, read through a
            # student's own folder on a hub (demos.engine.env.layer_shared), was never hit. Without
            # that sub-cache a key is the program's, wherever the cache lies; the executable cache
            # itself is untouched (the sub-cache is read only on a miss, when XLA autotunes again).
            jax.config.update("jax_persistent_cache_enable_xla_caches", "none")
        except Exception:  # older/newer JAX without these options
            pass
    return jax


def require_torch():
    torch = torch_or_none()
    if torch is None:
        raise DemoError("PyTorch is not installed here (pip install torch==2.13.0)")
    return torch


def require_jax():
    jax = jax_or_none()
    if jax is None:
        raise DemoError("JAX is not installed here (pip install 'jax[cpu]==0.10.2'); torch demos still run")
    return jax


def torch_device() -> str:
    """cuda > mps > cpu; DEMOS_DEVICE=cpu forces the CPU. The setting is read on every call (the
    device found is kept per value of it), so a change in this process takes effect."""
    return _torch_device(raw("DEMOS_DEVICE"))


@functools.lru_cache(maxsize=None)
def _torch_device(setting: str | None) -> str:
    forced = None if setting is None else parse("DEMOS_DEVICE", setting)  # one that exists here, or one line saying which do
    if forced:
        return forced
    torch = torch_or_none()
    if torch is None:
        return "cpu"
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def device_kind() -> str:
    """'gpu' for CUDA/MPS, 'cpu' otherwise: selects default sizes."""
    return "cpu" if torch_device() == "cpu" else "gpu"


@functools.lru_cache(maxsize=None)
def jax_backend() -> str | None:
    jax = jax_or_none()
    if jax is None:
        return None
    try:
        return jax.default_backend()
    except Exception:
        return None


def cuda_capability() -> tuple[int, int] | None:
    """The compute capability of the GPU torch measures on; None off CUDA."""
    torch = torch_or_none()
    if torch is None or torch_device() != "cuda":
        return None
    return tuple(torch.cuda.get_device_capability())


def dtype_problem(dtype: str) -> str | None:
    """Why this device cannot run ``dtype`` (None: it can). Below compute capability 8.0 (a T4 is
    7.5) Triton's bfloat16 kernels fail in ptxas ("Feature '.bf16' requires .target sm_80 or
    higher", triton-lang/triton#1941), so torch.compile cannot run them."""
    cc = cuda_capability() if dtype == "bfloat16" else None
    if cc is not None and cc < (8, 0):
        return (f"bfloat16 needs compute capability 8.0 or newer for torch.compile's Triton kernels; this GPU "
                f"is {cc[0]}.{cc[1]}: choose float32 or float16")
    return None


def runs_here(who: str, values: dict[str, Any]) -> dict[str, Any]:
    """``values``, unless their dtype is one this device lacks: then one line naming ``who``."""
    problem = isinstance(values.get("dtype"), str) and dtype_problem(values["dtype"])
    if problem:
        raise DemoError(f"{who}: dtype={values['dtype']}: {problem}")
    return values


def old_gpu_warning() -> str | None:
    """A line for GPUs Triton does not officially support (compute capability below 8.0)."""
    cc = cuda_capability()
    if cc is not None and cc < (8, 0):
        return (f"compute capability {cc[0]}.{cc[1]}: Triton (torch.compile's GPU code) does not officially "
                "support GPUs below 8.0; bfloat16 is refused here, and other figures may fail to compile")
    return None


def same_device() -> tuple[bool, str, str]:
    """Whether torch and JAX run on the same kind of device, so that a torch-vs-JAX figure
    compares the compilers and not two devices: (ok, where each runs, the fix when not)."""
    t, j = torch_device(), jax_backend()
    where = f"torch on {t}, JAX on {j or 'nothing (JAX is not installed: torch demos only)'}"
    if t == "cuda" and j not in (None, "gpu"):
        return False, where, ("install JAX's CUDA build: `make plan` names it for this driver (jax[cuda13] or "
                              "jax[cuda12]); .venv/bin/pip install it")
    if t == "cpu" and j == "gpu":
        if raw("DEMOS_DEVICE") == "cpu":
            return False, where, "DEMOS_DEVICE=cpu keeps torch on the CPU: set JAX_PLATFORMS=cpu too, to compare there"
        return False, where, ("torch sees no GPU: install torch's CUDA build (`make plan`), or, to compare on the "
                              "CPU, JAX_PLATFORMS=cpu")
    if t == "mps" and j == "cpu":
        return True, where + " (JAX has no supported Apple-GPU backend: torch-vs-JAX figures compare two devices)", ""
    return True, where, ""


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_name() -> str:
    """Human name of the torch device the demos run on (that of ``DEMOS_DEVICE`` as it is now)."""
    return _device_name(torch_device())


@functools.lru_cache(maxsize=None)
def _device_name(dev: str) -> str:
    torch = torch_or_none()
    if dev == "cuda" and torch is not None:
        return torch.cuda.get_device_name(0)
    if dev == "mps":
        return f"Apple MPS ({platform.machine()})"
    return f"CPU: {cpu_model()} ({os.cpu_count()} threads)"


def _clear_device_caches() -> None:
    _torch_device.cache_clear()
    _device_name.cache_clear()


torch_device.cache_clear = _clear_device_caches  # as when they were lru caches themselves
device_name.cache_clear = _clear_device_caches


def set_threads(n: int | None = None) -> int:
    """Set torch's intra-op threads: ``n``, else ``DEMOS_THREADS``, else what the measurement's
    thread policy chose (:func:`demos.engine.protocol.choose_threads`; all cores before any).
    Inductor's C++ follows the same number at run time."""
    from demos.engine.protocol import policy_threads

    torch = torch_or_none()
    n = n or policy_threads()
    if torch is not None and torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return n


def dtype_supported(dtype: str, device: str | None = None) -> tuple[bool, str]:
    """Can the torch device run this dtype? (False, reason) when it cannot."""
    if dtype not in DTYPES:
        return False, f"unknown dtype {dtype!r}; valid: {', '.join(DTYPES)}"
    device = device or torch_device()
    torch = torch_or_none()
    if device == "cuda" and torch is not None and dtype == "bfloat16":
        if not torch.cuda.is_bf16_supported():
            return False, f"{device_name()} has no bfloat16 support"
    if device == "mps" and dtype == "bfloat16" and torch is not None:
        try:
            torch.ones(1, device="mps", dtype=torch.bfloat16)
        except Exception:
            return False, "this MPS device/macOS has no bfloat16 support"
    return True, ""


def check_dtype(dtype: str, device: str | None = None) -> None:
    ok, why = dtype_supported(dtype, device)
    if not ok:
        raise DemoError(why)


def free_memory_bytes(device: str | None = None) -> int | None:
    """Free memory on the device (host RAM for CPU/MPS), or None when unknown."""
    device = device or torch_device()
    torch = torch_or_none()
    if device == "cuda" and torch is not None:
        free, _total = torch.cuda.mem_get_info()
        return int(free)
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def cxx_compiler() -> str | None:
    """The C++ compiler Inductor will use: $CXX when set (Inductor takes it as is), else g++
    (clang++ on macOS); None when that is not on PATH."""
    name = get("CXX") or ("clang++" if sys.platform == "darwin" else "g++")
    return shutil.which(name)


_CXX_FIX = "torch.compile on CPU needs g++ and Python headers: apt-get install g++ python3-dev"


def cxx_fix(detail: str = "") -> str:
    """What to do about a failed C++ compile: OpenMP's headers for a compiler without them (a clang:
    Inductor's C++ includes omp.h), else g++ and Python's headers."""
    if "omp.h" in detail:
        return ("this compiler has no OpenMP headers, which Inductor's C++ includes: apt-get install "
                "libomp-dev (macOS: brew install libomp), or use g++ (unset CXX)")
    return _CXX_FIX


def cxx_problem() -> str | None:
    """Why torch.compile's C++ step will fail here, in one line, or None when a real compile of
    a file including Python.h succeeds (about 0.2 s; done once per compiler)."""
    cxx = cxx_compiler()
    if cxx is None:
        name = get("CXX")
        return f"CXX={name!r} is not on PATH" if name else "no C++ compiler (g++) on PATH"
    if not python_headers():
        return "no Python headers (Python.h)"
    return _compile_check(cxx, sysconfig.get_paths()["include"])


@functools.lru_cache(maxsize=None)
def _compile_check(cxx: str, include: str) -> str | None:
    import subprocess
    import tempfile

    from demos.engine.errors import compiler_cause

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp, "check.cpp")
        src.write_text("#include <Python.h>\nint main() { return 0; }\n")
        try:
            r = subprocess.run([cxx, "-fsyntax-only", f"-I{include}", str(src)], capture_output=True,
                               text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{cxx} does not run ({exc.__class__.__name__})"
    if r.returncode != 0:
        said = (r.stderr or r.stdout).strip()
        cause = compiler_cause(said) if said else f"exit code {r.returncode}, no output"
        return f"{cxx} fails to compile a test file including Python.h: {cause}"
    return None


def python_headers() -> bool:
    inc = sysconfig.get_paths().get("include")
    return bool(inc) and Path(inc, "Python.h").exists()


def gpu_info() -> dict[str, Any]:
    torch = torch_or_none()
    if torch is None or not torch.cuda.is_available():
        return {}
    props = torch.cuda.get_device_properties(0)
    info = {
        "gpu_name": props.name,
        "gpu_memory_gib": round(props.total_memory / 2**30, 1),
        "gpu_sms": props.multi_processor_count,
        "compute_capability": f"{props.major}.{props.minor}",
        "cuda_version": torch.version.cuda,
    }
    try:
        import subprocess

        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=10,
        )
        if out.returncode == 0:
            info["driver"] = out.stdout.strip().splitlines()[0]
    except Exception:
        pass
    return info


def fp32_matmul() -> str:
    """How float32 matmuls run on a GPU here: full fp32, or TF32 allowed (the deck asks both
    frameworks for full precision, :func:`jax_or_none`; a user's setting may differ)."""
    torch, jax = torch_or_none(), jax_or_none()
    t = torch.get_float32_matmul_precision() if torch is not None else "highest"
    j = (getattr(jax.config, "jax_default_matmul_precision", None) or "default") if jax is not None else "highest"
    if t == "highest" and j in ("highest", "float32"):
        return "no TF32"
    return f"TF32 allowed (torch {t}, JAX {j})"


def machine_info() -> dict[str, Any]:
    """Everything a figure's label or a results record needs to say where it ran."""
    torch = torch_or_none()
    jax = jax_or_none()
    info: dict[str, Any] = {
        "device": torch_device(),
        "device_name": device_name(),
        "cpu": cpu_model(),
        "cpu_threads": os.cpu_count(),
        "torch_threads": torch.get_num_threads() if torch is not None else None,
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "torch": torch.__version__ if torch is not None else None,
        "jax": jax.__version__ if jax is not None else None,
        "jaxlib": package_version("jaxlib"),
        "jax_backend": jax_backend(),
        "jax_devices": [str(d) for d in jax.devices()] if jax is not None else [],
        "triton": package_version("triton"),
        "fp32_matmul": fp32_matmul(),
    }
    info.update(gpu_info())
    return info


def backend_status(check_compile: bool = False) -> dict[str, dict[str, Any]]:
    """Which of the four backends work here, each with the fix when it does not.

    check_compile=True really compiles a tiny function with torch.compile (a few seconds on
    CPU); otherwise only the prerequisites are checked.
    """
    torch = torch_or_none()
    jax = jax_or_none()
    status: dict[str, dict[str, Any]] = {}
    if torch is None:
        fix = "install PyTorch: pip install torch==2.13.0 (CPU) — see README for CUDA builds"
        status["torch_eager"] = {"ok": False, "detail": "PyTorch is not installed", "fix": fix}
        status["torch_compile"] = {"ok": False, "detail": "PyTorch is not installed", "fix": fix}
    else:
        status["torch_eager"] = {"ok": True, "detail": f"torch {torch.__version__} on {torch_device()}"}
        problem = cxx_problem() if torch_device() == "cpu" else None
        if problem:
            status["torch_compile"] = {
                "ok": False,
                "detail": problem,
                "fix": _CXX_FIX + ("; or unset CXX (then g++ is used)" if get("CXX") else ""),
            }
        else:
            detail = "Inductor → " + ("Triton kernels" if torch_device() == "cuda" else "C++/OpenMP kernels")
            status["torch_compile"] = {"ok": True, "detail": detail}
            if check_compile:
                try:
                    import torch._dynamo

                    torch._dynamo.reset()
                    f = torch.compile(lambda t: (t.sin() + 1).relu())
                    f(torch.ones(8, device=torch_device()))
                    torch._dynamo.reset()
                    status["torch_compile"]["detail"] += " (test compile ok)"
                    wrong = accelerator_disagrees()
                    if wrong:
                        status["torch_compile"] = {"ok": False, "detail": wrong,
                                                   "fix": "compare on the CPU: DEMOS_DEVICE=cpu"}
                except Exception as exc:  # a compiler that cannot build Inductor's C++ (tested with a fake)
                    from demos.engine.errors import one_line

                    status["torch_compile"] = {"ok": False, "detail": one_line(exc), "fix": cxx_fix(one_line(exc))}
    if jax is None:
        fix = "install JAX: pip install 'jax[cpu]==0.10.2' (or jax[cuda12] on an NVIDIA GPU)"
        status["jax_eager"] = {"ok": False, "detail": "JAX is not installed", "fix": fix}
        status["jax_jit"] = {"ok": False, "detail": "JAX is not installed", "fix": fix}
    else:
        try:
            import jax.numpy as jnp

            jax.jit(lambda a: a + 1)(jnp.ones(4)).block_until_ready()
            ok, detail = True, f"jax {jax.__version__} on {jax_backend()}"
        except Exception as exc:  # pragma: no cover
            from demos.engine.errors import one_line

            ok, detail = False, one_line(exc)
        status["jax_eager"] = {"ok": ok, "detail": detail}
        status["jax_jit"] = {"ok": ok, "detail": ("XLA → " + str(jax_backend())) if ok else detail}
        if torch_device() == "cuda" and jax_backend() == "cpu":
            status["jax_jit"]["detail"] += " (JAX sees no GPU: `make plan` names the CUDA build to install)"
    return status


def compiled_vs_eager(device: str, compile: Callable | None = None) -> float:
    """The largest difference, relative to eager's largest value, between a small function run
    eagerly and compiled on ``device``: pointwise ops and a row sum over a length that is no power
    of two (MPS once summed wrongly, pytorch#170360)."""
    torch = require_torch()
    x = torch.randn(4096, 257, generator=torch.Generator().manual_seed(0)).to(device)

    def f(t):
        return (t.sin() * 2 + 1).relu().sum(dim=1) + t.mean()

    eager = f(x).double().cpu()
    compiled = (compile or torch.compile)(f)(x).double().cpu()
    return float((eager - compiled).abs().max() / eager.abs().max().clamp_min(1e-30))


AGREE_REL = 1e-3  # float32 sums of 257 terms, reassociated: far under this; a wrong sum: far over


@functools.lru_cache(maxsize=None)
def _disagreement(device: str) -> str | None:
    try:
        rel = compiled_vs_eager(device)
    except Exception as exc:
        from demos.engine.errors import one_line

        return f"torch.compile could not be checked against eager on {device}: {one_line(exc)}"
    return None if rel <= AGREE_REL else (f"torch.compile disagrees with eager on {device} (largest relative "
                                          f"difference {rel:.2g} on a test sum): its figures are not trusted")


def accelerator_disagrees() -> str | None:
    """On an accelerator other than CUDA (MPS, whose Inductor backend is a prototype): a line when
    compiled and eager results disagree there, checked once per process. None on a CPU or CUDA,
    and where they agree. Every figure's stamp says it, and no claim passes while it stands."""
    device = torch_device()
    return None if device in ("cpu", "cuda") else _disagreement(device)


def working_backends(check_compile: bool = False) -> list[str]:
    return [b for b, s in backend_status(check_compile).items() if s["ok"]]


def in_jupyter() -> bool:
    return "ipykernel" in sys.modules
