"""The settings a demo declares besides its measure and figure: how its panel paces measurements
(:data:`PACINGS`), the other configurations it is measured in (:class:`Configs`), and what the seed
material reported (:class:`Reported`). :class:`demos.deck.demo.Demo` holds them."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

# How a panel paces its measurements, the one setting for it:
PACINGS = {
    "live": "measures when the cell runs and again on every control move",
    "run": "a Run button measures; the cell's first run measures too",
    "warmed": "opens at once on the result `make warm` measured; the Run button measures again",
    "cold": "as 'warmed', for a lesson that is a cold compile (tens of seconds by design; ui-bench exempts it)",
}


@dataclass(frozen=True)
class Configs:
    """The configurations a demo is measured in besides the panel's, in one place."""
    # what `make warm` measures: value overrides, one measurement each, or a callable ``warm(demo)``
    warm: Sequence[dict] | Callable[["Demo"], None] = ({},)
    # overrides for `make record`: control values, or other keyword arguments of ``measure`` such
    # as a longer timing budget; ``quick`` is laid over them by `make record --quick` and the tests
    record: dict = field(default_factory=dict)
    quick: dict = field(default_factory=dict)
    slim: Callable[[dict], dict] | None = None  # slims a measurement before a record stores it


@dataclass(frozen=True)
class Reported:
    """What the seed material reported on its GPU, in the measurement's own format, for the values
    given (None where it reported nothing): drawn as the reference until a recorded run exists."""
    figures: Callable[[dict], dict | None]
    source: str


@dataclass(frozen=True)
class PanelSpec:
    """How a demo's panel behaves, the one setting for it (``Demo(panel=...)``; a string is the pacing
    alone: ``panel="warmed"``)."""
    pacing: str = "live"  # one of PACINGS
    # defaults that follow other controls' values (a preset fills a code box): values -> {name: value},
    # applied to each control the caller did not set
    derived: Callable[[dict], dict] | None = None
    # ``measure`` only waits for another process that measures from its own declared state (part 7's
    # inspector): this process chooses no thread policy and reports no load of its own
    worker: bool = False
    cls: Any = None  # a demos.deck.ui.Panel subclass, for a panel with state of its own

    def __post_init__(self):
        if self.pacing not in PACINGS:
            raise ValueError(f"pacing={self.pacing!r}; it is one of {', '.join(PACINGS)}")
