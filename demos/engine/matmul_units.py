"""What arithmetic the device torch measures on has for each precision: TF32 tensor cores, and
bfloat16 matrix or dot-product instructions, and bfloat16 matrix units; and the float32 matmul setting, held for a block.

Part 3's precision demo (:mod:`demos.topics.precision`) reads these to say, in one line, why a
precision's row is empty on this device, and whether its claim about bfloat16's speed applies.
"""
from __future__ import annotations

import contextlib
from pathlib import Path

from demos.engine.devices import cuda_capability, dtype_supported, require_torch, torch_device


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


def bf16_matrix_units(cpuinfo: str | None = None) -> bool | None:
    """Does the device torch measures on multiply bfloat16 matrices on matrix units, many times its
    float32 rate: an NVIDIA GPU's tensor cores from compute capability 8.0 (A100, H100), or an x86
    CPU's AMX (the ``amx_bf16`` flag)? Dot-product instructions (AVX512_BF16, Arm's BF16) are not:
    they measured 4–5× float32 on an AMD EPYC VM. None where this cannot be read (another GPU
    backend, a CPU whose flags cannot be read)."""
    device = torch_device()
    if device == "cuda":
        cc = cuda_capability()
        return None if cc is None else cc >= (8, 0)
    if device != "cpu":
        return None
    flags = _cpu_flags(cpuinfo)
    return None if flags is None else "amx_bf16" in flags
