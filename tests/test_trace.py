"""demos.introspection.trace: Kineto / Chrome-trace JSON → host/device lanes and counts, and
``python -m demos trace``. Runs on CPU-only machines: the CUDA traces are fixtures in
tests/fixtures/gpu/ (README.md there says where each format comes from); the CPU traces there
were recorded here by torch.profiler."""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import demos  # noqa: F401
from demos.engine.errors import DemoError
from demos.engine.workload_defs import WORKLOADS
from demos.introspection import kernel_names, profiling, trace, trace_events

ROOT = Path(__file__).resolve().parent.parent
GPU = ROOT / "tests" / "fixtures" / "gpu"
EAGER_CUDA = GPU / "eager_complex_activation_cuda.json"
COMPILED_CUDA = GPU / "compiled_complex_activation_cuda.json"
DEAD_EAGER_CUDA = GPU / "eager_mlp_dead_code_cuda.json"
DEAD_COMPILED_CUDA = GPU / "compiled_mlp_dead_code_cuda.json"
STEPS_CUDA = GPU / "scheduled_step_item_cuda.json"
CPU_EAGER = GPU / "cpu_eager_complex_activation.json"
CPU_COMPILED = GPU / "cpu_compiled_complex_activation.json"
ALL_TRACES = [EAGER_CUDA, COMPILED_CUDA, DEAD_EAGER_CUDA, DEAD_COMPILED_CUDA, STEPS_CUDA, CPU_EAGER, CPU_COMPILED]


def _check_lanes(run):
    for lane in ("host", "device"):
        evs = run["lanes"][lane]
        starts = [e["start_us"] for e in evs]
        assert starts == sorted(starts) and min(starts) >= 0.0
        for e in evs:
            assert e["dur_us"] >= 0 and e["start_us"] + e["dur_us"] <= run["span_us"] + 1e-6
    json.dumps(run)  # JSON-able


@pytest.mark.parametrize("path", ALL_TRACES, ids=lambda p: p.name)
def test_every_fixture_parses_to_the_timeline_schema(path):
    run = trace.load_timeline(path)
    assert run["schema"] == trace.SCHEMA and run["label"] == path.name
    for key in ("device", "device_lane", "lanes", "counts", "op_names", "kernel_names", "skipped_ops",
                "span_us", "wall_us", "meta"):
        assert key in run, key
    assert set(run["counts"]) >= {"ops", "kernels", "launches", "host_events", "memcpy"}
    assert run["device_lane"] == ("host-executes" if path.name.startswith("cpu_") else "cuda")
    _check_lanes(run)


# -- CPU: real traces recorded by torch.profiler on this kind of machine ------------------
def test_real_cpu_eager_trace_six_ops_run_by_the_host():
    run = trace.load_timeline(CPU_EAGER)
    assert run["device"] == "cpu" and run["device_lane"] == "host-executes"
    assert run["op_names"] == list(WORKLOADS["complex_activation"].eager_ops)
    assert run["counts"]["kernels"] == 6 and run["kernel_names"] == run["op_names"]
    assert run["counts"]["launches"] == 0 and run["counts"]["memcpy"] == 0
    assert [e["kind"] for e in run["lanes"]["host"]] == ["op"] * 6
    assert run["wall_us"] >= run["span_us"] > 0
    assert "gpu" not in run["meta"]


def test_real_cpu_compiled_trace_one_fused_cpp_kernel():
    run = trace.load_timeline(CPU_COMPILED)
    assert run["counts"]["kernels"] == 1 and run["kernel_names"][0].startswith("cpp_fused_")
    assert run["counts"]["ops"] == 0
    assert "Torch-Compiled Region: 0/0" in [e["full"] for e in run["lanes"]["host"]]


# -- CUDA: the format torch.profiler writes on a GPU ---------------------------------------
def test_cuda_eager_six_ops_six_launches_six_kernels_linked_by_correlation():
    run = trace.load_timeline(EAGER_CUDA)
    c = run["counts"]
    assert run["device"] == "cuda" and run["device_lane"] == "cuda"
    assert c["ops"] == 6 and c["launches"] == 6 and c["kernels"] == 6 and c["linked"] == 6
    assert c["memcpy"] == 0
    assert run["op_names"] == list(WORKLOADS["complex_activation"].eager_ops)
    # ATen's templated kernel names, shortened; relu runs as ATen's clamp kernel
    assert run["kernel_names"] == ["sin", "cos", "mul", "add", "mul", "clamp"]
    kernels = run["lanes"]["device"]
    # each kernel knows the op that launched it (correlation id → cudaLaunchKernel → aten op)
    assert [k["op"] for k in kernels] == run["op_names"]
    assert all(k["launch_us"] < k["start_us"] for k in kernels)  # launched before it ran
    assert len({k["corr"] for k in kernels}) == 6
    host = run["lanes"]["host"]
    assert [e["kind"] for e in host] == ["op"] * 6 + ["sync"]
    # asynchronous: the host issued the last op long before the last kernel finished
    assert host[5]["start_us"] + host[5]["dur_us"] < kernels[-1]["start_us"]
    # the GPU-side copy of the run annotation is not work; cudaStreamIsCapturing is not a launch
    assert all(e["full"] != trace.RUN_ANNOTATION for e in kernels)
    assert run["meta"]["gpu"].startswith("NVIDIA A100")
    assert "make_traces.py" in run["meta"]["source"]


def test_cuda_compiled_one_triton_kernel_from_one_driver_launch():
    run = trace.load_timeline(COMPILED_CUDA)
    c = run["counts"]
    assert c["kernels"] == 1 and c["launches"] == 1 and c["linked"] == 1 and c["ops"] == 0
    assert run["kernel_names"] == ["triton_poi_fused_add_cos_mul_relu_sin_0"]
    assert run["skipped_ops"] == ["empty_strided"]  # the output buffer: bookkeeping, not work
    assert [e["kind"] for e in run["lanes"]["host"]] == ["region", "sync"]


def test_six_kernels_become_one_and_the_span_shrinks():
    eager, compiled = trace.load_timeline(EAGER_CUDA), trace.load_timeline(COMPILED_CUDA)
    assert (eager["counts"]["kernels"], compiled["counts"]["kernels"]) == (6, 1)
    assert compiled["span_us"] < eager["span_us"] / 3


def test_cuda_dead_code_three_gemms_become_two_library_kernels():
    eager, compiled = trace.load_timeline(DEAD_EAGER_CUDA), trace.load_timeline(DEAD_COMPILED_CUDA)
    gemm = lambda run: [k for k in run["lanes"]["device"] if "gemm" in k["full"]]  # noqa: E731
    assert len(gemm(eager)) == 3 and len(gemm(compiled)) == 2
    assert eager["op_names"].count("matmul") == 3
    # the two GEMMs are cuBLAS kernels launched by aten::mm (extern_kernels.mm), the relu is Triton
    assert [k["op"] for k in gemm(compiled)] == ["mm", "mm"]
    assert compiled["kernel_names"][1] == "triton_poi_fused_relu_0"
    assert compiled["kernel_names"][0] == "ampere_bf16_s16816gemm 128x128"


def test_profiler_step_window_memcpy_and_reduction():
    run = trace.load_timeline(STEPS_CUDA)
    assert run["meta"]["root"] == "ProfilerStep#2"  # no demos::run: the last step is the window
    assert run["wall_us"] == pytest.approx(140.021)
    assert run["kernel_names"] == ["sin", "sum"]
    assert run["counts"]["memcpy"] == 1 and run["counts"]["kernels"] == 2
    copy_ev = [e for e in run["lanes"]["device"] if e["kind"] == "memcpy"][0]
    assert copy_ev["name"] == "memcpy DtoH" and copy_ev["op"] == "item"
    assert run["op_names"] == ["sin", "sum", "item"]
    # only the kept step: step 1's kernels are outside the window
    assert len(run["lanes"]["device"]) == 3


def test_flow_events_link_launches_when_args_carry_no_correlation(tmp_path):
    data = json.loads(EAGER_CUDA.read_text())
    for ev in data["traceEvents"]:
        if isinstance(ev.get("args"), dict):
            ev["args"].pop("correlation", None)
    p = tmp_path / "stripped.json"
    p.write_text(json.dumps(data))
    run = trace.load_timeline(p)
    assert run["counts"]["linked"] == 6
    assert [k["op"] for k in run["lanes"]["device"]] == run["op_names"]


def test_trace_without_annotations_uses_the_whole_main_thread(tmp_path):
    data = json.loads(EAGER_CUDA.read_text())
    data["traceEvents"] = [e for e in data["traceEvents"] if e.get("name") != trace.RUN_ANNOTATION]
    p = tmp_path / "bare.json"
    p.write_text(json.dumps(data))
    run = trace.load_timeline(p)
    assert run["wall_us"] is None and "root" not in run["meta"]
    assert run["counts"]["kernels"] == 6 and run["counts"]["ops"] == 6
    assert [e["kind"] for e in run["lanes"]["host"]] == ["op"] * 6 + ["sync"]


def test_bare_event_array_is_accepted(tmp_path):
    data = json.loads(EAGER_CUDA.read_text())
    p = tmp_path / "array.json"
    p.write_text(json.dumps(data["traceEvents"]))
    assert trace.load_timeline(p)["counts"]["kernels"] == 6


def test_gzip_trace_reads_like_the_plain_one(tmp_path):
    p = tmp_path / "eager.json.gz"
    p.write_bytes(gzip.compress(EAGER_CUDA.read_bytes()))
    a, b = trace.load_timeline(EAGER_CUDA), trace.load_timeline(p)
    assert a["lanes"] == b["lanes"] and a["counts"] == b["counts"]


# -- bad files: one line naming the file and what is wrong ---------------------------------
def _bad(tmp_path, name, content):
    p = tmp_path / name
    if isinstance(content, bytes):
        p.write_bytes(content)
    else:
        p.write_text(content)
    return p


# gzip's header holds a time: mtime=0 keeps the bytes fixed, and the ids name the file, so
# that every xdist worker collects the same tests.
BAD_FILES = [
    ("empty.json", "", "empty file"),
    ("blank.json", "  \n", "empty file"),
    ("notjson.json", "<html>hello</html>", "not valid JSON"),
    ("truncated.json", EAGER_CUDA.read_text()[:5000], "truncated?"),
    ("object.json", '{"schemaVersion": 1, "events": []}', "without 'traceEvents'"),
    ("number.json", "42", "without 'traceEvents'"),
    ("notlist.json", '{"traceEvents": {"a": 1}}', "not a list"),
    ("noevents.json", '{"traceEvents": [{"ph": "M", "name": "process_name"}]}', "no timed events"),
    ("binary.json", b"\x00\xff\xfe\x01garbage", "binary data"),
    ("truncated.json.gz", gzip.compress(EAGER_CUDA.read_bytes(), mtime=0)[:300], "truncated or corrupt gzip"),
    ("empty.json.gz", gzip.compress(b"", mtime=0), "empty once decompressed"),
]


@pytest.mark.parametrize("name, content, what", BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_bad_files_raise_one_line_naming_the_file(tmp_path, name, content, what):
    p = _bad(tmp_path, name, content)
    with pytest.raises(DemoError) as err:
        trace.load_timeline(p)
    msg = str(err.value)
    assert str(p) in msg and what in msg and "\n" not in msg


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(DemoError, match="no such file"):
        trace_events.read_trace(tmp_path / "nope.json")
    with pytest.raises(DemoError, match="is a directory"):
        trace_events.read_trace(tmp_path)


# -- names ---------------------------------------------------------------------------------
@pytest.mark.parametrize("raw, short", [
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
     "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)", "add"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::binary_internal::MulFunctor<float>, "
     "std::array<char*, 3ul> >(int, at::native::binary_internal::MulFunctor<float>, std::array<char*, 3ul>)", "mul"),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
     "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
     "unsigned int, float, 4, 4> >(at::native::ReduceOp<float, ...>)", "sum"),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, "
     "float>, unsigned int, float, 4, 4> >(at::native::ReduceOp<float, ...>)", "mean"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
     "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul> >(int, ...)",
     "gelu"),
    ("void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::"
     "direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda(float)#1}>"
     "(at::TensorIteratorBase&, ...)::{lambda(int)#1}>(int, ...)", "direct_copy"),
    ("void cudnn::cnn::conv2d_grouped_direct_kernel<false, true, false, false, 0, 0, int, float, float, float, "
     "float, float, float>(cudnn::cnn::GroupedDirectFpropParams, float const*, float const*, float*, float, float, "
     "float const*, float const*, float const*, cudnnActivationStruct)", "conv2d_grouped_direct"),
    ("void cudnn::engines_precompiled::nchwToNhwcKernel<float, float, float, false, true, (cudnnKernelDataType_t)0>"
     "(cudnn::engines_precompiled::nchw2nhwc_params_t<float>, float const*, float*)", "nchwToNhwc"),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_"
     "kernel__5x_cublas", "sm90_xmma_gemm 128x128x64"),
    ("sm86_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x32x16_stage4_warpsize2x1x1"
     "_g1_tensor16x8x8_execute_kernel__5x_cudnn", "sm86_xmma_fprop 128x32x16"),
    ("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>"
     "(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8::Params)", "cutlass s16816gemm 64x64"),
    ("nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NTN", "nvjet 128x256"),
    ("ampere_sgemm_128x64_nn", "ampere_sgemm_128x64_nn"),
    ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 32, 4, false, false, cutlass::half_t, "
     "Flash_kernel_traits<128, 128, 32, 4, cutlass::half_t> >, false, false, false, false, true, true, false>"
     "(pytorch_flash::Flash_fwd_params)", "flash_fwd"),
    ("Memcpy HtoD (Pageable -> Device)", "memcpy HtoD"),
    ("Memset (Device)", "memset"),
    ("triton_per_fused__native_batch_norm_legit_functional_add_mean_mul_0",
     "triton_per_fused__native_batch_norm_legit_functional_add_mean_mul_0"),
])
def test_library_and_aten_kernel_names_are_shortened_readably(raw, short):
    assert kernel_names.short_name(raw) == short
    assert len(kernel_names.short_name(raw)) <= 72


# -- the figure ----------------------------------------------------------------------------
def test_figure_from_recorded_cuda_traces_links_launches_to_kernels():
    eager, compiled = trace.load_timeline(EAGER_CUDA), trace.load_timeline(COMPILED_CUDA)
    fig = profiling.timeline_figure([eager, compiled], ["eager A100", "compiled A100"])
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["compiled A100\nGPU", "compiled A100\nhost", "eager A100\nGPU", "eager A100\nhost"]
    assert "eager A100: 6 kernels · compiled A100: 1 kernel" == fig._suptitle.get_text()
    assert len(ax.lines) == 6 + 1  # one thin line per linked launch → kernel
    assert "CUDA kernels" in ax.get_title(loc="left")
    from demos.engine.plots import to_png

    assert to_png(fig)[:4] == b"\x89PNG"


# -- live and recorded: one code path -------------------------------------------------------
def test_live_profile_reads_back_its_own_exported_trace(tmp_path):
    from demos.engine.workloads import prepare

    p = prepare("complex_activation", "torch_eager", {"N": 2**12}, "float32", device="cpu")
    kept = tmp_path / "live.json"
    live = profiling.profile_run(p, label="live", keep_trace=kept)
    again = trace.load_timeline(kept, label="live")
    assert again["lanes"] == live["lanes"] and again["counts"] == live["counts"]
    assert live["meta"]["torch"] and live["meta"]["workload"] == "complex_activation"


# -- python -m demos trace -------------------------------------------------------------------
def _cli(*args, cwd=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "demos", "trace", *map(str, args)], capture_output=True,
                          text=True, env=env, cwd=cwd or ROOT, timeout=300)


def test_cli_trace_prints_one_line_and_writes_figure_and_json(tmp_path):
    png, out = tmp_path / "fig" / "t.png", tmp_path / "t.json"
    r = _cli(EAGER_CUDA, "--png", png, "--json", out)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == ("eager_complex_activation_cuda.json: device lane cuda [NVIDIA A100-SXM4-40GB] · "
                        "6 kernels · 6 launches · 6 aten ops · span 732.1 µs")
    assert png.read_bytes()[:4] == b"\x89PNG"
    data = json.loads(out.read_text())
    assert data["counts"]["kernels"] == 6 and data["schema"] == trace.SCHEMA


def test_cli_trace_cpu_and_gz(tmp_path):
    gz = tmp_path / "cpu.json.gz"
    gz.write_bytes(gzip.compress(CPU_EAGER.read_bytes()))
    r = _cli(gz)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("cpu.json.gz: device lane host-executes") and "6 kernels · 0 launches" in r.stdout


@pytest.mark.parametrize("content", ["", "{not json", '{"a": 1}'])
def test_cli_bad_file_one_line_exit_2_no_traceback(tmp_path, content):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    r = _cli(bad)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("python -m demos trace: ") and len(r.stderr.strip().splitlines()) == 1
    assert str(bad) in r.stderr and "Traceback" not in r.stderr


def test_cli_checks_output_paths_before_reading(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = _cli(tmp_path / "missing.json", "--png", blocker / "sub" / "t.png")
    assert r.returncode == 2 and "cannot create the folder" in r.stderr  # not "no such file": checked first
    r = _cli(EAGER_CUDA, "--json", tmp_path)
    assert r.returncode == 2 and "is a directory" in r.stderr


def test_fixture_generator_is_reproducible(tmp_path):
    """The CUDA traces are exactly what make_traces.py writes (no hand edits drifted in)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_traces", GPU / "make_traces.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.HERE = tmp_path
    for fn in (mod.eager_complex_activation, mod.compiled_complex_activation, mod.eager_mlp_dead_code,
               mod.compiled_mlp_dead_code, mod.scheduled_step_item):
        fn()
    for p in tmp_path.glob("*_cuda.json"):
        assert p.read_text() == (GPU / p.name).read_text(), p.name
    assert len(list(tmp_path.glob("*_cuda.json"))) == 5


def test_cuda_graph_replay_unlinked_device_work_and_malformed_events():
    """A CUDA-graph replay: the host issues one cudaGraphLaunch (a runtime call directly in the
    run, recorded on another thread); a memset without a correlation id counts only inside the
    run's window; events without ts, non-dict entries and flows without an id are skipped."""
    X = lambda cat, name, ts, dur, pid=1, tid=1, **args: {  # noqa: E731
        "ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}
    events = [
        X("user_annotation", trace.RUN_ANNOTATION, 100.0, 200.0),
        X("cuda_runtime", "cudaGraphLaunch", 110.0, 8.0, tid=2, cbid=311, correlation=5),
        X("kernel", "triton_poi_fused_relu_0", 130.0, 20.0, pid=0, tid=7, correlation=5),
        X("kernel", "triton_poi_fused_add_1", 151.0, 20.0, pid=0, tid=7, correlation=6),  # replayed node
        X("gpu_memset", "Memset (Device)", 120.0, 1.0, pid=0, tid=7),
        X("gpu_memset", "Memset (Device)", 900.0, 1.0, pid=0, tid=7),  # after the run: not this call
        {"ph": "X", "cat": "kernel", "name": "no-ts", "pid": 0, "tid": 7},
        "not an event",
        {"ph": "s", "cat": "ac2g", "name": "ac2g", "pid": 1, "tid": 2, "ts": 110.0},
        {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": "x", "pid": 0, "tid": 7, "ts": "130.0"},
    ]
    run = trace.timeline_from_trace({"traceEvents": events}, label="graph replay")
    assert [(e["name"], e["kind"]) for e in run["lanes"]["host"]] == [("cudaGraphLaunch", "runtime")]
    assert run["counts"]["launches"] == 1 and run["counts"]["linked"] == 1
    assert [e["kind"] for e in run["lanes"]["device"]] == ["memcpy", "kernel", "kernel"]
    assert run["counts"]["kernels"] == 2 and run["counts"]["memcpy"] == 1
    assert run["wall_us"] == 200.0 and run["device"] == "cuda"
    assert run["counts"]["refused"] == 1 and "'no-ts'" in run["refused_events"][0]


def test_of_several_recorded_steps_the_shortest_is_the_run():
    """profile_run's one session records several steps, each a demos::run: the least disturbed
    (shortest) is drawn, live and when its kept trace file is read back."""
    X = lambda name, ts, dur: {"ph": "X", "cat": "user_annotation" if "::" in name else "cpu_op",  # noqa: E731
                               "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": {}}
    events = [X(trace.RUN_ANNOTATION, 0.0, 90.0), X("aten::sin", 5.0, 60.0),
              X(trace.RUN_ANNOTATION, 100.0, 30.0), X("aten::sin", 105.0, 10.0),
              X(trace.RUN_ANNOTATION, 200.0, 50.0), X("aten::sin", 205.0, 20.0)]
    run = trace.timeline_from_trace({"traceEvents": events})
    assert run["wall_us"] == 30.0 and [e["dur_us"] for e in run["lanes"]["host"]] == [10.0]
    assert run["meta"]["step"] == 1 and run["meta"]["steps"] == 3


@pytest.mark.slow
def test_make_record_keeps_the_raw_traces_beside_the_record(tmp_path):
    """`make record` on a GPU box keeps its real profiler traces, so a laptop can draw them."""
    import subprocess
    import sys

    from demos.engine.results import Record

    out = tmp_path / "box.json"
    run = subprocess.run([sys.executable, "-m", "demos", "record", "--quick", "--demo", "eager.timeline",
                          "--out", str(out)], capture_output=True, text=True, timeout=900,
                         cwd=Path(__file__).resolve().parent.parent)
    assert run.returncode == 0, run.stderr[-2000:]
    data = Record.load(out).sections["eager"]["timeline"]
    kept = out.parent / data["trace_file"]
    assert kept.exists() and kept.name.endswith(".json.gz") and "eager.timeline" in data["trace_file"]
    drawn = subprocess.run([sys.executable, "-m", "demos", "trace", str(kept), "--png", str(tmp_path / "t.png")],
                           capture_output=True, text=True, timeout=300, cwd=Path(__file__).resolve().parent.parent)
    assert drawn.returncode == 0 and "6 kernels" in drawn.stdout, drawn.stdout + drawn.stderr
    assert (tmp_path / "t.png").read_bytes()[:4] == b"\x89PNG"


def test_record_refuses_an_unwritable_output_before_measuring(tmp_path):
    import subprocess
    import sys
    import time

    blocked = tmp_path / "file"
    blocked.write_text("x")
    t0 = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "demos", "record", "--out", str(blocked / "r.json")],
                         capture_output=True, text=True, timeout=300, cwd=Path(__file__).resolve().parent.parent)
    assert run.returncode == 2 and "cannot create the folder" in run.stderr and "Traceback" not in run.stderr
    assert time.perf_counter() - t0 < 60  # refused at once, nothing measured
