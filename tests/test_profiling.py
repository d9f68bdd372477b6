"""demos.introspection.profiling: profiler events → host/device lanes and counts; the two-lane figure."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

import demos  # noqa: F401
from demos.introspection import kernel_names, profiling, trace
from demos.engine.errors import DemoError
from demos.engine.workload_defs import WORKLOADS
from demos.engine.workloads import prepare


# -- names ----------------------------------------------------------------------------
@pytest.mark.parametrize("raw, short", [
    ("aten::sin", "sin"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::sin_kernel_cuda(at::TensorIteratorBase&)"
     "::{lambda()#2}::operator()() const::{lambda()#1}::operator()() const::{lambda(float)#1}, "
     "at::detail::Array<char*, 2> >(int, at::native::sin_kernel_cuda(at::TensorIteratorBase&)::"
     "{lambda()#2}::operator()() const::{lambda()#1}::operator()() const::{lambda(float)#1}, "
     "at::detail::Array<char*, 2>)", "sin"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, float, "
     "at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 3> >(int, ...)", "mul"),
    ("graph_0_cpp_fused_add_cos_mul_relu_sin_0", "cpp_fused_add_cos_mul_relu_sin_0"),
    ("triton_poi_fused_add_cos_mul_relu_sin_0", "triton_poi_fused_add_cos_mul_relu_sin_0"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
     "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)", "add"),
    ("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_nn", "ampere_bf16_s16816gemm 128x128"),
    ("## Call CompiledFxGraph fpv3ba2xw4cyjzjuaqlg2ojgfwcq2xk6fqbw4hxnrm6ymhr6kxwa ##", "CompiledFxGraph"),
])
def test_short_names(raw, short):
    assert kernel_names.short_name(raw) == short


# -- CPU profiling of real torch work -------------------------------------------------
def _eager(N=2**12):
    return prepare("complex_activation", "torch_eager", {"N": N}, "float32", device="cpu")


def test_eager_complex_activation_counts_six_ops_in_program_order():
    run = profiling.profile_run(_eager(), label="torch eager")
    assert run["device_lane"] == "host-executes"
    assert run["counts"]["ops"] == 6, run["op_names"]
    assert run["op_names"] == list(WORKLOADS["complex_activation"].eager_ops)
    # on a CPU every op is a compute event run by the host itself
    assert run["counts"]["kernels"] == 6 and run["kernel_names"] == run["op_names"]
    assert run["counts"]["launches"] == 0
    assert run["meta"]["workload"] == "complex_activation" and run["meta"]["params"] == {"N": 2**12}
    json.dumps(run)  # JSON-able as promised


def test_lanes_are_ordered_relative_and_inside_the_span():
    run = profiling.profile_run(_eager(), passes=2)
    for lane in ("host", "device"):
        evs = run["lanes"][lane]
        assert evs, lane
        starts = [e["start_us"] for e in evs]
        assert starts == sorted(starts) and min(starts) >= 0.0
        for e in evs:
            assert e["dur_us"] >= 0 and e["start_us"] + e["dur_us"] <= run["span_us"] + 1e-6
    host = run["lanes"]["host"]
    # eager ops on one thread do not overlap: each starts after the previous ended
    for a, b in zip(host, host[1:]):
        assert b["start_us"] >= a["start_us"] + a["dur_us"] - 1e-3
    assert run["passes"] == 2
    assert run["wall_us"] >= sum(e["dur_us"] for e in host) - 1e-3


def test_all_passes_run_in_one_profiler_session_after_its_warmup_step(monkeypatch, tmp_path):
    """A session opened around one call charges its start-up to that call's first op (the seed's
    "slow first sin"). profile_run opens ONE session for all passes, with a profiler warm-up step
    (discarded) before the recorded ones; the trace holds the recorded steps only, and the run is
    the least disturbed of them (the shortest demos::run)."""
    import torch.profiler

    sessions, calls = [], []
    real = torch.profiler.profile

    class Counting(real):
        def start(self):
            sessions.append(self)
            return super().start()

    monkeypatch.setattr(torch.profiler, "profile", Counting)
    p = _eager()
    run = profiling.profile_run(lambda: calls.append(1) or p.fn(), sync=p.sync, device="cpu", warmup=1,
                                passes=3, keep_trace=tmp_path / "t.json")
    assert len(sessions) == 1 and len(calls) == 1 + 1 + 3  # unprofiled warm-up, profiler warm-up, 3 recorded
    events = json.loads((tmp_path / "t.json").read_bytes())["traceEvents"]
    steps = [e for e in events if e.get("name") == trace.RUN_ANNOTATION and e.get("ph") == "X"]
    assert len(steps) == 3 and run["passes"] == 3  # the warm-up step's events are not in the trace
    assert run["wall_us"] == pytest.approx(min(e["dur"] for e in steps), abs=1e-3)
    assert run["meta"]["steps"] == 3 and run["counts"]["ops"] == 6  # one step's ops, not all three


def test_plain_callable_and_bookkeeping_ops_are_left_out_of_the_count():
    import torch

    x = torch.ones(64)
    run = profiling.profile_run(lambda: x.view(8, 8).add(1.0), device="cpu")
    assert run["counts"]["ops"] == 1 and run["op_names"] == ["add"]
    assert "view" in run["skipped_ops"]


def test_bad_targets_give_one_line():
    with pytest.raises(DemoError, match="torch"):
        profiling.profile_run(SimpleNamespace(fn=lambda: None, sync=lambda o: None, backend="jax_jit"))
    with pytest.raises(DemoError, match="callable"):
        profiling.profile_run(42)


def test_compiled_cpu_kernel_is_visible_when_kernel_events_are_enabled():
    """Part 2's use: Inductor's fused C++ kernel shows as ONE compute event."""
    import torch
    import torch._dynamo

    def fn(x, y):  # a fresh function: its own compile, independent of other tests
        return torch.relu((torch.sin(x) * torch.cos(y) + x) * y + 0.5)

    old = profiling.enable_cpu_kernel_events(True)
    try:
        torch._dynamo.reset()
        compiled = torch.compile(fn)
        x, y = torch.randn(4096), torch.randn(4096)
        run = profiling.profile_run(lambda: compiled(x, y), device="cpu", warmup=1)
    finally:
        profiling.enable_cpu_kernel_events(old)
        torch._dynamo.reset()
    assert run["counts"]["kernels"] == 1, run["lanes"]["device"]
    assert run["kernel_names"][0].startswith("cpp_fused")
    assert run["counts"]["ops"] == 0  # no aten op issued op by op


# -- the CUDA path: Kineto trace fixtures in the format torch.profiler exports on a GPU ----------
GPU_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "gpu"


def _cuda_run(name="eager_complex_activation_cuda.json", label="eager"):
    return trace.load_timeline(GPU_FIXTURES / name, label=label)


def test_cuda_lanes_from_a_kineto_trace():
    run = _cuda_run()
    c = run["counts"]
    assert run["device_lane"] == "cuda"
    assert c["ops"] == 6 and c["kernels"] == 6 and c["launches"] == 6 and c["memcpy"] == 0
    assert run["kernel_names"] == ["sin", "cos", "mul", "add", "mul", "clamp"]
    kinds = [e["kind"] for e in run["lanes"]["host"]]
    assert kinds == ["op"] * 6 + ["sync"]
    # the GPU-side copy of the annotation is not a kernel
    assert all(e["full"] != trace.RUN_ANNOTATION for e in run["lanes"]["device"])
    # kernels start after their launch on the host: asynchronous
    assert run["lanes"]["device"][1]["start_us"] > run["lanes"]["host"][0]["start_us"]
    # the same op, the same colour: each kernel carries the op that launched it
    assert [e["op"] for e in run["lanes"]["device"]] == run["op_names"]


def test_the_run_annotation_and_the_bookkeeping_ops():
    assert trace.RUN_ANNOTATION == "demos::run" and "aten::view" in trace.BOOKKEEPING_OPS


# -- the figure -----------------------------------------------------------------------
def test_timeline_figure_stacks_runs_and_says_what_the_cpu_lane_is():
    cpu = profiling.profile_run(_eager(), label="eager")
    gpu = _cuda_run(label="A100")
    fig = profiling.timeline_figure([cpu, gpu], ["eager here", "eager A100"], stamp="test machine")
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    # bottom to top: the first run is drawn on top, host lane above its device lane
    assert labels == ["eager A100\nGPU", "eager A100\nhost", "eager here\nCPU runs op", "eager here\nhost"]
    assert "no separate device" in ax.get_title(loc="left")
    assert "6 kernels" in fig._suptitle.get_text()
    one = profiling.timeline_figure([gpu])
    assert "no separate device" not in one.axes[0].get_title(loc="left")
    assert "6 aten ops → 6 GPU kernels" in one._suptitle.get_text()
    from demos.engine.plots import to_png

    assert to_png(fig)[:4] == b"\x89PNG"


def test_timeline_figure_refuses_nonsense():
    with pytest.raises(DemoError):
        profiling.timeline_figure([])
    with pytest.raises(DemoError, match="titles"):
        profiling.timeline_figure([{"counts": {}, "lanes": {}}], ["a", "b"])


# -- GPU ------------------------------------------------------------------------------
@pytest.mark.gpu
def test_gpu_eager_complex_activation_six_kernels_launched_asynchronously():
    p = prepare("complex_activation", "torch_eager", {"N": 20 * 2**20}, "float32", device="cuda")
    run = profiling.profile_run(p, passes=2)
    c = run["counts"]
    assert run["device_lane"] == "cuda"
    assert c["ops"] == 6 and c["kernels"] >= 6 and c["launches"] >= 6, run["kernel_names"]
    assert any(e["kind"] == "sync" for e in run["lanes"]["host"])
    host_ops = [e for e in run["lanes"]["host"] if e["kind"] == "op"]
    kernels = [e for e in run["lanes"]["device"] if e["kind"] == "kernel"]
    # asynchronous: the host issues the last op before the last kernel finishes
    assert host_ops[-1]["start_us"] < kernels[-1]["start_us"] + kernels[-1]["dur_us"]


def test_no_native_profiler_line_reaches_a_slide():
    """libkineto writes 'USDT: … profiler_start/stop' to file descriptor 2, which a kernel shows
    under the cell. Every profiled demo (timelines, part 2's memory slide) keeps fd 2 quiet."""
    import subprocess
    import sys

    code = ("import demos\nfrom demos.topics import fusion, eager\nfrom demos.engine.measurement import Run\n"
            "fusion.measure_memory(Run())\neager.measure_timeline(Run(), 2**12)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-1000:]
    assert "USDT" not in run.stderr and "profiler_start" not in run.stderr, run.stderr[-1000:]
