"""Every claim a slide makes has one threshold, declared once (demos.deck.claims): each demo's
``claims`` is a ``Claims``; a claim flips when its measurement crosses the threshold; and every
threshold a speaker note states is one its part declares. Fast: nothing is measured."""
from __future__ import annotations

import json
import math
import re
import sys

import pytest

import demos  # noqa: F401  (environment before torch/JAX)
from demos import topics
from demos.deck.claims import Claim, Claims, Each, declared_bands, declared_thresholds, note_thresholds, \
    undeclared_in_note
from demos.deck.nbtools import SLIDES_DIR

DEMOS = topics.load()
PART_NOTEBOOKS = sorted(SLIDES_DIR.glob("[0-9][0-9]_*.ipynb"))


def _part(demo) -> int:
    return topics.part_of(demo.topic)


def _declared(part: int) -> set[float]:
    return declared_thresholds(d for d in DEMOS if _part(d) == part)


def _undeclared(text: str, part: int) -> list[str]:
    """Threshold phrases of a note that no claim of its part declares ("within A–B": one band)."""
    return undeclared_in_note(text, _declared(part), declared_bands(d for d in DEMOS if _part(d) == part))


def _notes(path) -> list[str]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return ["".join(c["source"]) for c in nb["cells"]
            if c.get("metadata", {}).get("slideshow", {}).get("slide_type") == "notes"]


# ---------------------------------------------------------------------------------------
# (a) the declarations
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("demo", DEMOS, ids=[d.key for d in DEMOS])
def test_every_demo_declares_its_claims_as_claims(demo):
    assert isinstance(demo.claims, Claims), f"{demo.key}: claims= must be a demos.deck.claims.Claims"
    items = list(demo.claims)
    assert items and all(isinstance(c, Claim) for c in items), demo.key
    keys = [c.key for c in items]
    assert all(keys) and len(keys) == len(set(keys)), (demo.key, keys)  # claims["key"] finds one
    for c in items:  # a number compared with is declared as the threshold, not written in the value
        assert c.op == "is" or c.thresholds(), (demo.key, c.key)


def test_every_part_has_claims_and_a_notebook():
    parts = {_part(d) for d in DEMOS}
    assert parts == {int(p.name[:2]) for p in PART_NOTEBOOKS}
    assert all(_declared(p) for p in parts)


def test_a_threshold_shared_by_two_slides_is_declared_once():
    from demos.topics import roofline as rf

    # the roofline arrow's "up" is the payoff slide's chain speedup: the same object, not a copy
    assert rf.roofline_claims["up"].threshold is rf.payoff_claims["chain"].threshold
    assert rf.payoff_claims["chain"].threshold_for("cpu") < rf.payoff_claims["chain"].threshold_for("gpu")


# ---------------------------------------------------------------------------------------
# (b) the speaker notes quote the declared thresholds
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", PART_NOTEBOOKS, ids=[p.stem for p in PART_NOTEBOOKS])
def test_notes_state_only_thresholds_their_part_declares(path):
    part = int(path.name[:2])
    wrong = [(phrase, i) for i, text in enumerate(_notes(path)) for phrase in _undeclared(text, part)]
    assert not wrong, (f"{path.name}: a note states a threshold no claim of its part declares "
                       f"(declared: {sorted(_declared(part))}): {wrong}")


def test_the_notes_do_state_thresholds():
    """The checker above is not vacuous: the part 3 notes quote the payoff slide's bands."""
    from demos.topics import roofline as rf

    text = "\n".join(_notes(SLIDES_DIR / "03_when_compilation_pays.ipynb"))
    stated = {n for _, nums in note_thresholds(text) for n in nums}
    chain = rf.payoff_claims["chain"]
    assert {chain.threshold_for("cpu"), chain.threshold_for("gpu")} <= stated
    assert set(rf.payoff_claims["matmuls_band"].threshold_for("gpu")) <= stated


# ---------------------------------------------------------------------------------------
# (c) a claim flips where its measurement crosses the threshold, for every op
# ---------------------------------------------------------------------------------------
def _holds(claim: Claim, x, device: str = "cpu") -> bool | None:
    out = Claims(claim)({"device": device, "x": x})
    return next(iter(out.values())) if out else None


def _x(d):
    return d["x"]


@pytest.mark.parametrize("op, threshold, below, at, above", [
    (">", 2.0, False, False, True),
    (">=", 2.0, False, True, True),
    ("<", 2.0, True, False, False),
    ("<=", 2.0, True, True, False),
    ("==", 2, False, True, False),
])
def test_a_comparison_flips_at_its_threshold(op, threshold, below, at, above):
    c = Claim("x {threshold:g}", _x, op, threshold)
    assert [_holds(c, v) for v in (threshold * 0.99, threshold, threshold * 1.01)] == [below, at, above]
    assert _holds(c, None) is False and _holds(c, math.nan) is False  # not measured: never holds


def test_within_flips_at_both_ends_of_its_band():
    c = Claim("x within {lo:g}–{hi:g}", _x, "within", (0.7, 1.4))
    assert [_holds(c, v) for v in (0.69, 0.7, 1.0, 1.4, 1.41)] == [False, True, True, True, False]
    assert Claims(c)({"x": 1.0}) == {"x within 0.7–1.4": True}  # the band written into the sentence


def test_is_takes_the_value_as_the_truth():
    c = Claim("x is true", _x)
    assert [_holds(c, v) for v in (True, False, None)] == [True, False, False]


def test_exact_counts_compare_element_by_element_and_print_the_declared_numbers():
    c = Claim("{0} ops → {1} kernel", _x, {"cpu": "==", "gpu": (">=", "==")}, (6, 1))
    assert Claims(c)({"x": (6, 1)}) == {"6 ops → 1 kernel": True}
    assert [_holds(c, v) for v in ((7, 1), (6, 2), [6, 1], (6,), None)] == [False, False, True, False, False]
    assert [_holds(c, v, "cuda") for v in ((7, 1), (5, 1), (7, 2))] == [True, False, False]  # a GPU: at least 6


def test_a_device_kind_missing_from_a_threshold_makes_no_claim_there():
    c = Claim("x over {threshold:g}×", _x, ">", {"cpu": 1.5, "gpu": 2.0}, key="chain")
    assert _holds(c, 1.7, "cpu") is True and _holds(c, 1.7, "cuda") is False
    assert Claims(c)({"device": "cuda", "x": 3}) == {"x over 2×": True}
    assert _holds(Claim("x", _x, ">", {"gpu": 2.0}), 5.0, "cpu") is None
    assert c.holds(1.7, "cpu") and not c.holds(1.7, "gpu") and c.thresholds() == [1.5, 2.0]
    with pytest.raises(ValueError):
        Claim("x", _x, ">", {"gpu": 2.0}).holds(5.0, "cpu")
    # where a measurement keeps its device: its own key, its roofs', its XLA backend, or Claims(device=…)
    assert c.threshold_for({"peaks": {"device": "cuda"}}) == 2.0 and c.threshold_for({"backend": "cpu"}) == 1.5
    assert Claims(c, device=lambda d: "cuda")({"x": 1.7}) == {"x over 2×": False}


def test_claims_look_up_by_key_and_evaluate_each_part():
    per_mode = Claims(Claim("{d[mode]}: at most {threshold} compiles", lambda s: s["n"], "<=", 2, key="n"))
    cs = Claims(Claim("ran", lambda d: True, key="ran"),
                Each(per_mode, lambda d: [{"mode": m, "n": n} for m, n in d["modes"].items()]))
    assert cs["n"].threshold == 2 and cs.thresholds() == [2.0]
    assert cs({"modes": {"auto": 2, "static": 8}}) == {"ran": True, "auto: at most 2 compiles": True,
                                                         "static: at most 2 compiles": False}
    assert cs.select("ran")({"modes": {}}) == {"ran": True}
    with pytest.raises(KeyError):
        cs["nope"]


def test_a_claim_the_measurement_cannot_answer_fails():
    c = Claim("x ÷ y over {threshold}", lambda d: d["x"] / d["y"], ">", 1)
    assert Claims(c)({"x": 1.0, "y": 0.0}) == {"x ÷ y over 1": False}
    assert Claims(c)({"x": 1.0}) == {"x ÷ y over 1": False}
    # and says why, so a claim reading a key its measure never returns is not a silent False
    assert c.verdict({"x": 1.0}).condition == "the measurement has no 'y'"
    assert "ZeroDivisionError" in c.verdict({"x": 1.0, "y": 0.0}).condition


# ---------------------------------------------------------------------------------------
# (d) the notes checker itself can fail
# ---------------------------------------------------------------------------------------
def test_a_note_stating_a_threshold_no_claim_declares_is_rejected():
    ok = "The chain gains ~1.3× here (the slide's claim: more than 1.1× faster; the seed saw ~7×)."
    assert [n for _, n in note_thresholds(ok)] == [[1.1]] and _undeclared(ok, 3) == []
    wrong = ok.replace("more than 1.1×", "more than 1.05×")
    assert _undeclared(wrong, 3) == ["more than 1.05×"]
    for phrase in ("over 1.3×", "> 1.3×", "under 2.5×", "< 0.8×", "at least 4.5×", "within 0.6–1.6"):
        assert _undeclared(f"the claim: {phrase} faster", 3) == [phrase], phrase
    # a band is one declared band: 0.7 and 2 are both declared in part 3, "0.7–2" is no band of it
    assert _undeclared("within 0.7–1.4", 3) == [] and _undeclared("within 0.7–2", 3) == ["within 0.7–2"]
    assert _undeclared("more than 1.5×", 6) == ["more than 1.5×"]  # another part's threshold


def test_the_real_part_3_note_is_rejected_once_its_threshold_drifts():
    from demos.topics import roofline as rf

    cpu = rf.payoff_claims["chain"].threshold_for("cpu")
    text = "\n".join(_notes(SLIDES_DIR / "03_when_compilation_pays.ipynb"))
    assert _undeclared(text, 3) == []
    drifted = re.sub(rf"more than {re.escape(f'{cpu:g}')}×", "more than 1.25×", text)
    assert drifted != text and _undeclared(drifted, 3) == ["more than 1.25×"]
