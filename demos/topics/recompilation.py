"""Part 5 — the bill: compile latency (cold vs warm cache) and recompilation, counted.

Three live demos, each a :class:`demos.deck.demo.Demo` of a ``measure_*`` here, a ``figure_*``
in :mod:`demos.topics.recompilation_figures` and the slides' claims, in the slides' order:

- ``compile_latency()``  first call vs steady state, cold cache vs warm cache, each in a fresh
  process with its own compile caches (:mod:`demos.engine.coldcompile`); the break-even call
  count at the measured speedup. A cold demo: the panel shows what ``make warm`` measured and
  measures again on Run.
- ``recompile_live()``   a shape slider: every move is one call of a compiled step; the
  per-call latency timeline marks compile spikes, counts compiles and shows the reason of each
  recompile (the failed guard for torch, the cache-miss explanation for JAX). Auto-sweep walks a
  sequence of lengths, redrawing as calls happen; Reset starts the sessions afresh.
- ``compare_modes()``    the same sweep under every mode: ``dynamic=False``, automatic dynamic
  shapes, ``mark_dynamic``, padding to buckets, eager; JAX ``jit`` per shape and bucketed.

``verdict()`` writes the judgment slide's numbers from this session's measurements. Numerics
are :mod:`demos.topics.numerics`.

How compiles are counted (torch 2.13 / JAX 0.10): torch — a backend that counts the graphs it
hands to Inductor (:class:`demos.introspection.hooks.InductorBackend`); JAX —
``jitted._cache_size()`` before/after each call; the reasons and the recompile-limit warning come
from their logs (:mod:`demos.introspection.dynamo`). Each session compiles a *fresh* copy of the
step (``Run.fresh``: a code object and a name of its own), so Dynamo's per-code cache, recompile
limit and automatic-dynamic state start clean: re-running a cell gives the same counts without
resetting anything the other parts compiled.
"""
from __future__ import annotations

import html
import math
import numbers
import random
import statistics
import time
import uuid
from dataclasses import asdict, dataclass
from typing import Any, Callable

from demos.deck.claims import Claim, Claims, Each
from demos.deck.demo import Choice, Configs, Demo, Drawn, Int
from demos.deck.ui import Panel, recorded_only
from demos.engine import coldcompile, plots
from demos.engine.devices import device_kind, require_jax, require_torch, set_threads, torch_device
from demos.engine.errors import DemoError, one_line
from demos.engine.measurement import Progress, Run
from demos.engine.timing import sync_for
from demos.introspection import dynamo
from demos.introspection.hooks import InductorBackend
from demos.topics.recompilation_figures import (MODE_SHORT, _fmt_calls, figure_compile_latency,
                                                figure_modes, figure_timeline, mode_label, summarize)

# ---------------------------------------------------------------------------------------
# 1. Compile latency: cold vs warm cache, each in a fresh process
# ---------------------------------------------------------------------------------------
LATENCY_WORKLOADS = ("complex_activation", "chain", "mlp_block")


def break_even(compile_s: float, eager_s: float, compiled_s: float) -> float:
    """Calls until the compile time is repaid at the measured speedup (inf: never)."""
    gain = eager_s - compiled_s
    if gain <= 0:
        return math.inf
    return compile_s / gain


def measure_compile_latency(run: Run, workload: str = "complex_activation", backends: tuple[str, ...] | None = None,
                            dtype: str = "float32", params: dict | None = None,
                            budget_s: float = 0.3) -> dict[str, Any]:
    """Cold cache (fresh process, empty temporary cache dirs) then warm cache (fresh process, the
    caches the cold run just filled): first call, its split, steady state, break-even."""
    from demos.engine.devices import jax_or_none
    from demos.engine.workloads import get

    w = get(workload)
    if backends is None:
        backends = ("torch_compile", "jax_jit") if jax_or_none() is not None else ("torch_compile",)
    spec = {"workload": w.name, "backends": list(backends), "dtype": dtype, "params": params,
            "budget_s": budget_s}
    result: dict[str, Any] = {"workload": w.name, "dtype": dtype, "backends": {}, "params": params}
    cold, warm = coldcompile.cold_then_warm(spec, run.progress)
    for b in backends:
        c, wm = cold.get(b, {}), warm.get(b, {})
        if "error" in c or "error" in wm:
            result["backends"][b] = {"error": c.get("error") or wm.get("error")}
            continue
        entry = {"cold": c, "warm": wm}
        steady = statistics.median([c["steady_s"], wm["steady_s"]])
        eager = statistics.median([c["eager_s"], wm["eager_s"]])
        entry["steady_s"], entry["eager_s"] = steady, eager
        entry["speedup"] = eager / steady if steady > 0 else None
        for k in ("cold", "warm"):
            cs = max(entry[k]["first_s"] - steady, 0.0)
            entry[k]["compile_s"] = cs
            entry[k]["break_even_calls"] = break_even(cs, eager, steady)
        result["backends"][b] = entry
        result["params"] = c.get("params")
    sizes = ", ".join(f"{k}={v:,}" for k, v in (result["params"] or {}).items())
    result["extra"] = f"{w.name} {sizes}, {dtype}, fresh processes"
    return result


def _torch_latency(d: dict[str, Any]) -> dict[str, Any] | None:
    t = d["backends"].get("torch_compile", {})
    return None if "error" in t else t


def _xla_compile_faster_warm(d: dict[str, Any]) -> bool:
    j, key = d["backends"]["jax_jit"], "XLA compile (or cache load)"
    return "error" not in j and j["cold"]["parts"][key] > j["warm"]["parts"][key]


# The compile-latency slide: the first call pays for compiling, a warm cache much less
latency_claims = Claims(
    Claim("torch.compile: the first call pays for compiling (cold: over {threshold:g} steady-state calls)",
          lambda d: _torch_latency(d)["cold"]["first_s"] / _torch_latency(d)["steady_s"], ">", 10, key="first_call"),
    Claim("torch.compile: a warm disk cache pays much less (cold first call over {threshold:g}× the warm one)",
          lambda d: _torch_latency(d)["cold"]["first_s"] / _torch_latency(d)["warm"]["first_s"], ">", 1.5,
          key="warm_cache"),
    Claim("jax.jit: XLA's compile step is quicker from the warm cache than cold", _xla_compile_faster_warm,
          applies=lambda d: d["backends"].get("jax_jit") is not None, key="jax_warm_cache"),
)


compile_latency = Demo(
    "compile_latency", "Compile latency: cold vs warm cache",
    controls=[Choice("workload", "complex_activation", options=LATENCY_WORKLOADS)],
    measure=measure_compile_latency, figure=figure_compile_latency, match=("workload",),
    pacing="cold",  # a compile from scratch takes ~10–30 s on a CPU: the slide opens on `make warm`'s result
    claims=latency_claims,
)


# ---------------------------------------------------------------------------------------
# 2. Recompilation: a session is one mode, a fresh step, every call recorded
# ---------------------------------------------------------------------------------------
# The step function whose input length changes from call to call (a sequence batch). A session
# compiles a fresh copy of it (``Run.fresh``): its source stays this file's, so Dynamo finds it
# (torch 2.11 wraps a function without findable source in one shared frame, whose recompile
# budget every session then shared, pytorch#124269).
def torch_step() -> Callable:
    torch = require_torch()

    def step(x):
        h = torch.nn.functional.gelu(x * 1.5 + 0.5)
        return (h - h.mean(-1, keepdim=True)).sum(-1)

    return step


def jax_step() -> Callable:
    jax = require_jax()

    def step(x):
        h = jax.nn.gelu(x * 1.5 + 0.5)
        return (h - h.mean(-1, keepdims=True)).sum(-1)

    return step


MODES = ("static", "auto", "mark_dynamic", "bucket", "eager", "jax_jit", "jax_bucket")


def check_mode(mode: str) -> str:
    if mode not in MODES:
        from demos.engine.errors import unknown_name

        raise unknown_name("mode", mode, MODES)
    return mode


def sweep_defaults(kind: str | None = None) -> dict[str, int]:
    """Batch B and width D of the step's input (B, S, D); buckets and the slider range for S."""
    kind = kind or device_kind()
    if kind == "gpu":
        return {"B": 32, "D": 1024, "S_min": 16, "S_max": 512, "bucket": 128}
    return {"B": 4, "D": 64, "S_min": 16, "S_max": 256, "bucket": 64}


def sweep_lengths(distinct: int = 12, repeats: int | None = None, seed: int = 0,
                  kind: str | None = None) -> list[int]:
    """A deterministic 'training loop' of varied sequence lengths: ``distinct`` new lengths in
    shuffled order, then ``repeats`` more calls drawn from the lengths already seen."""
    d = sweep_defaults(kind)
    if not 1 <= distinct <= d["S_max"] - d["S_min"]:
        raise DemoError(f"distinct lengths must be between 1 and {d['S_max'] - d['S_min']}")
    rng = random.Random(seed)
    seen = rng.sample(range(d["S_min"] + 1, d["S_max"] + 1), distinct)
    repeats = distinct if repeats is None else repeats
    return seen + [rng.choice(seen) for _ in range(repeats)]


def bucket_of(S: int, bucket: int) -> int:
    """The padded length: the next multiple of ``bucket`` at or above S."""
    if S <= 0 or bucket <= 0:
        raise DemoError(f"lengths and buckets must be positive (S={S}, bucket={bucket})")
    return int(math.ceil(S / bucket) * bucket)


@dataclass
class Event:
    i: int
    S: int  # requested length
    run_S: int  # length actually run (padded under bucketing)
    seconds: float
    compiled: bool = False
    symbolic: bool = False  # the compiled graph has symbolic shapes
    fallback: bool = False  # ran eager because the recompile limit was hit
    reason: str = ""


class Session:
    """One mode of the recompilation demo: a fresh compiled step, its calls and compiles."""

    def __init__(self, mode: str = "static", B: int | None = None, D: int | None = None,
                 bucket: int | None = None, device: str | None = None):
        self.mode = check_mode(mode)
        d = sweep_defaults()
        self.B = d["B"] if B is None else B
        self.D = d["D"] if D is None else D
        self.bucket = d["bucket"] if bucket is None else bucket
        self.framework = "jax" if mode.startswith("jax") else "torch"
        self.device = device or torch_device()
        self.events: list[Event] = []
        self.compiles = 0
        self.limit_hit_at: int | None = None
        self.limit_message = ""
        self.compiled_lengths: set[int] = set()
        self._inputs: dict[int, Any] = {}
        if self.framework == "torch":
            torch = require_torch()
            set_threads()
            self.limit = dynamo.recompile_limit()
            self.sync = sync_for("torch_eager", self.device)
            # a name of its own per session: Dynamo keeps automatic-dynamic state per file, line and name
            fn = Run.fresh(torch_step(), f"{mode}_{uuid.uuid4().hex[:8]}")
            if mode == "eager":
                self._fn = fn
            else:
                dynamic = False if mode in ("static", "bucket") else None
                self._fn = torch.compile(fn, backend=InductorBackend(on_graph=self._on_graph), dynamic=dynamic)
        else:
            jax = require_jax()
            self.limit = None
            self.sync = sync_for("jax_jit")
            # a new function object (empty jit caches), named per mode: the name is in XLA's
            # persistent-cache key, which `make warm` fills
            self._fn = jax.jit(Run.fresh(jax_step(), mode))
        self._symbolic_pending = False

    # torch: each graph the backend is asked to compile (then Inductor compiles it)
    def _on_graph(self, _gm, example_inputs) -> None:
        self.compiles += 1
        self._symbolic_pending = dynamo.symbolic(example_inputs)

    def _input(self, S: int):
        if S not in self._inputs:
            torch = require_torch()
            g = torch.Generator().manual_seed(S)
            x = torch.randn(self.B, S, self.D, generator=g)
            if self.framework == "torch":
                self._inputs[S] = x.to(self.device)
            else:
                jax = require_jax()
                self._inputs[S] = jax.device_put(x.numpy())
            if len(self._inputs) > 64:
                self._inputs.pop(next(iter(self._inputs)))
        return self._inputs[S]

    def _padded(self, S: int) -> int:
        return bucket_of(S, self.bucket) if self.mode in ("bucket", "jax_bucket") else S

    def call(self, S: int) -> Event:
        """Run the step once on a (B, S, D) input; record latency, compiles and the reason."""
        if isinstance(S, bool) or not isinstance(S, numbers.Integral) or S <= 0:
            raise DemoError(f"sequence length must be a positive whole number (got {S!r})")
        run_S = self._padded(S)
        x = self._input(run_S)
        if self.framework == "torch":
            ev = self._call_torch(S, run_S, x)
        else:
            ev = self._call_jax(S, run_S, x)
        self.events.append(ev)
        return ev

    def _call_torch(self, S: int, run_S: int, x) -> Event:
        torch = require_torch()
        before = self.compiles
        patch = {}
        if hasattr(torch._dynamo.config, "automatic_dynamic_local_pgo"):
            patch["automatic_dynamic_local_pgo"] = False  # no cross-run profile: clean state
        with torch._dynamo.config.patch(**patch), dynamo.torch_recompile_log() as log:
            if self.mode == "mark_dynamic":
                torch._dynamo.mark_dynamic(x, 1)
            t0 = time.perf_counter()
            out = self._fn(x)
            self.sync(out)
            dt = time.perf_counter() - t0
        compiled, fallback = self.compiles > before, False
        reason, limit_message = dynamo.read_recompiles(log.messages)
        if limit_message and self.limit_hit_at is None:
            self.limit_hit_at, self.limit_message = len(self.events), limit_message
        if compiled:
            self.compiled_lengths.add(run_S)
            if not reason:
                reason = "first call: nothing compiled yet"
        elif self.limit_hit_at is not None and self.mode in ("static", "bucket") and run_S not in self.compiled_lengths:
            fallback = True
            reason = f"recompile limit ({self.limit}) reached: runs eager, silently"
        return Event(len(self.events), S, run_S, dt, compiled, compiled and self._symbolic_pending, fallback, reason)

    def _call_jax(self, S: int, run_S: int, x) -> Event:
        before = self._fn._cache_size()
        with dynamo.jax_miss_log() as log:
            t0 = time.perf_counter()
            out = self._fn(x)
            self.sync(out)
            dt = time.perf_counter() - t0
        compiled = self._fn._cache_size() > before
        reason = ""
        if compiled:
            self.compiles += 1
            self.compiled_lengths.add(run_S)
            reason = dynamo.read_jax_misses(log.messages) or f"new input shape ({self.B}, {run_S}, {self.D})"
        return Event(len(self.events), S, run_S, dt, compiled, False, False, reason)

    # summary -----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "label": mode_label(self.mode), "B": self.B, "D": self.D,
                "bucket": self.bucket if self.mode in ("bucket", "jax_bucket") else None, "limit": self.limit,
                "compiles": self.compiles, "limit_hit_at": self.limit_hit_at, "limit_message": self.limit_message,
                "events": [asdict(e) for e in self.events], "summary": summarize(self.events),
                "extra": _sizes_text({"B": self.B, "D": self.D})}


def run_sweep(mode: str, lengths: list[int], progress: Progress | None = None,
              session: Session | None = None, on_call: Callable[[Session], None] | None = None) -> Session:
    """Call a fresh session of ``mode`` once per length (clean state every time)."""
    s = session or Session(mode)
    for k, S in enumerate(lengths):
        s.call(S)
        if on_call:
            on_call(s)
        if progress:
            progress((k + 1) / len(lengths), f"{MODE_SHORT[mode]}: call {k + 1}/{len(lengths)}, S={S}, "
                                             f"{s.compiles} compiles")
    return s


def available_modes() -> list[str]:
    from demos.engine.devices import jax_or_none

    return [m for m in MODES if not m.startswith("jax") or jax_or_none() is not None]


def _sizes_text(d: dict) -> str:
    return f"step on (B={d['B']}, S, D={d['D']}) float32"


def measure_live(run: Run, mode: str = "static", S: int | None = None,
                 session: Session | None = None) -> dict[str, Any]:
    """The live panel's measurement. With a ``session`` (the panel's, kept across slider moves):
    one call at length S. Without: a fresh session of ``mode`` over the sweep lengths, the
    timeline the headless export, ``make record`` and a recorded run draw."""
    if session is not None:
        session.call(S)
        return session.to_dict()
    return run_sweep(check_mode(mode), sweep_lengths(), run.progress).to_dict()


class LivePanel(Panel):
    """The recompilation panel: a shape slider that calls the step once per move (on the
    mode's session, kept until Reset), plus Auto-sweep (a fresh session walks the sweep
    lengths, redrawing as calls happen) and Reset. Headless, it draws a full sweep."""

    def __init__(self, demo, specs, initial: dict | None = None):
        super().__init__(demo, specs, initial)
        self.sessions: dict[str, Session] = {}
        self.lengths = sweep_lengths()
        self._last_S: int | None = None
        self._full_sweep = False

    def session(self, mode: str) -> Session:
        """The mode's session (fresh on first use and after Reset)."""
        if mode not in self.sessions:
            self.sessions[mode] = Session(mode)
        return self.sessions[mode]

    def _call(self, s: Session, S: int) -> dict[str, Any]:
        run = Run()  # the call needs no memory but the session's
        with run.declared() as cond:  # one call of a kept session: threads chosen, conditions read
            data = self.demo.measure(run, mode=s.mode, S=S, session=s)
        self.last_conditions = cond
        data["stamp"] = plots.live_stamp(data["extra"], cond.stamp())
        return data

    def _figure(self, data: dict[str, Any]):
        data.setdefault("stamp", plots.live_stamp(data["extra"]))
        return figure_timeline(data, self.demo.reference(self.values()))

    def render_fn(self, values: dict[str, Any], progress: Progress) -> Drawn:
        if self._full_sweep or recorded_only():
            return self.demo.render(values, progress)
        s = self.session(check_mode(values["mode"]))
        S = values["S"]
        # one call per slider move (a mode switch shows that mode's session as it stands)
        called = S != self._last_S or not s.events
        data = self._call(s, S) if called else s.to_dict()
        self._last_S = S
        return Drawn(self._figure(data), self.last_conditions if called else None, None)

    def render_static(self) -> None:
        """Headless: the default mode's full sweep (or the recorded one), not a single call."""
        self._full_sweep = True
        try:
            super().render_static()
        finally:
            self._full_sweep = False

    def reset(self) -> None:
        self.sessions.clear()
        self._last_S = None
        if self._built:
            self.update()

    def sweep(self, lengths: list[int] | None = None, redraw_s: float = 0.5) -> Session:
        """Auto-sweep: call the current mode once per length on a fresh session, redrawing the
        timeline as calls happen (at most every ``redraw_s`` seconds, and at the end)."""
        mode = self.values()["mode"]
        self.sessions.pop(mode, None)
        lengths = lengths or self.lengths
        self.last_error = None
        last_draw = time.perf_counter()
        s = None
        try:
            s = self.session(mode)
            for k, S in enumerate(lengths):
                data = self._call(s, S)
                self.progress((k + 1) / len(lengths), f"call {k + 1}/{len(lengths)}: S={S} · {s.compiles} compiles")
                if time.perf_counter() - last_draw >= redraw_s or k == len(lengths) - 1:
                    self._draw(self._figure(data))
                    last_draw = time.perf_counter()
        except Exception as exc:  # one line, the panel survives
            self.last_error = one_line(exc)
        if self._built:
            self.progress_bar.layout.visibility = "hidden"
            self.status.value = (f"<span style='color:#b00020'>⚠ {html.escape(self.last_error)}</span>"
                                 if self.last_error else f"sweep done: {s.compiles} compiles")
        self._last_S = lengths[-1] if lengths else None
        return s

    def _draw(self, fig) -> None:
        """Redraw in place mid-sweep (the base panel redraws only when a measurement ends)."""
        self.last_png = plots.to_png(fig)
        self.renders += 1
        if self._built:
            from IPython.display import Image, clear_output, display

            with self.out:
                clear_output(wait=True)
                display(Image(data=self.last_png, format="png"))

    def _build(self) -> None:
        if self._built:
            return
        super()._build()
        import ipywidgets as w

        self.sweep_button = w.Button(description="Auto-sweep", button_style="warning", icon="forward",
                                     layout=w.Layout(width="150px"))
        self.sweep_button.on_click(lambda _b: self.sweep())
        self.reset_button = w.Button(description="Reset", icon="refresh", layout=w.Layout(width="100px"))
        self.reset_button.on_click(lambda _b: self.reset())
        row = self.widget.children[0]
        row.children = tuple(row.children) + (self.sweep_button, self.reset_button)


def _compiled(s: dict[str, Any]) -> list[dict]:
    return [e for e in s["events"] if e["compiled"]]


def _shapes(s: dict[str, Any]) -> int:
    """Distinct lengths run (buckets, when padded)."""
    return len({e["run_S"] for e in s["events"]})


def _static_limit(s: dict[str, Any]) -> int | None:
    """The recompile limit, if the session compiled once per distinct shape up to it."""
    n, limit = s["compiles"], s["limit"]
    return limit if n == min(_shapes(s), limit) == len({e["run_S"] for e in _compiled(s)}) else None


def _silent_fallback(s: dict[str, Any]) -> bool:
    hit, evs = s["limit_hit_at"], s["events"]
    return hit is not None and any(e["fallback"] for e in evs) and not any(e["compiled"] for e in evs[hit:])


def _compiles_no_fallback(s: dict[str, Any]) -> int | None:
    return None if any(e["fallback"] for e in s["events"]) else s["compiles"]


def _mode(*modes: str) -> Callable[[dict], bool]:
    return lambda s: s["mode"] in modes


# What the recompilation slides say of one mode over a sweep (a ``Session.to_dict()``)
session_claims = Claims(
    Claim("dynamic=False compiles once per distinct shape until the recompile limit ({threshold})", _static_limit,
          "==", 8, applies=_mode("static"), key="static_limit"),
    Claim("each recompile names the failed guard (a size mismatch)",
          lambda s: all("size mismatch" in e["reason"] for e in _compiled(s)[1:]), applies=_mode("static"),
          key="static_reason"),
    Claim("after the limit, new shapes run eager, silently: no more compiles", _silent_fallback,
          applies=lambda s: s["mode"] == "static" and _shapes(s) > s["limit"], key="static_fallback"),
    Claim("automatic dynamic: at most {threshold} compiles, the second with a symbolic length",
          lambda s: s["compiles"] if s["compiles"] < 2 or _compiled(s)[1]["symbolic"] else None, "<=", 2,
          applies=_mode("auto"), key="auto"),
    Claim("jax.jit compiles once per distinct shape, each miss naming the shape that changed",
          lambda s: s["compiles"] == _shapes(s) and all("now " in e["reason"] and "before " in e["reason"]
                                                         for e in _compiled(s)[1:]),
          applies=_mode("jax_jit"), key="jax_jit"),
    Claim("mark_dynamic: {threshold} compile", _compiles_no_fallback, "==", 1, applies=_mode("mark_dynamic"),
          key="mark_dynamic"),
    Claim("eager: {threshold} compiles", _compiles_no_fallback, "==", 0, applies=_mode("eager"), key="eager"),
    Claim("pad to buckets: one compile per bucket", lambda s: _compiles_no_fallback(s) == _shapes(s),
          applies=_mode("bucket"), key="bucket"),
    Claim("jax.jit + buckets: one compile per bucket", lambda s: _compiles_no_fallback(s) == _shapes(s),
          applies=_mode("jax_bucket"), key="jax_bucket"),
)


def mode_claims(mode: str, s: dict[str, Any]) -> dict[str, bool]:
    """What the recompilation slides say of one mode over a sweep (``s``: ``Session.to_dict()``)."""
    return session_claims({**s, "mode": mode})


def _live_controls(kind: str) -> list:
    d = sweep_defaults(kind)
    return [Int("S", 64, label="sequence length S", lo=d["S_min"], hi=d["S_max"], view=True),
            Choice("mode", "static", options=[(MODE_SHORT[m], m) for m in available_modes()])]


def _warm_live(demo: Demo) -> None:
    """The first call of every mode at the slider's default length (the sweep lengths are
    warmed by compare_modes): the persistent caches make the slide's first compile quick."""
    S = demo.defaults()["S"]
    for m in available_modes():
        run_sweep(m, [S])


recompile_live = Demo(
    "recompile_live", "Recompilation, live",
    # S: each move is one call on the panel's session; for a recorded/headless run it only
    # names the slider (the measurement is the mode's full sweep)
    controls=_live_controls, measure=measure_live, figure=figure_timeline, match=("mode",),
    panel_class=LivePanel, configs=Configs(warm=_warm_live), claims=session_claims,
)


# ---------------------------------------------------------------------------------------
# 3. Every mode on the same sweep
# ---------------------------------------------------------------------------------------
def measure_modes(run: Run, distinct: int = 12, repeats: int | None = None,
                  modes: tuple[str, ...] | list[str] | None = None) -> dict[str, Any]:
    """The same sweep (``sweep_lengths(distinct, repeats)``) under every mode: compiles,
    compile seconds, steady state, total."""
    lengths = sweep_lengths(distinct, repeats)
    modes = list(modes or available_modes())
    sizes = sweep_defaults()
    out: dict[str, Any] = {"lengths": lengths, "sizes": sizes, "modes": {}, "errors": {},
                           "extra": f"{_sizes_text(sizes)}, {len(lengths)} calls"}
    for k, m in enumerate(modes):
        sub = lambda f, msg, k=k: run.progress((k + f) / len(modes), msg)  # this mode's share of the bar
        try:
            out["modes"][m] = run_sweep(m, lengths, sub).to_dict()
        except DemoError:
            raise
        except Exception as exc:
            out["errors"][m] = one_line(exc)
    out["limit"] = dynamo.recompile_limit()
    return out


def _trap(d: dict[str, Any]) -> bool:
    total = {m: s["summary"]["total_s"] for m, s in d["modes"].items()}
    others = [total[m] for m in ("eager", "auto", "mark_dynamic") if m in total]
    return "static" in total and len(others) == 3 and total["static"] > max(others)


# Every mode's claims, and the recurring trap: dynamic=False costs more than the rest
modes_claims = Claims(
    Claim("every mode ran the sweep", lambda d: not d["errors"], key="ran"),
    Each(session_claims, lambda d: [{**s, "mode": m} for m, s in d["modes"].items()]),
    Claim("the recurring trap: dynamic=False's sweep takes longer than eager's, auto dynamic's and mark_dynamic's",
          _trap, key="trap"),
)


compare_modes = Demo(
    "compare_modes", "Every mode on the same sweep",
    controls=[Int("distinct", 12, label="distinct lengths", lo=2, hi=24)],
    measure=measure_modes, figure=figure_modes, match=("distinct",), pacing="warmed",
    configs=Configs(quick={"distinct": 6}), claims=modes_claims,
)


# ---------------------------------------------------------------------------------------
# The judgment slide
# ---------------------------------------------------------------------------------------
def verdict_text(latency: dict[str, Any] | None = None, modes: dict[str, Any] | None = None) -> str:
    """The judgment slide's numbers (one short HTML block), from the data the two panels above
    show: each demo's latest measurement in this kernel, else the result `make warm` kept that
    the panel opens on (:meth:`Demo.shown`)."""
    latency = latency or compile_latency.shown()
    modes = modes or compare_modes.shown()
    lines = []
    if latency:
        for b, e in latency["backends"].items():
            if "error" in e:
                continue
            lines.append(f"{plots.label(b)} on {latency['workload']}: {e['speedup']:.2f}× vs eager; compile repaid after "
                         f"{_fmt_calls(e['cold']['break_even_calls'])} (cold cache), "
                         f"{_fmt_calls(e['warm']['break_even_calls'])} (warm cache)")
    if modes and modes["modes"].get("eager", {}).get("summary", {}).get("total_s"):
        eager = modes["modes"]["eager"]["summary"]["total_s"]
        for m in ("static", "auto", "bucket", "jax_jit"):
            if m in modes["modes"]:
                s = modes["modes"][m]["summary"]
                lines.append(f"{MODE_SHORT[m]}: {s['compiles']} compiles, sweep took "
                             f"{s['total_s'] / eager:,.1f}× eager's time")
    if not lines:
        return "<p>Run the compile-latency and every-mode cells above to fill this in.</p>"
    items = "".join(f"<li>{html.escape(x)}</li>" for x in lines)
    return f"<ul class='jitdeck-verdict' style='font-size:18px'>{items}</ul>"


def verdict() -> None:
    """Judgment slide: the measured numbers behind 'compile or stay eager' on this machine."""
    from IPython.display import HTML, display

    display(HTML(verdict_text() + f"<p style='font-size:12px;color:#555'>{html.escape(plots.live_stamp())}</p>"))
