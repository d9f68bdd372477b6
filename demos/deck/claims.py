"""What a slide claims of a measurement, declared once with its threshold.

A demo's ``claims`` is a :class:`Claims`: a list of :class:`Claim`, each naming the quantity it
reads from the measurement, how it compares and the one threshold it compares with (per device
kind where a GPU and a CPU differ). The same declaration is what ``make check`` evaluates, what
the tests evaluate, and what a speaker note quotes: ``tests/test_claims.py`` fails when a note
states a threshold that no declaration of its part holds.

``Claims`` is callable (``data -> {text: holds?}``), so ``demo.claims(data)`` and
``demo.check_claims(data)`` read as before; ``claims["key"]`` is one claim, for a test that
measures the same quantity its own way and compares with the declared threshold
(``claim.holds(x, "cpu")``, ``claim.threshold_for("cpu")``).

Every claim says when it holds (``kind``):

- a **law** (the default): exact counts, structure and bytes (kernels, graphs, breaks, guards,
  buffers, collectives). It holds on every device kind, and the tests check it everywhere.
- a **regime**: a timing or an accuracy that physics decides. It carries ``when``, a function of
  the measurement that returns ``(holds, sentence)``: the condition, *measured by the demo*, in
  words ("64 MiB per operand, over this CPU's 32 MiB L3"). The slide states it beside the verdict
  (:func:`verdict_lines`, drawn in the figure's footer). Where the condition does not hold, the
  claim does not apply, and the verdict says why. A regime without ``when`` is refused when it is
  declared.

What differs by machine and has no physics to state is an **observation**: no claim at all. The
slide's question is answered by whatever this machine measures (``asks.among``, or ``asks.bands``
with no claim), and the notes say what decides it.

Per device kind (``"cpu"``/``"gpu"``, read from the measurement: its ``device``, its
``peaks["device"]`` or its ``backend``, or ``Claims(..., device=fn)``) a claim may differ in its
threshold, its ``op`` and its ``text``: each may be a dict ``{"cpu": …, "gpu": …}``; a kind
missing from one of them makes no claim there.
"""
from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

_OPS: dict[str, Callable[[float, Any], bool]] = {
    ">": lambda x, t: x > t,
    ">=": lambda x, t: x >= t,
    "<": lambda x, t: x < t,
    "<=": lambda x, t: x <= t,
    "==": lambda x, t: x == t,
    "within": lambda x, t: t[0] <= x <= t[1],
}


KINDS = ("cpu", "gpu")
LAW, REGIME = "law", "regime"
# a verdict's status
HOLDS, FAILS, NOT_HERE = "holds", "fails", "does not apply"


def _kind(data: dict) -> str:
    """The device kind a measurement was taken on: its ``device``, else its roofs' device, else
    its (XLA) ``backend``; a CPU when it names none."""
    dev = data.get("device") or (data.get("peaks") or {}).get("device") or data.get("backend") or "cpu"
    return "cpu" if str(dev) == "cpu" else "gpu"


def _per_kind(x: Any, kind: str) -> Any:
    """``x[kind]`` for a per-device-kind dict (None where the kind is missing), else ``x``."""
    if isinstance(x, dict) and x and set(x) <= set(KINDS):
        return x.get(kind)
    return x


def _seq(x: Any) -> bool:
    return isinstance(x, (tuple, list))


def _compare(op: Any, x: Any, t: Any) -> bool:
    """``x op t``; an op tuple (or a tuple threshold with one op other than "within") compares
    element by element; a missing or NaN measurement never holds."""
    if op == "is":
        return bool(x)
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return False
    if _seq(op) or (_seq(t) and op != "within"):
        ops = op if _seq(op) else [op] * len(t)
        if not (_seq(x) and _seq(t) and len(x) == len(t) == len(ops)):
            return False
        return all(_compare(o, xi, ti) for o, xi, ti in zip(ops, x, t))
    try:
        return bool(_OPS[op](x, t))
    except TypeError:  # a measurement of the wrong kind (a list where a number was due)
        return False


def _numbers(t: Any) -> list[float]:
    if _seq(t):
        return [v for x in t for v in _numbers(x)]
    if isinstance(t, (int, float)) and not isinstance(t, bool):
        return [float(t)]
    return []


@dataclass(frozen=True)
class Claim:
    """One sentence of a slide, checked on a measurement.

    ``text`` may hold ``{threshold}`` (``{lo}``/``{hi}`` for a band), filled from the threshold in
    force on the measurement's device. ``value(data)`` is the measured quantity (None: not
    measured, the claim fails). ``threshold`` is a number (or a (lo, hi) band for ``within``), or a
    dict ``{"cpu": …, "gpu": …}``; a device kind missing from the dict makes no claim there.
    ``applies(data)`` limits a claim to some measurements (a workload, a device). ``op`` "is"
    takes ``value`` as the truth itself (a comparison of two measured quantities, a name found
    in a log: no threshold). A tuple threshold with a tuple ``value`` is compared element by
    element (``op`` one string, or one per element: ``(">=", "==")``), and the text reads its
    elements as ``{0}``, ``{1}``…: "6 ops → 1 kernel" is ``op="=="``, ``threshold=(6, 1)``.
    Counts stay exact. ``text``, ``op`` and ``threshold`` may each be ``{"cpu": …, "gpu": …}``;
    ``text`` may also be a function of the measurement, and reads the measurement as ``{d[…]}``.
    ``key`` names the claim for ``Claims[key]``; ``device(data)`` overrides where the device
    kind is read from. ``value`` may be a key of the measurement (``"kernels"`` reads
    ``data["kernels"]`` and names the claim, unless ``key`` does). ``ask`` is the question the slide
    asks before it shows the figure, read through this claim (``asks.count(question, options)``,
    ``asks.bands(question, edges)``): the demo asks it.
    """

    text: Any
    value: Callable[[dict], Any] | str
    op: Any = "is"
    threshold: Any = None
    applies: Callable[[dict], bool] | None = None
    key: str = ""
    device: Callable[[dict], str] | None = None
    # LAW (everywhere) or REGIME (where ``when`` holds); a regime must state its condition
    law_or_regime: str = LAW
    when: Callable[[dict], tuple[bool, str]] | None = None
    ask: Any = None

    def __post_init__(self):
        if isinstance(self.value, str):  # a key of the measurement: the claim reads it, and is named by it
            name = self.value
            object.__setattr__(self, "value", lambda d: d[name])
            object.__setattr__(self, "key", self.key or name)
        if callable(getattr(self.ask, "bind", None)):  # a question declared here, read through this claim
            object.__setattr__(self, "ask", self.ask.bind(self))
        if self.law_or_regime not in (LAW, REGIME):
            raise ValueError(f"claim {self.key!r}: law_or_regime must be {LAW!r} or {REGIME!r}")
        if self.law_or_regime == REGIME and self.when is None:
            raise ValueError(f"claim {self.key!r} is a regime (a timing or an accuracy): it needs when=, the "
                             "condition its demo measures, e.g. regime(when=over_cache(...))")
        if self.law_or_regime == LAW and self.when is not None:
            raise ValueError(f"claim {self.key!r} has a condition: declare it with law_or_regime=REGIME")

    @property
    def is_regime(self) -> bool:
        return self.law_or_regime == REGIME

    def condition(self, data: dict) -> tuple[bool | None, str]:
        """(does this regime's condition hold on ``data``, the measured condition in words); a law
        always holds (True, ""). (None, why) when the measurement lacks what the condition reads
        (a record taken before the demo measured it)."""
        if self.when is None:
            return True, ""
        try:
            ok, text = self.when(data)
        except (KeyError, TypeError, IndexError, ZeroDivisionError, ValueError, AttributeError):
            return None, "its condition was not measured in this run"
        return (None if ok is None else bool(ok)), str(text)

    def kind(self, data: dict) -> str:
        """"cpu" or "gpu": the device kind of the measurement."""
        if self.device is not None:
            return "cpu" if str(self.device(data) or "cpu") == "cpu" else "gpu"
        return _kind(data)

    def _kind_of(self, data_or_kind: dict | str) -> str:
        return data_or_kind if isinstance(data_or_kind, str) else self.kind(data_or_kind)

    def threshold_for(self, data_or_kind: dict | str) -> Any:
        """The threshold in force on a measurement (or on a device kind, "cpu"/"gpu")."""
        return _per_kind(self.threshold, self._kind_of(data_or_kind))

    def op_for(self, data_or_kind: dict | str) -> Any:
        return _per_kind(self.op, self._kind_of(data_or_kind))

    def holds(self, x: Any, data_or_kind: dict | str) -> bool:
        """Does a measured quantity ``x`` (what ``value`` reads) satisfy the claim on that device?
        For a test that measures the same quantity its own way (more rounds, interleaved)."""
        t, op = self.threshold_for(data_or_kind), self.op_for(data_or_kind)
        if op is None or (op != "is" and t is None):
            raise ValueError(f"{self.key or self.text!r} makes no claim on {data_or_kind!r}")
        return _compare(op, x, t)

    def thresholds(self) -> list[float]:
        """Every number this claim compares with, on any device, its condition's bound included
        (what a note may quote)."""
        ts = [self.threshold.get(k) for k in KINDS] if isinstance(self.threshold, dict) else [self.threshold]
        ts.append(getattr(self.when, "bound", None))
        return [v for t in ts for v in _numbers(t)]

    def bands(self) -> list[tuple[float, float]]:
        """The (lo, hi) bands this claim checks "within", on any device."""
        out = []
        for k in KINDS:
            op, t = _per_kind(self.op, k), self.threshold_for(k)
            pairs = zip(op, t) if _seq(op) and _seq(t) else [(op, t)]
            out += [(float(b[0]), float(b[1])) for o, b in pairs if o == "within" and _seq(b)]
        return list(dict.fromkeys(out))

    def makes_claim(self, kind: str) -> bool:
        """Does the claim say anything on a device of this kind ("cpu"/"gpu")?"""
        op, t = self.op_for(kind), self.threshold_for(kind)
        return not (op is None or _per_kind(self.text, kind) is None or (op != "is" and t is None))

    def render(self, data: dict, kind: str | None = None) -> str:
        """The sentence, with the threshold in force on ``data`` (or on a device ``kind``) written in."""
        kind = kind or self.kind(data)
        text = _per_kind(self.text, kind)
        if callable(text):
            text = text(data)
        if "{" not in text:
            return text
        t = self.threshold_for(kind)
        args = tuple(t) if _seq(t) else ()
        extra = {"lo": t[0], "hi": t[-1]} if args else {}
        return text.format(*args, threshold=t, d=data, **extra)

    def claims_on(self, data: dict) -> bool:
        """Does this claim speak of ``data`` at all: its ``applies`` selects it, and it makes a claim
        on the measurement's device kind."""
        if self.applies is not None and not self.applies(data):
            return False
        return self.makes_claim(self.kind(data))

    def verdict(self, data: dict) -> "Verdict | None":
        """The claim on ``data``: holds, fails, or does not apply here (a regime whose measured
        condition does not hold), with the condition in words. None where the claim does not speak
        of ``data`` (another workload, no claim on this device kind)."""
        if not self.claims_on(data):
            return None
        kind = self.kind(data)
        ok, cond = self.condition(data)
        measures = bool(getattr(self.when, "measures", False))
        if not ok:
            return Verdict(self.render(data), NOT_HERE, self.law_or_regime, cond, self.key, measures)
        try:
            x = self.value(data)
        except (KeyError, TypeError, IndexError, ZeroDivisionError, ValueError, AttributeError) as exc:
            # the measurement cannot answer: it fails, and says what it lacked (a key measure never returns)
            lacked = f"the measurement has no {exc.args[0]!r}" if isinstance(exc, KeyError) and exc.args else \
                f"its value could not be read ({type(exc).__name__}: {exc})"
            return Verdict(self.render(data), FAILS, self.law_or_regime, "; ".join(t for t in (cond, lacked) if t),
                           self.key, measures)
        holds = _compare(self.op_for(kind), x, self.threshold_for(kind))
        return Verdict(self.render(data), HOLDS if holds else FAILS, self.law_or_regime, cond, self.key, measures)

    def evaluate(self, data: dict) -> tuple[str, bool] | None:
        """(the sentence, does it hold) — None where the claim does not apply to ``data`` (nor
        where a regime's condition does not hold: :meth:`verdict` says why)."""
        v = self.verdict(data)
        if v is None or v.status == NOT_HERE:
            return None
        return v.text, v.status == HOLDS


@dataclass(frozen=True)
class Verdict:
    """One claim on one measurement: ``status`` is HOLDS, FAILS or NOT_HERE (does not apply), and
    ``condition`` the measured condition of a regime, in words."""

    text: str
    status: str
    kind: str
    condition: str = ""
    key: str = ""
    measured: bool = False  # the condition is one a measurement decides (not a derivation)

    def line(self) -> str:
        """How the slide's footer and ``make check`` say it, in one line."""
        mark = {HOLDS: "✓ holds here", FAILS: "✗ fails here", NOT_HERE: "does not apply here"}[self.status]
        return f"{mark}: {self.text}" + (f" — {self.condition}" if self.condition else "")


def regime(**kwargs: Any) -> dict[str, Any]:
    """``Claim(text, value, op, threshold, **regime(when=...))``: a timing or an accuracy, with its
    measured condition."""
    return {"law_or_regime": REGIME, **kwargs}


@dataclass
class Claims:
    """A demo's claims: call it on a measurement for ``{sentence: holds?}``.

    Items are :class:`Claim` s, or :class:`Each` (the same claims for every part of a
    measurement: each mode of a sweep). ``device(data)``: where every claim reads the device
    kind (default: the measurement's ``device``, ``peaks["device"]`` or ``backend``)."""

    items: list[Any] = field(default_factory=list)

    def __init__(self, *items: Any, device: Callable[[dict], str] | None = None):
        if device is not None:
            items = tuple(dataclasses.replace(c, device=device) if isinstance(c, Claim) and c.device is None else c
                          for c in items)
        self.items = list(items)

    def __call__(self, data: dict) -> dict[str, bool]:
        out: dict[str, bool] = {}
        for c in self.items:
            if isinstance(c, Each):
                out.update(c(data))
                continue
            r = c.evaluate(data)
            if r is not None:
                out[r[0]] = r[1]
        return out

    def verdicts(self, data: dict) -> list[Verdict]:
        """Every claim that speaks of ``data``, with its verdict (those inside :class:`Each` too)."""
        out: list[Verdict] = []
        for c in self.items:
            if isinstance(c, Each):
                out += [v for part in c.over(data) for v in c.claims.verdicts(part)]
            else:
                v = c.verdict(data)
                if v is not None:
                    out.append(v)
        return out

    def thresholds(self) -> list[float]:
        return [t for c in self.items for t in c.thresholds()]

    def bands(self) -> list[tuple[float, float]]:
        return [b for c in self for b in c.bands()]

    def __iter__(self):
        """Every claim, those inside :class:`Each` included."""
        for c in self.items:
            yield from (c.claims if isinstance(c, Each) else [c])

    def __getitem__(self, key: str) -> Claim:
        """The claim declared with ``key``."""
        for c in self:
            if c.key == key:
                return c
        raise KeyError(f"no claim with key {key!r}; keys: {', '.join(c.key for c in self if c.key)}")

    def select(self, *keys: str) -> "Claims":
        """Only the claims named (to check part of a measurement)."""
        return Claims(*(self[k] for k in keys))


@dataclass
class Each:
    """The same claims for every part of a measurement: ``over(data)`` gives the parts
    (e.g. each mode's session of a sweep), each evaluated by ``claims``."""

    claims: Claims
    over: Callable[[dict], Iterable[dict]]

    def __call__(self, data: dict) -> dict[str, bool]:
        out: dict[str, bool] = {}
        for part in self.over(data):
            out.update(self.claims(part))
        return out

    def thresholds(self) -> list[float]:
        return self.claims.thresholds()


def evaluate(claims: Claims | Callable[[dict], dict] | None, data: dict) -> dict[str, bool]:
    """A demo's claims on ``data`` (empty when it makes none)."""
    if claims is None:
        return {}
    return {str(k): bool(v) for k, v in claims(data).items()}


def verdicts(claims: Claims | Callable[[dict], dict] | None, data: dict) -> list[Verdict]:
    """A demo's verdicts on ``data`` (empty when it makes none); a plain ``data -> {text: holds}``
    function's sentences are laws."""
    if claims is None:
        return []
    if isinstance(claims, Claims):
        return claims.verdicts(data)
    return [Verdict(str(k), HOLDS if v else FAILS, LAW, "", str(k)) for k, v in claims(data).items()]


def verdict_lines(claims: Claims | Callable[[dict], dict] | None, data: dict) -> list[str]:
    """What the figure's footer says of the regimes: each timing or accuracy claim's verdict on
    this measurement beside its measured condition (laws hold everywhere: the slide states them)."""
    return [v.line() for v in verdicts(claims, data) if v.kind == REGIME]


def declared_thresholds(demos: Iterable[Any]) -> set[float]:
    """Every threshold the demos' claims declare."""
    out: set[float] = set()
    for d in demos:
        if isinstance(d.claims, Claims):
            out.update(d.claims.thresholds())
    return out


def declared_bands(demos: Iterable[Any]) -> set[tuple[float, float]]:
    """Every (lo, hi) band the demos' claims check "within"."""
    return {b for d in demos if isinstance(d.claims, Claims) for b in d.claims.bands()}


# ---------------------------------------------------------------------------------------
# Speaker notes quote the declared thresholds
# ---------------------------------------------------------------------------------------
_NUM = r"(\d+(?:\.\d+)?)"
# "more than 2×", "over 10×", "> 1.5×", "under 3×", "< 0.9×", "at least 2×", "within 4×",
# "within 0.7–1.4": how a note states what a claim checks (observations read "~7×", "×1.2–1.3")
THRESHOLD_PHRASE = re.compile(
    r"(?<![\w.])(?:(?:more than|less than|at least|at most|over|under|above|below|within|>=|<=|≥|≤|>|<)\s*"
    + _NUM + r"\s*×|within\s+" + _NUM + r"\s*[–-]\s*" + _NUM + r")")


def note_thresholds(text: str) -> list[tuple[str, list[float]]]:
    """Each phrase of a note that states a claim's threshold, with its numbers."""
    return [(m.group(0), [float(g) for g in m.groups() if g is not None]) for m in THRESHOLD_PHRASE.finditer(text)]


def undeclared_in_note(text: str, declared: Iterable[float],
                       bands: Iterable[tuple[float, float]] | None = None) -> list[str]:
    """The threshold phrases of a note whose numbers no claim declares (empty: the note agrees).
    With ``bands``, a "within A–B" must be one declared band, not two unrelated numbers."""
    known, known_bands = list(declared), None if bands is None else list(bands)

    def close(a: float, b: float) -> bool:
        return math.isclose(a, b, rel_tol=1e-9)

    def ok(nums: list[float]) -> bool:
        if len(nums) == 2 and known_bands is not None:
            return any(close(nums[0], lo) and close(nums[1], hi) for lo, hi in known_bands)
        return all(any(close(n, k) for k in known) for n in nums)

    return [phrase for phrase, nums in note_thresholds(text) if not ok(nums)]
