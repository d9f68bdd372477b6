"""Whether other processes share this process's GPU, read through NVIDIA's NVML.

The deck reads how busy the CPU cores are around every measurement (:mod:`demos.engine.protocol`);
on a GPU the same question is who else holds the device. :func:`read` asks NVML (the
``pynvml`` module of NVIDIA's ``nvidia-ml-py``), for the GPU torch measures on:

- the compute processes holding it, other than this one, and their memory;
- the device's utilisation, sampled before a measurement starts, while this process is idle;
- whether it is a MIG slice rather than the whole GPU.

Where NVML is not installed, fails, or cannot see this process among the GPU's processes (a
container sees other PID namespaces' processes as strangers, or none at all), the answer is
"GPU sharing unknown", never "free". The tests use a fake ``pynvml``: no GPU or NVML exists
where the deck is developed.
"""
from __future__ import annotations

import functools
import os
import sys
from dataclasses import asdict, dataclass
from typing import Any

from demos.engine.errors import one_line

BUSY_UTIL = 10  # % of the time a kernel ran, while this process was idle, that says someone else is computing


@dataclass(frozen=True)
class Share:
    """Who else held the GPU at one reading."""
    known: bool
    others: int = 0               # compute processes other than this one
    others_mib: float = 0.0       # the memory they hold
    util_idle: int | None = None  # % utilisation read while this process was idle
    mig: bool = False             # a MIG slice, not the whole GPU
    why: str = ""                 # why it is unknown

    @property
    def busy(self) -> bool:
        return self.known and (self.others > 0 or (self.util_idle or 0) >= BUSY_UTIL)

    def text(self) -> str:
        if not self.known:
            return f"GPU sharing unknown ({self.why})"
        what = "a MIG slice" if self.mig else "the GPU"
        if self.others:
            s = "es" if self.others != 1 else ""
            line = f"{what} shared with {self.others} other process{s} ({self.others_mib / 1024:.1f} GiB)"
        else:
            line = f"{what} held by no other process"
        if self.util_idle is not None and self.util_idle >= BUSY_UTIL:
            line += f", {self.util_idle}% busy while this one was idle"
        return line

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@functools.lru_cache(maxsize=None)
def _nvml() -> tuple[Any, str]:
    """NVML, started once per process (it stays started: each reading then costs a few calls),
    or None and why not."""
    try:
        import pynvml
    except ImportError:
        return None, "nvidia-ml-py is not installed"
    try:
        pynvml.nvmlInit()
    except Exception as exc:
        return None, f"NVML did not start: {one_line(exc)}"
    return pynvml, ""


def torch_gpu_uuid() -> str | None:
    """NVML's name (``GPU-…`` or ``MIG-…``) of the GPU torch uses now, None when torch cannot say."""
    torch = sys.modules.get("torch")
    try:
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        uuid = str(getattr(props, "uuid", "") or "")
    except Exception:
        return None
    if not uuid:
        return None
    return uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"


def read(uuid: str | None = None, pid: int | None = None) -> Share:
    """One reading of who else holds the GPU named ``uuid`` (default: torch's current GPU)."""
    nv, why = _nvml()
    if nv is None:
        return Share(False, why=why)
    uuid = uuid or torch_gpu_uuid()
    if uuid is None:
        return Share(False, why="torch does not name its GPU's UUID")
    pid = os.getpid() if pid is None else pid
    try:
        handle = nv.nvmlDeviceGetHandleByUUID(uuid.encode())  # bytes: older pynvml passes it to c_char_p as is
        procs = list(nv.nvmlDeviceGetComputeRunningProcesses(handle))
        if pid not in {p.pid for p in procs}:
            return Share(False, why="NVML does not list this process: a container, or another PID namespace")
        others = [p for p in procs if p.pid != pid]
        mib = sum((p.usedGpuMemory or 0) for p in others) / 2**20
        try:
            util = int(nv.nvmlDeviceGetUtilizationRates(handle).gpu)
        except Exception:  # not supported on a MIG slice
            util = None
        try:
            mig = nv.nvmlDeviceGetMigMode(handle)[0] == nv.NVML_DEVICE_MIG_ENABLE
        except Exception:
            mig = uuid.startswith("MIG-")
        return Share(True, len(others), mib, util, mig)
    except Exception as exc:
        return Share(False, why=f"NVML: {one_line(exc)}")
