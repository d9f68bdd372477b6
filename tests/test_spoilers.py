"""Every vote before its answer (demos/deck/spoilers.py): nothing shown in a part before a question
states one of its choices. The check reads the committed slides and the figures drawn from the
committed records; it is shown to find each of the ten places an expert read found at b91b7ef
(issue 57), as they stood then (tests/fixtures/spoiled_b91b7ef.json holds those cells, and the
figure text of the one case that was a figure)."""
from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

import demos  # noqa: F401  (environment before torch/JAX)
from demos import topics
from demos.deck import asks, spoilers
from demos.deck.asks import Ask

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "spoiled_b91b7ef.json"


@pytest.fixture(scope="module")
def by_key():
    return {d.key: d for d in topics.load()}


def test_every_vote_comes_before_its_answer(by_key):
    found, _unread = spoilers.check(list(by_key.values()))
    assert not found, "\n".join(found)


def _case_notebook(case: dict):
    """The part as far as the case needs: its title slide, the cells that gave the answer away,
    then the live cell that asks."""
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_markdown_cell(case["title"], metadata={"slideshow": {"slide_type": "slide"}}))
    for _i, cell in sorted(case["cells"].items(), key=lambda kv: int(kv[0])):
        make = nbformat.v4.new_markdown_cell if cell["cell_type"] == "markdown" else nbformat.v4.new_code_cell
        nb.cells.append(make(cell["source"], metadata={"slideshow": {"slide_type": "slide"}}))
    nb.cells.append(nbformat.v4.new_code_cell(case["asks"]["source"]))
    return nb


CASES = json.loads(FIXTURE.read_text())["cases"]


@pytest.mark.parametrize("case", CASES, ids=[f"{c['part'][:2]}:{c['asks']['cell']}" for c in CASES])
def test_the_check_finds_each_case_the_expert_found_as_it_stood(case, by_key):
    """Each of the ten, with the question as it is declared now: the cells as they stood at
    b91b7ef state a choice before the vote."""
    figure_texts = json.loads(FIXTURE.read_text())["figure_texts"]
    nb = _case_notebook(case)
    window = spoilers.windows(nb, by_key, case["part"][:2], lambda d: figure_texts.get(d.key))[-1]  # the one that asks last
    found = spoilers.findings(window)
    assert found, f"{case['part']}: cells {sorted(case['cells'])} state no choice of {window.ask.question!r}"
    assert any(not f.split(" states ")[0].endswith("cell 0") for f in found), found  # not the title slide alone


def test_a_number_with_its_unit_is_found_in_any_form():
    ask = Ask("How many times further right does the point move?", ("×2", "×6", "×10", "×22"), lambda d: 3)
    tells = {t.choice: t for t in spoilers.tells(ask) if t.kind == "number"}
    for text in ("intensity ×22", "22× the intensity", "a 22x move", "× 22 further"):
        assert tells["×22"].found(text), text
    assert not tells["×22"].found("×220 or 1.22× or 122×")
    count = Ask("How many kernels?", ("1 kernel", "2 kernels", "6 kernels"), lambda d: 0)
    one = next(t for t in spoilers.tells(count) if t.choice == "1 kernel")
    assert one.found("Inductor emits one kernel") and one.found("a single kernel") and one.found("1 kernel here")
    assert not one.found("11 kernels") and not one.found("0.1 kernel")


def test_the_premise_of_a_question_is_no_tell():
    """Stated in the question itself ("Three matmuls written"), a choice's number is its premise."""
    ask = Ask("Three matmuls written, one result never read: how many run?", ("1 matmul", "2 matmuls", "3 matmuls"),
              lambda d: 1)
    choices = {t.choice for t in spoilers.tells(ask) if t.kind == "number"}
    assert choices == {"1 matmul", "2 matmuls"}


def test_distinctive_words_meet_in_one_sentence_and_a_kernel_name_is_its_words():
    ask = Ask("The compiled lane runs one kernel. What is it named after?",
              ("the function it compiles", "the ops it fused: add, cos, mul, relu, sin", "its position only: kernel_0"),
              lambda d: 1)
    (words,) = [t for t in spoilers.tells(ask) if t.kind == "words" and "add" in t.choice]
    assert words.found("triton_poi_fused_add_cos_mul_relu_sin_0.run(arg0_1)")
    assert not words.found("add them. Then a cos. Later a mul.")  # one word a sentence is no statement


def test_declared_tells_name_a_choice_and_compile():
    with pytest.raises(ValueError, match="not among its choices"):
        Ask("How many?", ("1", "2", "3"), lambda d: 0, tells=(("4", "four"),))
    with pytest.raises(Exception):
        asks.among("Which?", ("a b", "c d", "e f"), lambda d: 0, tells={"a b": ("(unclosed",)})


def test_a_slide_that_states_a_choice_before_its_vote_is_found(by_key):
    """A slide written today that says the answer, before the live cell that asks, is named; the
    same slide after the cell is not (the vote came first)."""
    nb = nbformat.v4.new_notebook()
    title = nbformat.v4.new_markdown_cell("# Part 4\n## Guards", metadata={"slideshow": {"slide_type": "slide"}})
    spoiler = nbformat.v4.new_markdown_cell("## Guards\n\n- float64 after float32: a recompile, one more graph",
                                            metadata={"slideshow": {"slide_type": "slide"}})
    live = nbformat.v4.new_code_cell("from demos.topics import internals\ninternals.guards()")
    nb.cells = [title, spoiler, live]
    (window,) = spoilers.windows(nb, by_key, "04")
    assert any("cell 1" in f and "2 compiles" in f for f in spoilers.findings(window))
    nb.cells = [title, live, spoiler]
    (window,) = spoilers.windows(nb, by_key, "04")
    assert spoilers.findings(window) == []
