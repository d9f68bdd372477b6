"""Predict, then measure: every live slide whose demo makes claims asks first.

The questions are declared with the demos (demos/deck/asks.py), their choices read through the
demos' claims; the panel shows the question, then the figure on a choice, and marks the choice;
headless, the question is its own output, which the export lifts onto a page before the answer;
``python -m demos quiz`` prints them all with both answers.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from demos import topics
from demos.deck import asks
from demos.deck.claims import Claim, Claims
from demos.deck.demo import Demo, Int
from demos.engine.results import Record, reference, reference_for

ROOT = Path(__file__).resolve().parent.parent
DEMOS = topics.load()


def test_every_demo_that_claims_asks_first_with_three_or_four_choices():
    claiming = [d for d in DEMOS if d.claims is not None]
    assert len(claiming) >= 25
    lacking = [d.key for d in claiming if not isinstance(d.ask, asks.Ask)]
    assert not lacking, f"these demos claim but do not ask: {lacking}"
    for d in claiming:
        assert 3 <= len(d.ask.choices) <= 4 and d.ask.question.endswith("?"), d.key


def test_the_record_answers_every_question_it_holds():
    """The committed H100 records pick one choice for every demo they recorded (each demo from the
    newest record holding it, the one its figure shows): a question whose choices miss the record's
    answer would be a bad question."""
    assert reference() is not None
    answered = 0
    for d in DEMOS:
        rec = reference_for(d.topic, d.name)
        data = d.reference(None, record=rec, seed=False) if rec is not None else None
        if d.ask is None or data is None:
            continue
        i, said = d.ask.answer(data)
        assert i is not None, f"{d.key}: the record's answer ({said}) is none of {d.ask.choices}"
        answered += 1
    assert answered >= 20


def test_count_choices_hold_the_claimed_count_and_read_the_measured_one():
    fused = Claim("{0} ops → {1}", lambda d: (d["ops"], d["kernels"]), {"cpu": "==", "gpu": (">=", "==")}, (6, 1))
    ask = asks.count("kernels?", fused, (2, 3), part=1, noun="kernel")
    assert ask.choices == ("1 kernel", "2 kernels", "3 kernels")  # the claimed 1 is a choice
    assert ask.answer({"ops": 6, "kernels": 1}) == (0, "1 kernel")
    assert ask.answer({"ops": 6, "kernels": 5}) == (None, "5 kernels")  # measured, but no choice says it
    assert ask.answer({"ops": 6}) == (None, "")  # not measured
    top = asks.count("eager kernels?", fused, (1, 2, 3), part=0, noun="kernel", open_top=True)
    assert top.choices[-1] == "6 or more kernels" and top.answer({"ops": 9, "kernels": 1})[0] == 3


def test_band_edges_are_the_claims_thresholds_on_every_device():
    speed = Claim("over {threshold:g}×", lambda d: d["x"], ">", {"cpu": 1.5, "gpu": 2.0})
    ask = asks.bands("faster?", speed, (1,))
    assert ask.choices == ("under 1×", "1–1.5×", "1.5–2×", "over 2×")
    assert [ask.answer({"x": x})[0] for x in (0.5, 1.0, 1.7, 2.0, 9.0)] == [0, 1, 2, 3, 3]
    within = Claim("within {lo:g}–{hi:g}", lambda d: d["x"], "within", {"gpu": (0.7, 1.4)})
    assert asks.bands("band?", within).choices == ("under 0.7×", "0.7–1.4×", "over 1.4×")
    assert asks.bands("big?", speed, (1_000,)).answer({"x": 12345.0}) == (3, "12,345×")
    with pytest.raises(ValueError, match="read="):
        asks.bands("no claim?", None, (1, 2))
    # declared on its claim, with the panels that ask it: the claim binds the edges and keeps when=
    on_claim = Claim("over {threshold:g}×", "x", ">", {"cpu": 1.5, "gpu": 2.0},
                     ask=asks.bands("faster?", (1,), when=lambda values: values.get("n") == 4))
    assert on_claim.ask.choices == ask.choices and on_claim.ask.asks({"n": 4}) and not on_claim.ask.asks({"n": 5})


def test_a_question_refuses_too_few_or_too_many_choices():
    for choices in (("a", "b"), ("a", "b", "c", "d", "e"), ("a", "a", "b")):
        with pytest.raises(ValueError):
            asks.Ask("?", choices, lambda d: 0)


# -- the panel ----------------------------------------------------------------------------
def _measure_square(run, n: int) -> dict:
    return {"n": n, "square": n * n, "extra": f"n={n}"}


def _figure_square(data, reference):
    from demos.engine import plots

    fig, ax = plots.figure()
    ax.bar([0], [data["square"]])
    return fig


_SQUARE = Claims(Claim("n² = {threshold}", lambda d: d["square"], "==", 16, key="square",
                       ask=asks.count("n = 4: n²?", (4, 8, 12))))
ASKING = Demo("asking", "A panel that asks", controls=[Int("n", 4, lo=1, hi=9)], measure=_measure_square,
              figure=_figure_square, claims=_SQUARE)


def test_the_panel_asks_then_shows_the_figure_and_marks_the_choice(monkeypatch):
    monkeypatch.delenv("DEMOS_STATIC", raising=False)
    panel = ASKING.open_panel()
    panel._build()
    panel.update()
    hidden = [panel.controls_row, panel.out, panel.table]
    assert all(p.layout.display == "none" for p in hidden) and panel.ask_box.layout.display != "none"
    assert [b.description for b in panel.choice_buttons] == ["A. 4", "B. 8", "C. 12", "D. 16"]
    assert panel.mark.value == "" and panel.last_png  # measured while the room thinks, not shown
    panel.choice_buttons[1].click()  # the room says B
    assert all(p.layout.display is None for p in hidden) and panel.ask_box.layout.display == "none"
    assert "you said <b>B</b>" in panel.mark.value and "<b>D</b> <span style='color:#b00020'>✗</span> (16)" in panel.mark.value
    assert "this machine" in panel.mark.value
    panel.controls["n"].value = 3  # a move after the reveal re-marks what is shown now
    panel.join(300)
    assert "— (9)" in panel.mark.value


WHEN = Demo("asking_when", "A demo on two slides, asking on one", controls=[Int("n", 4, lo=1, hi=9)],
            measure=_measure_square, figure=_figure_square,
            claims=[Claim("n² = {threshold}", "square", "==", 16,
                          ask=asks.count("n = 4: n²?", (4, 8, 12), when=lambda values: values["n"] == 4))])


def test_a_demo_on_several_slides_asks_only_where_its_question_applies(monkeypatch):
    monkeypatch.delenv("DEMOS_STATIC", raising=False)
    asked, shown = WHEN.open_panel(), WHEN.open_panel(n=5)
    asked._build()
    shown._build()
    assert asked.ask is not None and hasattr(asked, "ask_box")
    assert shown.ask is None and not hasattr(shown, "ask_box") and shown.out.layout.display != "none"
    part7 = next(d for d in DEMOS if d.key == "yourfn.inspector")
    assert part7.ask.asks(part7.defaults()) and not part7.ask.asks({**part7.defaults(), "preset": "item"})


def test_the_reveal_button_shows_the_answer_without_a_choice(monkeypatch):
    monkeypatch.delenv("DEMOS_STATIC", raising=False)
    panel = ASKING.open_panel()
    panel._build()
    panel.update()
    panel.reveal_button.click()
    assert panel.out.layout.display is None and "you said" not in panel.mark.value
    assert "<b>D</b> (16)" in panel.mark.value


def test_the_mark_names_the_records_answer_beside_this_machines():
    demo = next(d for d in DEMOS if d.key == "fusion.kernels")
    rec = Record.load(ROOT / "assets" / "results" / "h100-80gb-hbm3-2026-11-24-171524.json")
    ref = demo.reference(None, record=rec, seed=False)
    here = {**ref, "recorded": False}
    here["forms"] = {**ref["forms"], "torch_compile": {**ref["forms"]["torch_compile"], "count": 3}}
    html = asks.mark_html(demo.ask, 0, here, "this machine (CPU)", ref, "H100 80GB HBM3 record")
    assert "you said <b>A</b>" in html and "this machine (CPU): <b>C</b> <span style='color:#b00020'>✗</span> (3 kernels)" in html
    assert "H100 record: A (1 kernel)" in html  # the stamp under the figure names it in full


# -- headless -------------------------------------------------------------------------------
def test_headless_the_question_comes_first_and_the_export_gives_it_a_page(monkeypatch):
    """render_static prints the question (marked for the export), then the figure and the answer
    line; questions_first lifts the question onto a slide before the slide of the live cell."""
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    monkeypatch.setenv("DEMOS_STATIC", "1")
    InteractiveShell.instance()
    with capture_output() as cap:
        ASKING()
    kinds = [("meta" if o.metadata.get(asks.QUESTION_META) else "png" if "image/png" in o.data else "html")
             for o in cap.outputs]
    assert kinds == ["meta", "png", "html"], kinds
    assert cap.outputs[0].data["text/markdown"].startswith("## Predict first\n\n**n = 4: n²?**")
    assert "Answer — this machine" in cap.outputs[2].data["text/html"] and ": D (16)" in cap.outputs[2].data["text/html"]

    nb = nbformat.v4.new_notebook()
    title = nbformat.v4.new_markdown_cell("# Title")
    live = nbformat.v4.new_markdown_cell("## Live: squares")
    cell = nbformat.v4.new_code_cell("from demos.topics import x\nx.asking()")
    notes = nbformat.v4.new_markdown_cell("**Say:** …")
    for c, st in ((title, "slide"), (live, "slide"), (cell, "-"), (notes, "notes")):
        c.metadata["slideshow"] = {"slide_type": st}
    cell.outputs = [nbformat.v4.new_output("display_data", data=o.data, metadata=o.metadata) for o in cap.outputs]
    nb.cells = [title, live, cell, notes]
    assert asks.questions_first(nb) == 1
    assert [c.source.split("\n")[0] for c in nb.cells] == ["# Title", "## Predict first", "## Live: squares",
                                                          cell.source.split("\n")[0], "**Say:** …"]
    assert nb.cells[1].metadata["slideshow"]["slide_type"] == "slide"
    assert len(nb.cells[3].outputs) == 2 and asks.questions_first(nb) == 0  # lifted once


# -- the lecturer's sheet ---------------------------------------------------------------------
def test_quiz_prints_every_question_with_this_machines_and_the_records_answers():
    run = subprocess.run([sys.executable, "-m", "demos", "quiz", "--record-only"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    out = run.stdout
    for d in DEMOS:
        if d.ask is not None:
            assert d.ask.question in out and "   ".join(d.ask.lettered()) in out, d.key
    assert out.index("eager.timeline") < out.index("fusion.kernels") < out.index("yourfn.inspector")  # slide order
    assert "H100 80GB HBM3 record: A (1 kernel)" in out
    measured = subprocess.run([sys.executable, "-m", "demos", "quiz", "--demo", "internals.guards"], cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
    assert measured.returncode == 0, measured.stderr[-2000:]
    assert "this machine (" in measured.stdout and ": B (2 compiles) [measured now" in measured.stdout
    bad = subprocess.run([sys.executable, "-m", "demos", "quiz", "--demo", "nope"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode != 0 and len(bad.stderr.strip().splitlines()) == 1
