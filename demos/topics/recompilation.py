"""Part 5 — the bill: compile latency (cold vs warm cache) and recompilation, counted.

Three live demos, each a :class:`demos.deck.demo.Demo` of a ``measure_*``, a ``figure_*`` and
the slides' claims:

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
hands to Inductor; JAX — ``jitted._cache_size()`` before/after each call; the reasons and the
recompile-limit warning come from their logs (:mod:`demos.introspection.dynamo`). Each session
compiles a *fresh* step function, so Dynamo's per-code cache, recompile limit and
automatic-dynamic state start clean: re-running a cell gives the same counts without
resetting anything the other parts compiled.
"""
from __future__ import annotations

import html
import linecache
import math
import numbers
import random
import statistics
import time
import uuid
from dataclasses import asdict, dataclass
from typing import Any, Callable

from demos.deck.claims import Claim, Claims, Each
from demos.deck.demo import Choice, Demo, Int, Progress
from demos.deck.ui import Panel, recorded_only
from demos.engine import coldcompile, plots
from demos.engine.devices import device_kind, require_jax, require_torch, set_threads, torch_device
from demos.engine.errors import DemoError, one_line
from demos.engine.timing import fmt_seconds, sync_for
from demos.introspection import dynamo
from demos.engine.protocol import declared_state, kept

PART = 5

# ---------------------------------------------------------------------------------------
# The step function whose input length changes from call to call (a sequence batch).
# ---------------------------------------------------------------------------------------
TORCH_STEP_SRC = """
def step(x):
    h = torch.nn.functional.gelu(x * 1.5 + 0.5)
    return (h - h.mean(-1, keepdim=True)).sum(-1)
"""
JAX_STEP_SRC = """
def step(x):
    h = jax.nn.gelu(x * 1.5 + 0.5)
    return (h - h.mean(-1, keepdims=True)).sum(-1)
"""

MODES = ("static", "auto", "mark_dynamic", "bucket", "eager", "jax_jit", "jax_bucket")
MODE_LABELS = {"static": "torch.compile(dynamic=False)", "auto": "torch.compile (default: automatic dynamic)",
               "mark_dynamic": "torch.compile + mark_dynamic",
               "bucket": "torch.compile(dynamic=False) + pad to buckets",
               "eager": "torch eager", "jax_jit": "jax.jit", "jax_bucket": "jax.jit + pad to buckets"}
MODE_SHORT = {"static": "dynamic=False", "auto": "auto dynamic", "mark_dynamic": "mark_dynamic",
              "bucket": "buckets", "eager": "eager", "jax_jit": "jax.jit", "jax_bucket": "jax buckets"}
MODE_COLOR = {"static": plots.PALETTE["torch_compile"], "auto": "#56B4E9", "mark_dynamic": "#332288",
              "bucket": "#117733", "eager": plots.PALETTE["torch_eager"], "jax_jit": plots.PALETTE["jax_jit"],
              "jax_bucket": "#44AA99"}
COMPILE_COLOR = plots.PALETTE["accent"]
FALLBACK_COLOR = plots.PALETTE["torch_eager"]


def mode_label(mode: str) -> str:
    return MODE_LABELS.get(mode, mode)


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


def _fresh(src: str, name: str, glb: dict) -> Callable:
    """A new function object with its own code object *and file name*: Dynamo's cache and its
    automatic-dynamic state (kept per file, line and name, so ``codegen.fresh_copy`` would
    share it between sessions) start empty for it."""
    ns = dict(glb)
    filename = f"<jitdeck-{name}-{uuid.uuid4().hex[:10]}>"
    # its lines in linecache, so inspect.getsourcefile finds a source: torch 2.11 (still on GPU
    # machines) wraps a function without one in external_utils.wrap_inline, whose one shared code
    # object then carries every session's recompile budget; once dynamic=False's sweep used it up,
    # every later mode ran eager with 0 compiles (pytorch#124269, fixed by 2.13)
    linecache.cache[filename] = (len(src), None, src.splitlines(keepends=True), filename)
    exec(compile(src, filename, "exec"), ns)
    return ns["step"]


# ---------------------------------------------------------------------------------------
# A recompilation session: one mode, a fresh function, every call recorded
# ---------------------------------------------------------------------------------------
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
            fn = _fresh(TORCH_STEP_SRC, mode, {"torch": torch})
            if mode == "eager":
                self._fn = fn
            else:
                dynamic = False if mode in ("static", "bucket") else None
                self._fn = torch.compile(fn, backend=self._backend, dynamic=dynamic)
        else:
            jax = require_jax()
            self.limit = None
            self.sync = sync_for("jax_jit")
            self._fn = jax.jit(_fresh(JAX_STEP_SRC, mode, {"jax": jax}))
        self._symbolic_pending = False

    # torch: a backend that counts the graphs it is asked to compile, then runs Inductor
    def _backend(self, gm, example_inputs):
        from torch._inductor.compile_fx import compile_fx

        self.compiles += 1
        self._symbolic_pending = dynamo.symbolic(example_inputs)
        return compile_fx(gm, example_inputs)

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


def summarize(events: list[Event] | list[dict]) -> dict[str, Any]:
    evs = [e if isinstance(e, dict) else asdict(e) for e in events]
    comp = [e["seconds"] for e in evs if e["compiled"]]
    steady = [e["seconds"] for e in evs if not e["compiled"]]
    return {"calls": len(evs), "distinct_lengths": len({e["S"] for e in evs}), "compiles": len(comp),
            "compile_s": float(sum(comp)), "steady_s": float(statistics.median(steady)) if steady else None,
            "fallback_calls": sum(1 for e in evs if e["fallback"]), "total_s": float(sum(e["seconds"] for e in evs))}


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


def measure_modes(distinct: int = 12, repeats: int | None = None, modes: tuple[str, ...] | list[str] | None = None,
                  progress: Progress | None = None) -> dict[str, Any]:
    """The same sweep (``sweep_lengths(distinct, repeats)``) under every mode: compiles,
    compile seconds, steady state, total."""
    lengths = sweep_lengths(distinct, repeats)
    modes = list(modes or available_modes())
    sizes = sweep_defaults()
    out: dict[str, Any] = {"lengths": lengths, "sizes": sizes, "modes": {}, "errors": {},
                           "extra": f"{_sizes_text(sizes)}, {len(lengths)} calls"}
    for k, m in enumerate(modes):
        sub = (lambda f, msg, k=k: progress((k + f) / len(modes), msg)) if progress else None
        try:
            out["modes"][m] = run_sweep(m, lengths, sub).to_dict()
        except DemoError:
            raise
        except Exception as exc:
            out["errors"][m] = one_line(exc)
    out["limit"] = dynamo.recompile_limit()
    return out


def measure_live(mode: str = "static", S: int | None = None, session: Session | None = None,
                 progress: Progress | None = None) -> dict[str, Any]:
    """The live panel's measurement. With a ``session`` (the panel's, kept across slider moves):
    one call at length S. Without: a fresh session of ``mode`` over the sweep lengths, the
    timeline the headless export, ``make record`` and a recorded run draw."""
    if session is not None:
        session.call(S)
        return session.to_dict()
    return run_sweep(check_mode(mode), sweep_lengths(), progress).to_dict()


# ---------------------------------------------------------------------------------------
# Figures: recompilation
# ---------------------------------------------------------------------------------------
def _sizes_text(d: dict) -> str:
    return f"step on (B={d['B']}, S, D={d['D']}) float32"


def figure_timeline(session: dict[str, Any], reference: dict[str, Any] | None = None):
    """Per-call latency with compile spikes marked, the compile counter and the last reasons;
    a recorded run of the same mode as crosses over the bars."""
    evs = session["events"]
    fig, (ax, side) = plots.figure(1, 2, gridspec_kw={"width_ratios": [2.6, 1.0]})
    mode = session["mode"]
    base = MODE_COLOR.get(mode, plots.PALETTE["reference"])
    if not evs:
        ax.text(0.5, 0.5, "no calls yet — move the S slider or press Auto-sweep", ha="center",
                va="center", transform=ax.transAxes, fontsize=15)
    xs = [e["i"] + 1 for e in evs]
    ys = [max(e["seconds"], 1e-7) for e in evs]
    colors = [COMPILE_COLOR if e["compiled"] else FALLBACK_COLOR if e["fallback"] else base for e in evs]
    ax.bar(xs, ys, color=colors, width=0.8)
    ax.set_yscale("log")
    ax.set_xlabel("call")
    ax.xaxis.get_major_locator().set_params(integer=True)  # calls are whole numbers
    if evs:
        ax.set_xlim(0.4, max(xs) + 0.6)
    ax.set_ylabel("latency of the call (s, log)")
    for k, e in enumerate([c for c in evs if c["compiled"]]):  # S of each compile, staggered: neighbours don't touch
        ax.annotate(f"{e['run_S']}" + ("*" if e["symbolic"] else ""), (e["i"] + 1, e["seconds"]),
                    xytext=(0, 2 + 15 * (k % 2)), textcoords="offset points", ha="center", va="bottom", fontsize=11.5)
    if evs:
        lo, hi = ax.get_ylim()
        ax.set_ylim(lo, hi * 4)  # headroom for the staggered labels
    if session.get("limit_hit_at") is not None:
        x = session["limit_hit_at"] + 0.5
        ax.axvline(x, color=FALLBACK_COLOR, ls="--", lw=1.5)
        ax.text(x + 0.2, 0.97, f"recompile limit ({session['limit']}) hit:\nnew shapes run eager",
                transform=ax.get_xaxis_transform(), va="top", fontsize=12, color=FALLBACK_COLOR)
    from matplotlib.patches import Patch

    handles = [Patch(color=COMPILE_COLOR, label="call that compiled"), Patch(color=base, label="cached code")]
    if any(e["fallback"] for e in evs):
        handles.append(Patch(color=FALLBACK_COLOR, label="eager fallback"))
    rev = (reference or {}).get("events") or []
    if rev:
        handles.append(ax.plot([e["i"] + 1 for e in rev], [max(e["seconds"], 1e-7) for e in rev], "x", ms=7,
                               color=plots.PALETTE["reference"],
                               label=f"recorded: {reference.get('machine_short', '')}")[0])
        xs = xs + [e["i"] + 1 for e in rev]
    ax.legend(handles=handles, loc="upper right", fontsize=12)
    ax.set_title(mode_label(mode), loc="left", fontsize=15)
    if xs:
        ax.set_xlim(0.3, max(xs) + 0.7)
    # side panel: the counter and the reasons
    side.axis("off")
    summ = summarize(evs)
    side.text(0.0, 1.0, f"{summ['compiles']}", fontsize=40, fontweight="bold", va="top",
              color=COMPILE_COLOR, transform=side.transAxes)
    side.text(0.0, 0.72, f"compile{'s' * (summ['compiles'] != 1)} in {summ['calls']} call{'s' * (summ['calls'] != 1)}\n"
              f"({summ['distinct_lengths']} distinct length{'s' * (summ['distinct_lengths'] != 1)})",
              fontsize=14, va="top", transform=side.transAxes)
    reasons = [(e["i"] + 1, e["reason"]) for e in evs if e["compiled"]][-2 if reference else -3:]
    falls = [e["i"] + 1 for e in evs if e["fallback"]]
    lines = ["why it compiled:"] + [f"#{i}: {_wrap(r, 30)}" for i, r in reasons]
    if falls:
        text = f"limit {session.get('limit')} hit: {len(falls)} calls ran eager"
        lines += [f"#{falls[0]}…: {_wrap(text, 30)}"]
    if rev:
        rs = summarize(rev)
        lines += ["", f"recorded: {rs['compiles']} compiles", f"in {rs['calls']} calls"]
    side.text(0.0, 0.52, "\n".join(lines), fontsize=11.5, va="top", family="monospace", transform=side.transAxes)
    plots.stamp_figure(fig, session, reference)
    return fig


def _wrap(text: str, width: int) -> str:
    import textwrap

    return "\n    ".join(textwrap.wrap(text, width)[:3]) or "—"


def figure_modes(data: dict[str, Any], reference: dict[str, Any] | None = None):
    """Per mode over the same sweep: compiles (left) and total sweep time split compile/run (right)."""
    modes = list(data["modes"])
    fig, (a1, a2) = plots.figure(1, 2)
    y = list(range(len(modes)))[::-1]
    comp = [data["modes"][m]["summary"]["compiles"] for m in modes]
    cols = [MODE_COLOR.get(m, "#777") for m in modes]
    h = 0.38 if reference else 0.7
    a1.barh([v + (h / 2 if reference else 0) for v in y], comp, height=h, color=cols, label="this machine")
    for v, c in zip(y, comp):
        a1.text(c + 0.2, v + (h / 2 if reference else 0), str(c), va="center", fontsize=12.5)
    ref_modes = (reference or {}).get("modes", {})
    if reference:
        rc = [ref_modes.get(m, {}).get("summary", {}).get("compiles", 0) for m in modes]
        a1.barh([v - h / 2 for v in y], rc, height=h, color="none", edgecolor=plots.PALETTE["reference"],
                hatch="//", label=f"recorded: {reference.get('machine_short', '')}")
        a1.legend(loc="center right", fontsize=11.5)  # beside the short rows (auto … eager), clear of jax.jit's
    lim = data.get("limit")
    if lim:
        a1.axvline(lim, color=FALLBACK_COLOR, ls="--", lw=1)
        a1.text(lim, len(modes) - 0.45, f" limit {lim}", color=FALLBACK_COLOR, fontsize=12)
    a1.set_yticks(y, [MODE_SHORT.get(m, m) for m in modes])
    a1.set_xlabel("compiles over the sweep")
    n_calls = len(data["lengths"])
    a1.set_title(f"{n_calls} calls, {len(set(data['lengths']))} distinct lengths", loc="left", fontsize=15)
    cs = [data["modes"][m]["summary"]["compile_s"] for m in modes]
    tot = [data["modes"][m]["summary"]["total_s"] for m in modes]
    run = [max(t - c, 0.0) for t, c in zip(tot, cs)]
    a2.barh(y, cs, color=COMPILE_COLOR, height=0.7, label="calls that compiled")
    a2.barh(y, run, left=cs, color=cols, height=0.7, label="other calls")
    eager_total = data["modes"].get("eager", {}).get("summary", {}).get("total_s")
    for v, t, c, m in zip(y, tot, cs, modes):
        summ = data["modes"][m]["summary"]
        ratio = f" ({t / eager_total:.1f}× eager)" if eager_total and m != "eager" else ""
        comp_txt = f"compiling {fmt_seconds(c)} · " if c > 0 else ""
        a2.text(t, v, f" {fmt_seconds(t)}{ratio}\n {comp_txt}call {fmt_seconds(summ['steady_s'])}",
                va="center", fontsize=11.5)
    a2.set_yticks(y, ["" for _ in modes])
    a2.set_xlabel("total time of the sweep (s)")
    a2.set_xlim(0, max(tot + [1e-3]) * 2.0)
    a2.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncols=2, fontsize=12, frameon=False,
              borderaxespad=0.1)  # above the bars: their notes fill the right
    plots.stamp_figure(fig, data, reference)
    return fig


# ---------------------------------------------------------------------------------------
# Compile latency: cold vs warm cache, each in a fresh process
# ---------------------------------------------------------------------------------------
LATENCY_WORKLOADS = ("complex_activation", "chain", "mlp_block")


def break_even(compile_s: float, eager_s: float, compiled_s: float) -> float:
    """Calls until the compile time is repaid at the measured speedup (inf: never)."""
    gain = eager_s - compiled_s
    if gain <= 0:
        return math.inf
    return compile_s / gain


def measure_compile_latency(workload: str = "complex_activation", backends: tuple[str, ...] | None = None,
                            dtype: str = "float32", params: dict | None = None,
                            progress: Progress | None = None, budget_s: float = 0.3) -> dict[str, Any]:
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
    cold, warm = coldcompile.cold_then_warm(spec, progress)
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


def _fmt_calls(n: float) -> str:
    if math.isinf(n):
        return "never (no speedup)"
    n = max(1, round(n))
    return f"{n:,} call" + ("s" if n != 1 else "")


def figure_compile_latency(data: dict[str, Any], reference: dict[str, Any] | None = None):
    """One axis per framework: the first call with a cold cache and with a warm cache (split
    where the framework exposes it) beside one steady-state call; then the break-even calls."""
    backends = list(data["backends"].items())
    fig, axes = plots.figure(1, len(backends) + 1,
                             gridspec_kw={"width_ratios": [1.0] * len(backends) + [1.15]})
    part_colors = ["#56B4E9", "#E69F00", "#999999"]
    bes = []
    for ax, (b, e) in zip(axes, backends):
        ax.set_title(plots.label(b), loc="left", color=plots.color(b), fontsize=15)
        if "error" in e:
            ax.axis("off")
            ax.text(0.5, 0.5, _wrap(e["error"], 30), ha="center", va="center", transform=ax.transAxes)
            continue
        scale, unit = (1.0, "s") if e["cold"]["first_s"] >= 1 else (1e3, "ms")
        for x, k in enumerate(("cold", "warm")):
            bottom = 0.0
            for (pname, secs), col in zip(e[k]["parts"].items(), part_colors):
                ax.bar(x, secs * scale, bottom=bottom, color=col, width=0.65, edgecolor=plots.color(b),
                       label=_wrap(pname, 16) if x == 0 else None)
                bottom += secs * scale
            ax.text(x, bottom, f"{e[k]['first_s'] * scale:.3g} {unit}", ha="center", va="bottom", fontsize=12.5)
            bes.append((f"{plots.label(b)}, {k}", e[k]["break_even_calls"], plots.color(b)))
        ax.bar(2, e["steady_s"] * scale, color=plots.color(b), width=0.65)
        ax.text(2, e["steady_s"] * scale, f"{fmt_seconds(e['steady_s'])}\n(eager\n{fmt_seconds(e['eager_s'])})",
                ha="center", va="bottom", fontsize=11.5)
        ax.set_xticks([0, 1, 2], ["cold\ncache", "warm\ncache", "one call,\ncompiled"])
        ax.set_ylabel(f"first call ({unit})")
        ax.set_ylim(0, max(e["cold"]["first_s"], e["warm"]["first_s"]) * scale * 2.1)
        ax.legend(loc="upper right", fontsize=11.5, frameon=False, handlelength=1.2, handletextpad=0.4)
    a2 = axes[-1]
    vals = [v for _, v, _ in bes]
    finite = [v for v in vals if not math.isinf(v)]
    top = max(finite + [10.0]) * 5
    a2.barh(range(len(bes)), [max(v, 1.0) if not math.isinf(v) else top for v in vals],
            color=[c for *_, c in bes], height=0.6)
    for i, (_n, v, _c) in enumerate(bes):
        a2.text(max(v, 1.0) if not math.isinf(v) else top, i, " " + _fmt_calls(v), va="center", fontsize=12)
    if reference and reference.get("backends"):
        ref_lines = []
        for b, e in reference["backends"].items():
            if "error" not in e:
                ref_lines.append(f"{plots.label(b)}: cold {fmt_seconds(e['cold']['first_s'])}, "
                                 f"pays after {_fmt_calls(e['cold']['break_even_calls'])}")
        a2.text(-0.45, -0.3, f"recorded ({reference.get('machine_short', '')}):\n" + "\n".join(ref_lines), fontsize=11,
                transform=a2.transAxes, va="top", color=plots.PALETTE["reference"])
    a2.set_xscale("log")
    a2.set_xlim(1, top * 100)
    a2.set_yticks(range(len(bes)), [n for n, *_ in bes], fontsize=12)
    a2.invert_yaxis()
    a2.set_xlabel("calls to break even (log)")
    a2.set_title("compile repaid after…", loc="left", fontsize=15)
    plots.stamp_figure(fig, data, reference)
    return fig


# ---------------------------------------------------------------------------------------
# The live demos
# ---------------------------------------------------------------------------------------
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
    # a compile from scratch takes ~10–30 s on a CPU: the slide opens on `make warm`'s result
    run_button=True, opens="kept", cold=True, claims=latency_claims,
)


class LivePanel(Panel):
    """The recompilation panel: a shape slider that calls the step once per move (on the
    mode's session, kept until Reset), plus Auto-sweep (a fresh session walks the sweep
    lengths, redrawing as calls happen) and Reset. Headless, it draws a full sweep."""

    def __init__(self, demo, specs):
        super().__init__(demo, specs)
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
        with declared_state() as cond:  # one call of a kept session: threads chosen, conditions read
            data = self.demo.measure(mode=s.mode, S=S, session=s)
        self.demo.last_conditions = cond
        data["stamp"] = plots.live_stamp(data["extra"], cond.stamp())
        return data

    def _figure(self, data: dict[str, Any]):
        data.setdefault("stamp", plots.live_stamp(data["extra"]))
        return figure_timeline(data, self.demo.reference(self.values()))

    def render_fn(self, values, progress):
        if self._full_sweep or recorded_only():
            return self.demo.render(values, progress)
        s = self.session(check_mode(values["mode"]))
        S = values["S"]
        # one call per slider move (a mode switch shows that mode's session as it stands)
        data = self._call(s, S) if S != self._last_S or not s.events else s.to_dict()
        self._last_S = S
        return self._figure(data)

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


def _live_controls(kind: str) -> list:
    d = sweep_defaults(kind)
    return [Int("S", 64, label="sequence length S", lo=d["S_min"], hi=d["S_max"], view=True),
            Choice("mode", "static", options=[(MODE_SHORT[m], m) for m in available_modes()])]


def _warm_live() -> None:
    """The first call of every mode at the slider's default length (the sweep lengths are
    warmed by compare_modes): the persistent caches make the slide's first compile quick."""
    S = _live_controls(device_kind())[0].default
    for m in available_modes():
        run_sweep(m, [S])


recompile_live = Demo(
    "recompile_live", "Recompilation, live",
    # S: each move is one call on the panel's session; for a recorded/headless run it only
    # names the slider (the measurement is the mode's full sweep)
    controls=_live_controls, measure=measure_live, figure=figure_timeline, match=("mode",),
    panel_class=LivePanel, warm=_warm_live, claims=session_claims,
)

compare_modes = Demo(
    "compare_modes", "Every mode on the same sweep",
    controls=[Int("distinct", 12, label="distinct lengths", lo=2, hi=24)],
    measure=measure_modes, figure=figure_modes, match=("distinct",), run_button=True, opens="kept",
    record_quick={"distinct": 6}, claims=modes_claims,
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
