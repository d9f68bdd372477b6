"""Part 5's recompilation instrument: the step whose input length changes from call to call,
the modes it runs under, and :class:`Session`, which calls a fresh compiled copy of the step once
per length and records each call's latency, whether it compiled and why (the failed guard for
torch, the cache-miss explanation for JAX). :mod:`demos.topics.recompilation` measures with it;
:mod:`demos.topics.recompilation_panel` keeps a session per mode across slider moves.

How compiles are counted (torch 2.13 / JAX 0.10): torch — a backend that counts the graphs it
hands to Inductor (:class:`demos.introspection.hooks.InductorBackend`); JAX —
``jitted._cache_size()`` before/after each call; the reasons and the recompile-limit warning come
from their logs (:mod:`demos.introspection.dynamo`).
"""
from __future__ import annotations

import math
import numbers
import random
import uuid
from dataclasses import asdict, dataclass
from typing import Any, Callable

from demos.engine.devices import device_kind, require_jax, require_torch, set_threads, torch_device
from demos.engine.errors import DemoError
from demos.engine.measurement import Progress, Run
from demos.engine.convert import to_jax
from demos.engine.timing import first_call, sync_for
from demos.introspection import dynamo
from demos.introspection.hooks import InductorBackend, symbolic
from demos.topics.recompilation_figures import MODE_SHORT, mode_label, summarize


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


DISTINCT = 12  # the sweep's distinct lengths, by default


def sweep_lengths(distinct: int = DISTINCT, repeats: int | None = None, seed: int = 0,
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
        self._symbolic_pending = symbolic(example_inputs)

    def _input(self, S: int):
        if S not in self._inputs:
            torch = require_torch()
            g = torch.Generator().manual_seed(S)
            x = torch.randn(self.B, S, self.D, generator=g)
            if self.framework == "torch":
                self._inputs[S] = x.to(self.device)
            else:
                self._inputs[S] = to_jax(x)
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
            dt, _ = first_call(lambda: self._fn(x), self.sync)
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
            reason = f"recompile limit ({self.limit}) reached (Dynamo warned): runs eager"
        return Event(len(self.events), S, run_S, dt, compiled, compiled and self._symbolic_pending, fallback, reason)

    def _call_jax(self, S: int, run_S: int, x) -> Event:
        before = self._fn._cache_size()
        with dynamo.jax_miss_log() as log:
            dt, _ = first_call(lambda: self._fn(x), self.sync)
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
                "extra": sizes_text({"B": self.B, "D": self.D})}


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


def sizes_text(d: dict) -> str:
    """The step's input sizes, as a measurement's ``extra`` line says them."""
    return f"step on (B={d['B']}, S, D={d['D']}) float32"

