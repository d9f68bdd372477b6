"""Bad input gets one line naming what is wrong, and nothing breaks (the input-validation issue).

Generated from the declarations, so a new control, setting or command is covered without a new test:

- every control of every demo refuses its bounds ±1, 0, a float, a bool, a string and None, in
  one line naming the control, before anything is measured (``Demo.run``, panel overrides, the
  live cell itself);
- every environment setting refuses a malformed value in one line naming it, and every command
  exits 2 on it before any work;
- every command that writes a file refuses an empty name, a directory, an unwritable place, an
  existing file that is not its own kind of output (unless ``--force``) and its own input;
- ``trace`` refuses events it cannot place on a timeline and says how many; an export drawn from
  a record lacking figures fails, naming them, unless placeholders are asked for; an interrupted
  panel says so and measures again on the next move.
"""
from __future__ import annotations

import functools
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

import demos  # noqa: F401  (environment before torch/JAX)
from demos import cli, topics
from demos.engine.measurement import Run
from demos.deck.demo import Choice, Demo, Float, Int, Pow2, Pow2Range
from demos.engine import settings
from demos.engine.errors import DemoError

ROOT = Path(__file__).resolve().parent.parent
DEMOS = topics.load()
IDS = [d.key for d in DEMOS]


def _one_line(text: str) -> str:
    text = text.strip()
    assert text and len(text.splitlines()) == 1, f"not one line: {text!r}"
    assert "Traceback" not in text
    return text


# ---------------------------------------------------------------------------------------
# Controls: every declared control refuses its bad values, named, before measuring
# ---------------------------------------------------------------------------------------
def test_a_default_the_control_cannot_show_is_refused_at_declaration_and_every_demo_declares_for_both_kinds():
    # a slider over powers of two cannot open at 768 or 20M: it used to snap silently to a neighbour
    with pytest.raises(ValueError, match="'width': default 768 is not a power of two from 2\\^8 to 2\\^11"):
        Pow2("width", 768, lo=8, hi=11)
    with pytest.raises(ValueError, match="'dtype': default 'float16' is not one of its options"):
        Choice("dtype", "float16", options=["float32", "bfloat16"])
    from demos import topics

    for demo in topics.load():  # the GPU declarations too, built here without a GPU
        for kind in ("cpu", "gpu"):
            controls = demo.controls(kind) if callable(demo.controls) else demo.controls
            for c in controls:
                assert c.check(c.default) == c.default or c.check(c.default) == tuple(c.default), (demo.key, kind, c)


def test_control_refusals_name_the_control_and_what_is_allowed():
    assert str(_refusal(Pow2("N", 2**15, lo=10, hi=24), 0)) == "N=0: must be a power of two from 2^10 to 2^24"
    assert str(_refusal(Int("distinct", 12, lo=2, hi=24), 1)) == "distinct=1: must be a whole number from 2 to 24"
    assert str(_refusal(Choice("H", 4, options=[1, 2, 4, 8]), 2.0)) == "H=2.0: must be one of 1, 2, 4, 8"
    assert str(_refusal(Choice("threads", 1, options=[("1", 1), ("all (2)", 2)]), True)) == \
        "threads=True: must be one of 1, 2"
    r = Pow2Range("N_range", (2**10, 2**20), lo=8, hi=24)
    assert r.check([2**8, 2**24]) == (2**8, 2**24) and r.check((2**12, 2**12)) == (2**12, 2**12)
    assert "low ≤ high" in str(_refusal(r, (2**20, 2**10)))
    assert Float("scale", 1.0, options=[0.5, 1.0, 2.0]).check(1) == 1  # the number 1 is the option 1.0


def _refusal(control, value) -> DemoError:
    with pytest.raises(DemoError) as err:
        control.check(value)
    return err.value


@pytest.mark.parametrize("kind", ["cpu", "gpu"], ids=["cpu-declarations", "accelerator-declarations"])
def test_every_declared_control_takes_its_values_and_refuses_its_bad_ones(kind):
    """Both device kinds' declarations, checked directly: each value a control offers passes its
    check unchanged; each bad value is refused in one line naming the control and the value."""
    seen = 0
    for demo in DEMOS:
        for c in demo.control_list(kind):
            for v in c.values():
                assert c.check(v) == (tuple(v) if isinstance(v, list) else v), (demo.key, c.name, v)
            c.check(c.default)
            bad = c.bad_values()
            assert len(bad) >= 5, (demo.key, c.name, bad)
            for v in bad:
                with pytest.raises(DemoError) as err:
                    c.check(v)
                line = _one_line(str(err.value))
                assert line.startswith(f"{c.name}=") and "must be" in line, (demo.key, line)
                seen += 1
    assert seen > 300


def _never(demo: Demo):
    def start(*_a, **_k):
        raise AssertionError(f"{demo.key}: measured a value that should have been refused")
    return start


@pytest.mark.parametrize("demo", DEMOS, ids=IDS)
def test_run_and_overrides_refuse_bad_values_before_measuring(demo: Demo, monkeypatch, capsys):
    monkeypatch.setattr(Run, "__init__", _never(demo))  # every measurement starts by making its Run
    monkeypatch.setattr(demo._state, "memo", None)
    monkeypatch.setenv("DEMOS_STATIC", "1")
    for c in demo.control_list():
        for v in c.bad_values():
            with pytest.raises(DemoError) as err:
                demo.run({c.name: v})
            line = _one_line(str(err.value))
            assert line.startswith(f"{demo.key}: {c.name}=") and "must be" in line, line
            with pytest.raises(DemoError, match=f"{c.name}="):
                demo.open_panel(**{c.name: v})
        # the live cell itself: one printed line, no exception, the kernel goes on
        assert demo(**{c.name: c.bad_values()[0]}) is None
        assert _one_line(capsys.readouterr().out).startswith(f"⚠ {demo.key}: {c.name}=")
    with pytest.raises(DemoError, match=r"has no control 'nope'; its controls: "):
        demo.run({"nope": 1})
    with pytest.raises(DemoError, match="values must be a dict"):
        demo.run([1, 2])  # type: ignore[arg-type]
    for bad in (-1, 0, float("nan"), float("inf"), True, "1"):  # a non-control number: a budget
        if "budget_s" in demo.recorded_values(quick=True):
            with pytest.raises(DemoError, match="budget_s=.*must be a positive number"):
                demo.run({"budget_s": bad})


# ---------------------------------------------------------------------------------------
# Settings: one parser; a malformed value is one line naming it; every command stops on it
# ---------------------------------------------------------------------------------------
def _bad_settings(tmp_path) -> dict[str, list[str]]:
    a_file = tmp_path / "a_file.txt"
    a_file.write_text("x")
    plain = tmp_path / "not_executable"
    plain.write_text("x")
    bad = {
        "DEMOS_THREADS": ["abc", "0", "-2", "1.5", "99999"],
        "DEMOS_MODEL_THREADS": ["abc", "0", "2.5"],
        "DEMOS_ALLOCATOR": ["tcmalloc", "1"],
        "DEMOS_DEVICE": ["tpu", "gpu0"],
        "DEMOS_STATIC": ["maybe", "2"],
        "DEMOS_DEBUG": ["verbose"],
        "DEMOS_PRESENT_QUIET": ["quiet"],
        "DEMOS_CACHE_DIR": [str(a_file)],
        "DEMOS_USER_CACHE_DIR": [str(a_file)],
        "DEMOS_WARMED_DIR": [str(a_file)],
        "DEMOS_JAX_CACHE_DIR": [str(a_file)],
        "DEMOS_BUILD_DIR": [str(a_file)],
        "DEMOS_CHROMIUM": [str(tmp_path / "no-such-browser"), str(plain)],
        "DEMOS_USER_PYTHONSTARTUP": [str(tmp_path / "missing.py"), str(tmp_path)],
        "DEMOS_RESULTS": [str(tmp_path / "missing.json")],
        "RESULTS": [str(tmp_path / "missing.json")],
        "DEMOS_TORCH_INDEX": ["cpu", "download.pytorch.org/whl/cpu", "https://"],
        "DEMOS_JAX_BUILD": ["rocm", "cuda11", "gpu"],
        "PORT": ["abc", "0", "99999", "80.5", "-1"],
        "PART": ["abc", "99", "1.5"],
        # other programs' variables: any text is a value (each is judged where it is used: a CXX not on
        # PATH is a backend `info` reports, a short JUPYTER_TOKEN is refused by `make present`)
        "CXX": [], "JUPYTER_TOKEN": [], "XLA_PYTHON_CLIENT_PREALLOCATE": [], "XLA_FLAGS": [], "DISPLAY": [], "WAYLAND_DISPLAY": [], "XDG_CACHE_HOME": [],
        # torch's, oneDNN's, MKL's and Inductor's own ISA caps (each program judges its value), and the
        # fingerprint the deck itself passes to its children: any text, part of the caches' fingerprint
        "ATEN_CPU_CAPABILITY": [], "ONEDNN_MAX_CPU_ISA": [], "MKL_ENABLE_INSTRUCTIONS": [], "TORCHINDUCTOR_CPP_MARCH": [],
        "DEMOS_CACHES_FOR": [],
    }
    from demos.engine.hardware import torch_or_none

    torch = torch_or_none()
    if torch is not None and not torch.cuda.is_available():
        bad["DEMOS_DEVICE"].append("cuda")  # a device this machine does not have
    return bad


def test_every_setting_has_malformed_cases(tmp_path):
    assert set(_bad_settings(tmp_path)) == set(settings.SETTINGS)


def test_each_malformed_setting_is_one_line_naming_it(tmp_path, monkeypatch):
    for name, values in _bad_settings(tmp_path).items():
        for v in values:
            monkeypatch.setenv(name, v)
            with pytest.raises(settings.SettingError) as err:
                settings.check_all()
            line = _one_line(str(err.value))
            assert line.startswith(f"{name}={v!r}: "), line
            monkeypatch.delenv(name)
    settings.check_all()  # nothing set: every default parses
    monkeypatch.setenv("PORT", "")  # empty is unset (make passes RESULTS= and PORT= through)
    assert settings.get("PORT") == 8888
    monkeypatch.setenv("DEMOS_THREADS", " 2 ")
    assert settings.get("DEMOS_THREADS") == 2


def test_a_device_the_machine_lacks_names_what_it_has(monkeypatch):
    from demos.engine.devices import torch_device
    from demos.engine.hardware import torch_or_none

    torch = torch_or_none()
    if torch is None or torch.cuda.is_available():
        pytest.skip("needs torch on a machine without CUDA")
    monkeypatch.setenv("DEMOS_DEVICE", "cuda")
    torch_device.cache_clear()
    try:
        with pytest.raises(DemoError, match=r"DEMOS_DEVICE='cuda': no CUDA device here; this machine has cpu"):
            torch_device()
    finally:
        monkeypatch.delenv("DEMOS_DEVICE")
        torch_device.cache_clear()


COMMANDS = [["info"], ["bench", "--quick"], ["record", "--quick"], ["warm"], ["check"], ["ui-bench"],
            ["walk"], ["trace", "x.json"], ["export", "pdf"]]


@pytest.mark.parametrize("argv", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_every_command_stops_on_a_malformed_setting_before_any_work(argv, tmp_path, monkeypatch, capsys):
    for name, value in (("DEMOS_THREADS", "abc"), ("PORT", "99999"), ("DEMOS_STATIC", "maybe")):
        monkeypatch.setenv(name, value)
        assert cli.main(list(argv)) == 2, (argv, name)
        out, err = capsys.readouterr()
        assert out == "" and _one_line(err).endswith(f"{name}={value!r}: must be {settings.SETTINGS[name].allowed}")
        monkeypatch.delenv(name)


def test_present_refuses_bad_ports_and_parts_in_one_line(monkeypatch, capsys):
    from demos.deck import present

    for argv, env, says in ((["--dry-run", "--port", "99999"], {}, "PORT='99999': must be a port number"),
                            (["--dry-run", "--port", "abc"], {}, "PORT='abc'"),
                            (["--dry-run"], {"PORT": "abc"}, "PORT='abc'"),
                            (["--dry-run", "--part", "abc"], {}, "PART='abc': must be a part number"),
                            (["--dry-run"], {"PART": "42"}, "PART='42'"),
                            (["--dry-run", "--bogus"], {}, "unrecognized arguments: --bogus")):
        with monkeypatch.context() as m:
            for k, v in env.items():
                m.setenv(k, v)
            with pytest.raises(SystemExit) if "--bogus" in argv else _nothing():
                rc = present.main(argv)
                assert rc == 2
        out, err = capsys.readouterr()
        assert out == "" and says in _one_line(err), (argv, err)
    assert present.main(["--dry-run", "--port", "8899", "--part", "2"]) == 0
    assert "--ServerApp.port=8899" in capsys.readouterr().out


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# ---------------------------------------------------------------------------------------
# Output files: empty, directory, unwritable, existing-foreign, same-as-input
# ---------------------------------------------------------------------------------------
def _places(tmp_path: Path, inp: Path | None = None) -> dict[str, tuple[str, str]]:
    """Bad output paths and what the refusal says about each."""
    foreign = tmp_path / "notes.json"
    foreign.write_text('{"my": "notes"}\n')
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    places = {"empty": ("", "an empty file name"),
              "directory": (str(tmp_path), "is a directory"),
              "unwritable": (str(blocker / "sub" / "out.json"), "cannot create the folder"),
              "foreign": (str(foreign), "exists and is not")}
    if inp is not None:
        places["input"] = (str(inp), "is this command's input")
    return places


def _refused(argv, says, capsys, keep: Path | None = None):
    before = keep.read_bytes() if keep is not None and keep.is_file() else None
    rc = cli.main(argv)
    out, err = capsys.readouterr()
    line = _one_line(err)
    assert rc == 2 and says in line, (argv, err)
    if before is not None:
        assert keep.read_bytes() == before, f"{argv}: {keep} was changed"
    return out, line


@pytest.mark.parametrize("place", ["empty", "directory", "unwritable", "foreign"])
def test_bench_and_record_refuse_bad_outputs_before_measuring(place, tmp_path, capsys):
    path, says = _places(tmp_path)[place]
    for argv in (["bench", "--quick", "--workload", "chain", "--json", path],
                 ["record", "--quick", "--demo", "eager.timeline", "--out", path]):
        out, line = _refused(argv, says, capsys, keep=Path(path) if path else None)
        assert "µs" not in out and "recorded" not in out, f"{argv}: measured before refusing"
        if place == "foreign":
            assert "--force" in line


@pytest.mark.parametrize("place", ["empty", "directory", "unwritable", "foreign", "input"])
def test_trace_refuses_bad_outputs_before_reading(place, tmp_path, capsys):
    trace = _write_trace(tmp_path / "run.json")
    path, says = _places(tmp_path, inp=trace)[place]
    for option in ("--json", "--png"):
        if option == "--png" and place == "foreign":
            Path(path).write_bytes(b"not a png")
        _refused(["trace", str(trace), option, path], says, capsys, keep=Path(path) if path else None)
    assert json.loads(trace.read_text())["traceEvents"], "the input trace was damaged"


def test_outputs_of_the_same_kind_are_replaced_and_force_replaces_a_foreign_file(tmp_path, capsys):
    trace = _write_trace(tmp_path / "run.json")
    out = tmp_path / "timeline.json"
    assert cli.main(["trace", str(trace), "--json", str(out)]) == 0
    first = out.read_text()
    assert json.loads(first)["schema"].startswith("jit-deck/timeline@")
    assert cli.main(["trace", str(trace), "--json", str(out)]) == 0  # its own kind: replaced
    foreign = tmp_path / "notes.png"
    foreign.write_text("my notes")
    assert cli.main(["trace", str(trace), "--png", str(foreign)]) == 2
    assert foreign.read_text() == "my notes"
    assert cli.main(["trace", str(trace), "--png", str(foreign), "--force"]) == 0
    assert foreign.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert cli.main(["trace", str(trace), "--json", str(trace), "--force"]) == 2  # never over its input
    assert not list(tmp_path.glob(".*.tmp-*")), "a temporary file was left behind"
    capsys.readouterr()


def test_walk_export_and_lists_refuse_bad_values_before_starting(tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    from demos.deck import export, walk

    for main, argv, says in (
            (walk.main, ["--out", ""], "an empty folder name"),
            (walk.main, ["--out", str(blocker)], "is a file, not a folder"),
            (walk.main, ["--parts", "abc"], "'abc' is not a number"),
            (walk.main, ["--parts", "99"], "no part 99"),
            (export.main, ["pdf", "--out", str(blocker)], "is a file, not a folder"),
            (export.main, ["pdf", "--out", ""], "an empty folder name"),
            (export.main, ["pdf", "--parts", "abc"], "'abc' is not a number"),
            (export.main, ["pdf", "--parts", ","], "give comma-separated numbers"),
            (export.main, ["pdf", "--notebook", str(tmp_path / "nope.ipynb")], "no such file"),
            (export.main, ["pdf", "--notebook", str(blocker)], "not a .ipynb notebook file"),
            (export.main, ["pdf", "--results", ""], "an empty file name"),
            (export.main, ["pdf", "--results", str(blocker)], "not valid JSON"),
            (cli.main, ["bench", "--workload", ","], "an empty list"),
            (cli.main, ["bench", "--workload", "chian"], "did you mean 'chain'"),
            (cli.main, ["warm", "--demo", "nope"], "unknown demo 'nope'"),
            (cli.main, ["warm", "--demo", ""], "an empty list"),
            (cli.main, ["check", "--demo", ","], "an empty list"),
            (cli.main, ["ui-bench", "--demo", "eager.nope"], "unknown demo"),
            (cli.main, ["info", "--bogus"], "unrecognized arguments")):
        try:
            rc = main(argv)
        except SystemExit as exc:  # argparse's usage error: one line, exit 2
            rc = exc.code
        out, err = capsys.readouterr()
        assert rc == 2 and says in _one_line(err), (argv, out, err)
        assert "preloaded" not in out, f"{argv}: slow work before refusing"


# ---------------------------------------------------------------------------------------
# Output you can trust
# ---------------------------------------------------------------------------------------
def _write_trace(path: Path, extra: list | None = None) -> Path:
    X = lambda name, ts, dur, cat="cpu_op": {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1,  # noqa: E731
                                             "ts": ts, "dur": dur, "args": {}}
    events = [X("demos::run", 100.0, 50.0, "user_annotation"), X("aten::sin", 105.0, 10.0),
              X("aten::cos", 120.0, 10.0)] + (extra or [])
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def test_trace_refuses_events_it_cannot_place_and_says_how_many(tmp_path, capsys):
    bad = [{"ph": "X", "cat": "cpu_op", "name": "aten::nan", "pid": 1, "tid": 1, "ts": 110.0, "dur": "NaN"},
           {"ph": "X", "cat": "cpu_op", "name": "aten::inf", "pid": 1, "tid": 1, "ts": "Infinity", "dur": 1.0},
           {"ph": "X", "cat": "cpu_op", "name": "aten::neg", "pid": 1, "tid": 1, "ts": 111.0, "dur": -5.0},
           {"ph": "X", "cat": "cpu_op", "name": "aten::far", "pid": 1, "tid": 1, "ts": 1e300, "dur": 1.0}]
    path = _write_trace(tmp_path / "t.json", bad)
    out_json = tmp_path / "tl.json"
    assert cli.main(["trace", str(path), "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    assert "4 events refused" in out and "nan" not in out.replace("NaN", "") and "span 25.0 µs" in out
    data = json.loads(out_json.read_text())
    assert data["counts"]["refused"] == 4 and data["counts"]["ops"] == 2 and math.isfinite(data["span_us"])
    only_bad = tmp_path / "bad.json"
    only_bad.write_text(json.dumps({"traceEvents": bad}))
    rc = cli.main(["trace", str(only_bad)])
    err = capsys.readouterr().err
    assert rc == 2 and "all 4 were refused" in _one_line(err)


def _record_with(tmp_path: Path, sections: dict) -> Path:
    from demos.engine.results import Record

    rec = Record(machine={"device": "cuda", "gpu_name": "NVIDIA Test GPU", "device_name": "NVIDIA Test GPU"},
                 created="2026-11-24T10:00:00+00:00", sections=sections)
    return rec.save(tmp_path / "rec.json")


def test_an_export_from_a_record_lacking_figures_names_them_and_fails(tmp_path, capsys):
    timeline = next(d for d in DEMOS if d.key == "eager.timeline")
    data = dict(timeline.seed_reference() or {"values": {}})
    path = _record_with(tmp_path, {"eager": {"timeline": data}})
    rc = cli.main(["export", "pdf", "--results", str(path), "--parts", "1", "--out", str(tmp_path / "pdf")])
    out, err = capsys.readouterr()
    line = _one_line(err)
    assert rc == 2 and "has no measurement for 3 figure(s): 01:eager.sync_trap, 01:firstcall.costs, 01:eager.regimes" in line, line
    assert "--placeholders" in line and "01:eager.timeline" not in line
    assert not (tmp_path / "pdf" / "01_eager_mode.pdf").exists()


def test_an_executed_part_that_drew_placeholders_is_refused_too():
    """The same check on what a part printed as it ran (``python -m demos.deck.export`` alone
    cannot see the declarations before executing)."""
    import nbformat

    from demos.deck import export

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("from demos.topics import eager\neager.regimes()")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout",
                                           text="⚠ the recorded run has no eager.regimes measurement\n")]
    nb.cells = [cell]
    assert export.placeholder_figures(nb) == ["eager.regimes"]
    with pytest.raises(DemoError, match="r.json has no measurement for 1 figure"):
        export._lacking(Path("r.json"), ["01:eager.regimes"], placeholders=False)
    export._lacking(Path("r.json"), ["01:eager.regimes"], placeholders=True)  # said, not refused


def test_an_interrupted_panel_says_so_and_measures_on_the_next_move(monkeypatch):
    calls = []

    def measure(run, n: int) -> dict:
        calls.append(n)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return {"n": n}

    def figure(data, reference):
        from demos.engine import plots

        fig, ax = plots.figure()
        ax.plot(range(data["n"]))
        return fig

    measure.__module__ = "tests.inputprobe"
    demo = Demo("interruptible", "interruptible", controls=[Choice("n", 3, options=[3, 4])], measure=measure,
                figure=figure)
    panel = demo.open_panel()
    panel._build()
    panel.update()  # the kernel's interrupt arrives mid-measurement
    assert panel.last_error and panel.last_error.startswith("interrupted") and "interrupted" in panel.status.value
    assert "measuring" not in panel.status.value and panel.renders == 0
    panel.controls["n"].value = 4  # the next move measures and draws
    panel.join(300)
    assert panel.last_error is None and panel.renders == 1 and calls == [3, 4]


def test_no_command_prints_a_traceback_in_a_real_process(tmp_path):
    """The same refusals through the real entry points (``python -m``), as a user meets them."""
    env_cases = [(["-m", "demos", "bench", "--json", ""], {}),
                 (["-m", "demos", "info"], {"DEMOS_DEVICE": "tpu"}),
                 (["-m", "demos.deck.present", "--dry-run"], {"PORT": "abc"}),
                 (["-m", "demos.deck.export", "pdf", "--parts", "abc"], {}),
                 (["-m", "demos.deck.nbtools", "lint"], {"DEMOS_THREADS": "x"})]
    import os

    for args, env in env_cases:
        r = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=300,
                           env={**os.environ, **env})
        assert r.returncode == 2 and r.stdout == "", (args, r.stdout, r.stderr)
        _one_line(r.stderr)
