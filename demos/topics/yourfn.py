"""Part 7 — your own function: what torch.compile and jax.jit do with code a student types.

Two live demos. ``yourfn.inspector()``: a code box pre-filled from a preset, shape and dtype
controls, a Run button, a one-click fix per preset, and four views of the report
:func:`demos.introspection.inspector.inspect_source` makes (graphs & breaks, guards & recompiles,
kernels & code, time & numerics). The inspection runs in a worker process
(:mod:`demos.engine.worker`) with a time limit and a memory cap, so an endless loop, a loop
unrolled for minutes, or a shape too large for memory costs one line in the panel, never the
kernel. When the code box holds a preset's code unchanged, the other version (as written / with
the fix) is inspected too and the figure shows before → after. ``yourfn.exercise()``: a function and a goal the inspector
measures (one graph, one kernel, at most two compiles over lengths, the caller's tensor left
alone, jax.jit traces it); the student edits the code, Check inspects it in the same worker and
grades it, goal by goal, with the lines still in the way; the solution stays hidden until asked for.
"""
from __future__ import annotations

from typing import Any

from demos.deck import ui
from demos.deck import asks
from demos.deck.claims import Claim, Claims
from demos.deck.demo import Choice, Code, Configs, Demo, PanelSpec
from demos.engine.measurement import Run
from demos.engine.worker import Worker, shared_worker
from demos.introspection.inspector import WORKER_PRELOAD, run_isolated, start_worker_soon
from demos.topics.yourfn_exercises import EXERCISES, grade
from demos.topics.yourfn_figures import VIEWS, figure_grade, figure_view
from demos.topics.yourfn_presets import PRESETS, preset_code

VERSIONS = ("as written", "fixed")
SHAPES = ("16x1024", "256x1024", "1024x1024", "2048x2048", "4096x4096")
DTYPES = ("float32", "bfloat16", "float64")
TIMEOUT_S = 180.0   # per Run: an inspection here takes 2–15 s warm on a 2-core CPU


def worker() -> Worker:
    """The worker process every inspection here runs in (started on first use, kept warm)."""
    return shared_worker(WORKER_PRELOAD)


# =======================================================================================
# Measuring
# =======================================================================================
def _slim(report: dict[str, Any]) -> dict[str, Any]:
    """The before/after numbers of a report."""
    t, sw = report["torch"], (report.get("sweep") or {}).get("torch") or {}
    return {"graphs": t.get("graphs"), "breaks": t.get("breaks"), "kernels": t.get("kernels"),
            "eager_ops": t.get("eager_ops"), "speedup": t.get("speedup"), "compile_s": t.get("compile_s"),
            "compiles": sw.get("compiles"), "sizes": len(sw.get("calls", [])),
            "jax": (report.get("jax") or {}).get("error_type") or ("runs" if report.get("jax") else None)}


def _conditions(report: dict[str, Any]) -> str:
    """The declared state the timings ran in (the JAX half's, for a function written with JAX alone)."""
    return report["torch"].get("conditions") or (report.get("jax") or {}).get("conditions", "")


def measure_inspection(run: Run, preset: str = "chain", version: str = "as written", code: str | None = None,
                       shape: str = "1024x1024", dtype: str = "float32") -> dict[str, Any]:
    """Inspect ``code`` (the preset's, when None) in the worker; when it is a preset's code
    unchanged and the preset has a fix, the other version too (before → after)."""
    code = preset_code(preset, version) if code is None else code
    report = run_isolated(worker(), code, shape=shape, dtype=dtype, timeout_s=TIMEOUT_S, progress=run.progress)
    data: dict[str, Any] = {"report": report, "preset": preset, "version": version, "code": code.splitlines(),
                            "device": report["device"], "edited": code not in (PRESETS[preset]["code"], PRESETS[preset]["fix"]),
                            "extra": f"{report['inputs']} · inspected in a worker process, {_conditions(report)}"}
    p = PRESETS[preset]
    if p["fix"] and not data["edited"]:
        other_version = "fixed" if code == p["code"] else "as written"
        run.progress(0.9, f"and {other_version}, for before → after")
        other = run_isolated(worker(), preset_code(preset, other_version), shape=shape, dtype=dtype,
                             timeout_s=TIMEOUT_S)
        before, after = (report, other) if other_version == "fixed" else (other, report)
        data["before_after"] = {"before": _slim(before), "after": _slim(after)}
    return data


# =======================================================================================
# The declaration
# =======================================================================================
def _one_kernel(d: dict[str, Any]) -> int | None:
    return d["report"]["torch"].get("kernels")


inspector_claims = Claims(
    Claim("the pointwise chain compiles to {threshold} kernel", _one_kernel, "==", 1,
          applies=lambda d: d.get("preset") == "chain" and not d.get("edited"), key="chain_kernels",
          ask=asks.count("The preset chain, six pointwise ops (sin, mul, add, relu, exp, sub): how many kernels "
                         "does torch.compile generate?", (2, 3, 6), noun="kernel",
                         read=lambda d: _one_kernel(d) if d.get("preset") == "chain" and not d.get("edited") else None,
                         # the chain's slide asks about the chain as written; the others, and code typed in
                         # the box, show
                         when=lambda values: values.get("preset") == "chain"
                         and values.get("code", PRESETS["chain"]["code"]) == PRESETS["chain"]["code"])),
    Claim("the pointwise chain is one graph with no break", lambda d: d["report"]["torch"]["breaks"], "==", 0,
          applies=lambda d: d.get("preset") == "chain" and not d.get("edited"), key="chain_breaks"),
)

def _derived(values: dict[str, Any]) -> dict[str, Any]:
    """A preset (and its version) decide the code box and the shape unless they are set."""
    return {"code": preset_code(values["preset"], values["version"]), "shape": PRESETS[values["preset"]]["shape"]}


class WorkerPanel(ui.Panel):
    """A panel whose Run inspects in the worker: Run goes on in the background, and Stop kills
    the worker (an endless loop costs a click, not the eager run's limit). Opened on `make warm`'s
    result, it starts the worker meanwhile (the first Run pays no start)."""

    stoppable = True

    def opened_warm(self) -> None:
        start_worker_soon(worker())

    def forget_stop(self) -> None:
        worker().cancelled.clear()

    def stop_measuring(self) -> None:
        worker().cancel()


class InspectorPanel(WorkerPanel):
    """The inspector's panel: choosing a preset (or its fix) fills the code box and the shape;
    Run inspects what the box holds (a view redraws the last report, as in every Run panel)."""

    def _build(self) -> None:
        if self._built:
            return
        super()._build()
        c = self._controls
        c["preset"].observe(lambda _ch: self._fill(), names="value")
        c["version"].observe(lambda _ch: self._fill(), names="value")

    def _fill(self) -> None:
        c = self._controls
        c["code"].value = preset_code(c["preset"].value, c["version"].value)
        c["shape"].value = PRESETS[c["preset"].value]["shape"]


inspector = Demo(
    "inspector", "Your own function",
    controls=[Choice("preset", "chain", options=[(p["title"], k) for k, p in PRESETS.items()], width="300px"),
              Choice("version", "as written", options=VERSIONS, toggle=True),
              Choice("shape", "1024x1024", options=SHAPES, width="175px"),
              Choice("dtype", "float32", options=DTYPES, width="140px"),
              Choice("view", VIEWS[0], options=VIEWS, toggle=True, view=True),
              Code("code", PRESETS["chain"]["code"], label="your code", width="80%")],  # Run and Stop beside it
    # `make warm` inspects the presets the slides open on: each slide opens on its result at once
    measure=measure_inspection, figure=figure_view, claims=inspector_claims,
    configs=Configs(warm=[{}] + [{"preset": p} for p in ("item", "branch", "loop", "mutation")]),
    panel=PanelSpec("warmed", derived=_derived, worker=True, cls=InspectorPanel),
)


# =======================================================================================
# Exercises: the student edits, the inspector grades
# =======================================================================================
def measure_exercise(run: Run, exercise: str = "normalise", code: str | None = None,
                     solution: str = "hidden") -> dict[str, Any]:
    """Inspect the code box (the exercise's starting code when None) in the worker, at the
    exercise's shape, and grade it against the exercise's goals."""
    ex = EXERCISES[exercise]
    code = ex.start if code is None else code
    report = run_isolated(worker(), code, shape=ex.shape, jax=ex.jax, sweep_dim=0 if ex.sweep else None,
                          timeout_s=TIMEOUT_S, progress=run.progress)
    goals = grade(ex, report)
    t = report.get("torch") or {}
    return {"exercise": exercise, "title": ex.title, "code": code.splitlines(), "goals": goals, "edited": code != ex.start,
            "passed": all(not g["problems"] for g in goals), "hint": ex.hint,
            "solution_code": ex.solution.splitlines(), "device": report["device"],
            "summary": {"graphs": t.get("graphs"), "breaks": t.get("breaks"), "kernels": t.get("kernels")},
            "extra": f"{report['inputs']} · graded in a worker process, {_conditions(report)}"}


class ExercisePanel(WorkerPanel):
    """Choosing an exercise puts its starting code in the box; Check grades what the box holds."""

    def _build(self) -> None:
        if self._built:
            return
        super()._build()
        c = self._controls
        c["exercise"].observe(lambda _ch: setattr(c["code"], "value", EXERCISES[c["exercise"].value].start),
                              names="value")


def _unedited_start(d: dict[str, Any]) -> bool:
    return d.get("exercise") == "normalise" and not d.get("edited")


exercise_claims = Claims(
    Claim("normalise as given: .item() splits it into {threshold} graphs", lambda d: d["summary"]["graphs"], "==", 2,
          applies=_unedited_start, key="start_graphs",
          ask=asks.count("normalise calls .item() on the tensor's largest value, then divides by it. How many graphs "
                         "does torch.compile capture?", (1, 3), noun="graph",
                         read=lambda d: d["summary"]["graphs"] if _unedited_start(d) else None,
                         when=lambda values: values.get("exercise", "normalise") == "normalise"
                         and values.get("code", EXERCISES["normalise"].start) == EXERCISES["normalise"].start)),
)


exercise = Demo(
    "exercise", "Exercises the inspector grades",
    controls=[Choice("exercise", "normalise", options=[(e.title, k) for k, e in EXERCISES.items()], width="300px"),
              Choice("solution", "hidden", options=("hidden", "shown"), toggle=True, view=True),
              Code("code", EXERCISES["normalise"].start, label="your code", width="80%")],  # Run and Stop beside it
    measure=measure_exercise, figure=figure_grade, claims=exercise_claims,
    panel=PanelSpec("warmed", derived=lambda values: {"code": EXERCISES[values["exercise"]].start}, worker=True,
                    cls=ExercisePanel),
)
