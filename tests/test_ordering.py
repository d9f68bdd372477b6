"""The same answer in any order, generated from the declarations: every demo's counts and claims
come out the same when it is measured before any demo that comes before it in the deck, after every
other demo, and again after ``forget()`` — and that last run really measures (no cache survives
forget).

One fresh process measures every demo in reverse deck order, then every demo again after
``forget()`` (but those that measure cold by declaration: ``COLD`` below). What it measures is this
file's alone: no other test waits for it or reads it (each measures what it needs itself).

In the first pass no demo that comes before a demo in the deck has run in the process that measures
it (the last demo of the deck is the process's first measurement), so a demo that leaves state
behind for a later slide would change a later slide's answer in the second pass, and a slide that
depends on state an earlier one left would fail in the first. (One process, not one per
part: each start imports torch and JAX again, and a process per part measured nothing the reverse
order does not.)

Every claim must hold in every order, and the same claims must apply (but a regime of free cores,
which does not apply where its measurement found other processes on the cores, and says so). A count claim states its
exact count ("6 ops become 1"), so holding in every order means the same count in every order. A
demo whose claims fail is measured once more from the declared state (a shared 2-core box can stall
one timing); a wrong count fails twice.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import demos  # noqa: F401  (environment before torch/JAX)
from demos import topics
from demos.engine.settings import PROJECT_ROOT

DEMOS = topics.load()
KEYS = [d.key for d in DEMOS]
# Demos that measure from scratch every time by declaration (``pacing="cold"``: a compile in fresh
# processes with empty caches, or with Dynamo reset and Inductor's caches bypassed) are measured in
# the first pass only: a second pass after forget() would measure the same cold state again (about
# two of the setup's minutes on a 2-core box). The demos after them in both passes still see what
# they leave behind.
COLD = {d.key for d in DEMOS if d.pacing == "cold"}

# One process: measure the named demos in the order named, in the given passes ("run": as they come, each
# after the ones before it; "forget": forget() first, then measure). Prints one JSON list.
_SCRIPT = r'''
import json, sys, time
import demos
from demos import topics
from demos.cli import select
from demos.deck.claims import NOT_HERE
from demos.deck.conditions import shared_cores
from demos.engine import protocol
sys.path.insert(0, sys.argv[3])
from test_ordering import timings

names = sys.argv[1].split(",")
again = [n for n in sys.argv[4].split(",") if n]
ds = sorted(select(topics.load(), names), key=lambda d: names.index(d.key))  # in the order given
out = []
for p in sys.argv[2].split(",") + (["forget"] if again else []):
    for d in ds:
        if p == "forget" and again and d.key not in again:
            continue
        if p == "forget":
            d.forget()
            assert protocol.cached_entries() == 0 and d._state.memo is None and not d._state.cache, d.key
        t0 = time.perf_counter()
        data = d.run()
        claims = d.check_claims(data)
        retried = False
        if not all(claims.values()):
            d.forget()  # once more, from the declared state
            data, retried = d.run(), True
            claims = d.check_claims(data)
        apart = [v.text for v in d.verdicts(data) if v.status == NOT_HERE] if shared_cores(data) else []
        out.append({"key": d.key, "pass": p, "claims": claims, "retried": retried, "timings": timings(data),
                    "apart_on_shared_cores": apart,
                    "conditions": data.get("conditions"), "seconds": round(time.perf_counter() - t0, 1)})
print("ORDERING " + json.dumps(out, default=str))
'''


def timings(data) -> list[float]:
    """Every measured time in a measurement (keys ending in ``_s``, medians)."""
    found: list[float] = []

    def walk(x, key=""):
        if isinstance(x, dict):
            for k, v in x.items():
                walk(v, str(k))
        elif isinstance(x, (list, tuple)):
            for v in x:
                walk(v, key)
        elif isinstance(x, float) and (key.endswith("_s") or "median" in key or key == "seconds"):
            found.append(x)

    walk({k: v for k, v in data.items() if k not in ("conditions", "values")})
    return found


def _run(keys: list[str], passes: str, timeout: int, again: list[str] | None = None) -> list[dict]:
    """Measure ``keys`` in one fresh process, in order, in each of ``passes``; then ``again`` (a
    subset, in the same order) once more after forget()."""
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-c", _SCRIPT, ",".join(keys), passes, str(PROJECT_ROOT / "tests"),
                        ",".join(again or [])],
                       cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("ORDERING ")]
    assert r.returncode == 0 and line, f"{keys}: exit {r.returncode}\n{r.stderr[-3000:]}"
    return json.loads(line[-1][len("ORDERING "):])


def in_one_process() -> dict[tuple[str, str], dict]:
    """Every demo in one fresh process, last slide first (each before every demo that comes before
    it in the deck), then each again after forget() (each after every other demo); once per session
    (every parametrized test reads the same process). {(key, pass): row}; the rows also go to
    test-artifacts/ordering-one-process.json. A process that failed fails every test with its
    error (it is not run again)."""
    if _FAILED:
        raise AssertionError(f"the ordering process failed earlier in this session: {_FAILED[0]!r}"[:3000])
    if not _ROWS:
        from conftest import ARTIFACTS

        order = list(reversed(KEYS))
        try:
            rows = _run(order, "run", timeout=3000, again=[k for k in order if k not in COLD])
        except (AssertionError, subprocess.TimeoutExpired) as exc:
            _FAILED.append(exc)
            raise
        ARTIFACTS.mkdir(exist_ok=True)
        (ARTIFACTS / "ordering-one-process.json").write_text(json.dumps(rows, indent=1))
        _ROWS.update({(r["key"], r["pass"]): r for r in rows})
    return _ROWS


_ROWS: dict[tuple[str, str], dict] = {}  # in_one_process(), once per session
_FAILED: list[Exception] = []  # or how it failed


@pytest.mark.slow
@pytest.mark.timing  # speed claims: a failing demo is measured once more (see above)
@pytest.mark.parametrize("key", KEYS)
def test_counts_and_claims_are_the_same_in_any_order(key):
    rows = in_one_process()
    first = rows[(key, "run")]
    if key in COLD:  # measured from scratch by declaration: the first pass is its whole test
        failed = [c for c, ok in first["claims"].items() if not ok]
        assert not failed, f"{key} (before every demo that comes before it): {failed}"
        return
    after = rows[(key, "forget")]
    for row, when in ((first, "before every demo that comes before it"), (after, "after every other demo")):
        failed = [c for c, ok in row["claims"].items() if not ok]
        assert not failed, f"{key} ({when}): {failed}"
    # the same claims apply in both orders; only a regime of free cores may stand apart in a pass whose
    # measurement found other processes on the cores (conditions.shared_cores: the other worker's
    # tests, a busy CI box), and its verdict says so
    apart = set(first["apart_on_shared_cores"]) | set(after["apart_on_shared_cores"])
    assert set(first["claims"]) ^ set(after["claims"]) <= apart, key
    # after forget() the demo measured again: no time it reports is the one it reported before
    if first["timings"] and not after["retried"]:
        assert first["timings"] != after["timings"], f"{key}: after forget() the same times came back (a cached result)"
