"""A shared GPU is told like shared cores: who else holds the GPU, read through NVML before and
after each measurement. No GPU or NVML exists here, so a fake ``pynvml`` stands in for NVIDIA's
(the calls and fields nvidia-ml-py's module has: nvmlDeviceGetHandleByUUID,
nvmlDeviceGetComputeRunningProcesses → .pid/.usedGpuMemory, nvmlDeviceGetUtilizationRates → .gpu,
nvmlDeviceGetMigMode → (current, pending), NVMLError)."""
from __future__ import annotations

import os
import types

import pytest

from demos.engine import gpu_share, protocol

ME = os.getpid()
GIB = 2**30


class NVMLError(Exception):
    pass


def fake_nvml(procs=((ME, GIB),), util=0, mig=False, util_error=False, init_error=False):
    calls = []

    def util_rates(handle):
        if util_error:
            raise NVMLError("Not Supported")
        return types.SimpleNamespace(gpu=util, memory=0)

    def init():
        if init_error:
            raise NVMLError("Driver Not Loaded")

    return types.SimpleNamespace(
        NVMLError=NVMLError, NVML_DEVICE_MIG_ENABLE=1, calls=calls, nvmlInit=init, nvmlShutdown=lambda: None,
        nvmlDeviceGetHandleByUUID=lambda uuid: calls.append(uuid) or "handle",
        nvmlDeviceGetComputeRunningProcesses=lambda h: [types.SimpleNamespace(pid=p, usedGpuMemory=m) for p, m in procs],
        nvmlDeviceGetUtilizationRates=util_rates, nvmlDeviceGetMigMode=lambda h: (1 if mig else 0, 0))


@pytest.fixture
def nvml(monkeypatch):
    def use(**kw):
        fake = fake_nvml(**kw)
        monkeypatch.setitem(__import__("sys").modules, "pynvml", fake)
        gpu_share._nvml.cache_clear()
        return fake
    yield use
    gpu_share._nvml.cache_clear()


def test_alone_on_the_gpu_is_said_and_is_not_a_warning(nvml):
    fake = nvml()
    s = gpu_share.read("GPU-1234")
    assert s.known and not s.busy and s.text() == "the GPU held by no other process" and fake.calls == [b"GPU-1234"]


def test_other_processes_and_their_memory_are_named(nvml):
    nvml(procs=((ME, GIB), (4242, 3 * GIB), (4343, GIB // 2)))
    s = gpu_share.read("GPU-1")
    assert s.busy and s.others == 2 and s.text() == "the GPU shared with 2 other processes (3.5 GiB)"


def test_a_busy_gpu_with_no_visible_process_is_busy_by_its_utilisation(nvml):
    nvml(util=63)
    s = gpu_share.read("GPU-1")
    assert s.busy and s.text() == "the GPU held by no other process, 63% busy while this one was idle"


def test_a_mig_slice_is_named_and_its_missing_utilisation_is_no_error(nvml):
    nvml(mig=True, util_error=True)
    s = gpu_share.read("MIG-abcd")
    assert s.known and s.mig and s.util_idle is None and s.text() == "a MIG slice held by no other process"


@pytest.mark.parametrize("setup, why", [
    (dict(procs=((999_999, GIB),)), "NVML does not list this process"),   # a container: other PID namespaces
    (dict(init_error=True), "NVML did not start: NVMLError: Driver Not Loaded"),
])
def test_when_nvml_cannot_tell_it_is_unknown_never_free(nvml, setup, why):
    nvml(**setup)
    s = gpu_share.read("GPU-1")
    assert not s.known and not s.busy and s.text().startswith("GPU sharing unknown (") and why in s.text()


def test_without_nvidia_ml_py_it_is_unknown(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "pynvml", None)  # import fails
    gpu_share._nvml.cache_clear()
    try:
        assert gpu_share.read("GPU-1").text() == "GPU sharing unknown (nvidia-ml-py is not installed)"
    finally:
        gpu_share._nvml.cache_clear()


def test_a_measurement_on_a_shared_gpu_says_so_in_its_stamp_and_status(monkeypatch):
    """declared_state reads the GPU before (this process idle) and after: the stamp names who else
    held it, and the status line warns, as it does for busy cores."""
    readings = iter([gpu_share.Share(True), gpu_share.Share(True, others=1, others_mib=2048.0)])
    monkeypatch.setattr(protocol, "gpu_reading", lambda: next(readings))
    with protocol.declared_state() as cond:
        pass
    assert cond.gpu == "the GPU shared with 1 other process (2.0 GiB)" and cond.gpu_busy and not cond.reliable
    assert cond.stamp().endswith(" · the GPU shared with 1 other process (2.0 GiB)")
    assert cond.warning().startswith("the GPU shared with 1 other process (2.0 GiB) while this measured: timings")
    unknown = gpu_share.Share(False, why="nvidia-ml-py is not installed")
    monkeypatch.setattr(protocol, "gpu_reading", lambda: unknown)
    with protocol.declared_state() as cond:
        pass
    assert cond.stamp().endswith("· GPU sharing unknown (nvidia-ml-py is not installed)") and not cond.gpu_busy
    monkeypatch.undo()
    with protocol.declared_state() as cond:  # on a CPU: nothing about a GPU
        pass
    assert cond.gpu is None and "GPU" not in cond.stamp()
