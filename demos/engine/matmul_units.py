"""What arithmetic the device torch measures on has for each precision: TF32 tensor cores, and
bfloat16 matrix or dot-product instructions, and bfloat16 matrix units; and the float32 matmul setting, held for a block.

Part 3's precision demo (:mod:`demos.topics.precision`) reads these to say, in one line, why a
precision's row is empty on this device, and whether its claim about bfloat16's speed applies.
"""
from __future__ import annotations

import contextlib
import functools
import os
import subprocess
import sys
from pathlib import Path

from demos.engine.devices import cuda_capability, dtype_supported, require_torch, torch_device
from demos.engine.settings import raw


def tf32_problem(device: str | None = None) -> str | None:
    """Why float32 matmuls cannot run on TF32 tensor cores here (None: they can). TF32 is a
    format of NVIDIA's tensor cores from compute capability 8.0 (Ampere) on; other devices get no
    TF32 row."""
    device = device or torch_device()
    if device != "cuda":
        return (f"TF32 is a format of NVIDIA's tensor cores (compute capability 8.0+), which "
                f"{'this CPU' if device == 'cpu' else device.upper()} does not have")
    cc = cuda_capability()
    if cc is not None and cc < (8, 0):
        return f"TF32 needs compute capability 8.0 or newer; this GPU is {cc[0]}.{cc[1]}"
    return None


@contextlib.contextmanager
def matmul_precision(level: str):
    """``torch.set_float32_matmul_precision(level)`` ("highest": full float32; "high": TF32 where
    the GPU has it) for the duration, then the setting before it."""
    torch = require_torch()
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(level)
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(before)


def _cpu_flags(cpuinfo: str | None) -> set[str] | None:
    """The CPU's feature flags (``/proc/cpuinfo``'s "flags", or "Features" on Arm); None where
    they cannot be read (macOS, no ``/proc``)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return None
    flags: set[str] = set()
    for line in cpuinfo.splitlines():
        if line.lower().startswith(("flags", "features")):
            flags.update(line.split(":", 1)[-1].split())
    return flags or None


def bf16_matmul_units(cpuinfo: str | None = None) -> bool | None:
    """Does the device torch measures on have matrix or dot-product instructions for bfloat16?
    A GPU where bfloat16 is supported does (tensor cores); an x86 CPU does with AVX512_BF16 or
    AMX-BF16, an Arm CPU with its BF16 extension (``/proc/cpuinfo``'s flags); None where this
    cannot be read (macOS, no ``/proc``). Without them bfloat16 saves bytes, not arithmetic."""
    if torch_device() != "cpu":
        return dtype_supported("bfloat16")[0]
    flags = _cpu_flags(cpuinfo)
    return None if flags is None else bool(flags & {"avx512_bf16", "amx_bf16", "bf16"})


def bf16_matrix_units(cpuinfo: str | None = None, onednn: str | None = None) -> bool | None:
    """Does the device torch measures on multiply bfloat16 matrices on matrix units, many times its
    float32 rate: an NVIDIA GPU's tensor cores from compute capability 8.0 (A100, H100), or an x86
    CPU's AMX where oneDNN runs torch's bfloat16 GEMMs on it? Dot-product instructions
    (AVX512_BF16, Arm's BF16) are not: they measured 4–5× float32 on an AMD EPYC VM. None where
    this cannot be read (another GPU backend, a CPU whose flags cannot be read, a probe that failed).

    On a CPU the ``amx_bf16`` flag is what the CPU advertises, not what the library runs: with
    oneDNN capped (``ONEDNN_MAX_CPU_ISA=AVX2``, ``check --as avx2``), or tiles the kernel does not
    grant, bfloat16 GEMMs are emulated and slow while the flag still shows. So where the flag
    shows, the GEMM oneDNN runs decides (:func:`onednn_bf16_gemm`; ``onednn``: its verbose text,
    given by tests)."""
    device = torch_device()
    if device == "cuda":
        cc = cuda_capability()
        return None if cc is None else cc >= (8, 0)
    if device != "cpu":
        return None
    flags = _cpu_flags(cpuinfo)
    if flags is None:
        return None
    if "amx_bf16" not in flags:
        return False
    impls = onednn_bf16_gemm(onednn)
    return None if impls is None else any("amx" in i for i in impls)


def amx_withheld(cpuinfo: str | None = None, onednn: str | None = None) -> str | None:
    """Why a CPU that advertises AMX does not multiply bfloat16 on it here, in one line (None: it
    does, or it advertises none, or this is no CPU)."""
    if torch_device() != "cpu" or "amx_bf16" not in (_cpu_flags(cpuinfo) or set()):
        return None
    impls = onednn_bf16_gemm(onednn)
    if impls is None or any("amx" in i for i in impls):
        return None
    cap = raw("ONEDNN_MAX_CPU_ISA")
    ran = f"oneDNN runs them as {', '.join(impls)}" if impls else "torch does not hand them to oneDNN"
    return f"this CPU advertises AMX, but {ran}" + (f" (ONEDNN_MAX_CPU_ISA={cap})" if cap else "")


# a bfloat16 GEMM and a linear layer of the MLP block's kind, each large enough for oneDNN's
# blocked kernels, run with ONEDNN_VERBOSE=1 in a fresh process in this environment
_PROBE = ("import torch; import torch.nn.functional as F; "
          "a = torch.randn(512, 512, dtype=torch.bfloat16); a @ a; F.linear(a, a)")
PROBE_TIMEOUT_S = 120


def onednn_bf16_gemm(verbose: str | None = None) -> tuple[str, ...] | None:
    """The implementations oneDNN runs torch's bfloat16 GEMMs with in this environment, as its
    verbose mode names them (``brg_matmul:avx10_1_512_amx``, ``brg_matmul:avx2``…); () where torch
    did not call oneDNN (its own kernels); None where the probe failed. ``verbose``: a probe's
    output to read instead of running one (tests)."""
    if verbose is None:
        verbose = _probe_onednn(raw("ONEDNN_MAX_CPU_ISA") or "")
        if verbose is None:
            return None
    impls: list[str] = []
    for line in verbose.splitlines():
        fields = line.strip().split(",")
        if not fields[0].startswith(("onednn_verbose", "dnnl_verbose")) or "exec" not in fields:
            continue
        i = fields.index("exec")
        # exec, engine, primitive kind, implementation, …, the memory descriptors (bf16 in one)
        if len(fields) > i + 3 and fields[i + 2] in ("matmul", "inner_product") and "bf16" in line:
            if fields[i + 3] not in impls:
                impls.append(fields[i + 3])
    return tuple(impls)


@functools.lru_cache(maxsize=None)
def _probe_onednn(max_isa: str) -> str | None:
    """oneDNN's verbose output for :data:`_PROBE`, once per ISA cap (``max_isa``: the cap the probe
    inherits); None where it could not run."""
    env = dict(os.environ, ONEDNN_VERBOSE="1")
    try:
        out = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True,
                             timeout=PROBE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout if out.returncode == 0 else None
