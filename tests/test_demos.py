"""Every declared demo, tested the same way: a new declaration is tested without writing a test.

For each demo (``demos.topics.load()``): the panel draws its default figure; the measurement
goes into a results record, survives a save/load, and is drawn back as the reference beside a
live run and alone in a recorded-only export; moving each control from the defaults redraws a
different figure; and a failing measurement becomes one line in the panel, after which the panel
still works.
"""
from __future__ import annotations

import json

import pytest

import demos  # noqa: F401  (environment before torch/JAX)
from conftest import measured_at_defaults
from demos import topics
from demos.deck.demo import Demo, Pow2Range
from demos.engine import plots
from demos.engine.measurement import Run
from demos.engine.results import Record

DEMOS = topics.load()
IDS = [d.key for d in DEMOS]


def test_every_topic_declares_demos_and_keys_are_unique():
    assert len(IDS) == len(set(IDS))
    assert {d.topic for d in DEMOS} >= {"eager"}
    for d in DEMOS:
        assert isinstance(d, Demo)
        names = [c.name for c in d.control_list()]
        assert all(n.isidentifier() for n in names), names
        for c in d.control_list():
            assert isinstance(c, Pow2Range) or c.default in c.values(), (d.key, c.name, c.default)


def _png(panel) -> bytes:
    assert panel.last_error is None, f"{panel.demo.key}: {panel.last_error}"
    assert panel.last_png and panel.last_png[:8] == b"\x89PNG\r\n\x1a\n"
    return panel.last_png


@pytest.mark.slow
@pytest.mark.parametrize("demo", DEMOS, ids=IDS)
def test_demo_draws_records_and_redraws(demo: Demo, tmp_path, monkeypatch):
    # the measurement at the defaults, from the declared state (once per session for a demo that
    # opens warmed: conftest.measured_at_defaults; tests/test_ordering.py checks the claims in every
    # order, in a process of its own); the slide's claims hold for it
    measured = measured_at_defaults(demo)
    failed = [c for c, ok in demo.check_claims(measured).items() if not ok]
    assert not failed, f"{demo.key}: {failed}"
    # the panel draws that measurement (memoised: not measured again)
    panel = demo.open_panel()
    panel.initial = None  # not `make warm`'s result (the deck's tests warm the demos that open warmed)
    panel._build()
    panel.update()
    _png(panel)
    assert panel.renders == 1
    # every text of the figure stays inside it at the slide's size, none is under plots.MIN_TEXT_PT
    # and no two overlap, with this machine's numbers (beside the record's, where one matches)
    drawn = demo.draw(measured, demo.reference(measured.get("values")))
    drawn = drawn[0] if isinstance(drawn, tuple) else drawn
    assert not plots.texts_outside(drawn), demo.key
    assert not plots.texts_too_small(drawn), demo.key
    assert not plots.texts_overlapping(drawn), demo.key

    # the measurement is a record section that survives JSON, and draws back as the reference (the
    # measurement just made is stored, not measured again)
    rec = Record.new(label="test")
    stored = demo.store(rec, measured)
    assert json.loads(json.dumps(stored)) == stored
    path = rec.save(tmp_path / "rec.json")
    loaded = Record.load(path)
    ref = demo.reference(panel.values(), record=loaded)
    assert ref is not None and ref["recorded"] and ref["stamp"]
    monkeypatch.setattr("demos.engine.results.reference", lambda path=None: loaded)
    beside = demo.render(panel.values(), lambda f, m="": None)
    assert beside.result is not None
    monkeypatch.setenv("DEMOS_RESULTS", str(path))
    monkeypatch.setenv("DEMOS_STATIC", "1")

    def never(*_a, **_kw):
        raise AssertionError("measured although a recorded run was asked for")

    with monkeypatch.context() as m:  # a recorded-only export draws the record without measuring
        m.setattr(Run, "__init__", never)  # every measurement starts by making its Run
        m.setattr(demo._state, "memo", None)
        alone = demo.render(panel.values(), lambda f, m="": None).result
    fig = alone[0] if isinstance(alone, tuple) else alone
    assert any(t.get_text().startswith("Recorded on") for t in fig.texts), demo.key
    monkeypatch.delenv("DEMOS_RESULTS")
    monkeypatch.delenv("DEMOS_STATIC")
    monkeypatch.setattr("demos.engine.results.reference", lambda path=None: None)

    # each control, moved from the slide's defaults (a panel opened anew on the measurement at the
    # defaults, as a student first moves one), redraws a different figure
    for spec in panel.specs:
        demo.adopt(measured)
        panel = demo.open_panel()
        panel.initial = None
        panel._build()
        panel.update()
        base = _png(panel)
        widget = panel.controls[spec.name]
        new = spec.neighbour(widget.value)
        if new == widget.value:
            continue
        widget.value = new
        if panel.run_button and not spec.view:  # a view-only control redraws by itself, Run or not
            panel.update()
        panel.join(300)  # a moved control's redraw takes its turn in the background
        assert panel.renders == 2, f"{demo.key}: moving {spec.name} did not redraw"
        assert _png(panel) != base, f"{demo.key}: moving {spec.name} to {new!r} drew the same figure"


@pytest.mark.parametrize("demo", DEMOS, ids=IDS)
def test_a_failing_measurement_is_one_line_and_the_panel_survives(demo: Demo, monkeypatch):
    def boom(*_a, **_kw):
        raise RuntimeError("CUDA error: an illegal memory access was encountered\nlong native trace…")

    released = []
    panel = demo.open_panel()
    panel.initial = None  # a demo that opens warmed would otherwise draw `make warm`'s result first
    monkeypatch.setattr(Run, "__init__", boom)  # every measurement starts by making its Run: it fails
    monkeypatch.setattr(demo._state, "memo", None)
    # what a failure left is released (a full garbage collection: errors.release_memory, run for real
    # by the out-of-memory tests; here counted, not run 34 times over a heap of compiled models)
    monkeypatch.setattr("demos.deck.ui.release_memory", lambda: released.append(1))
    panel._build()
    panel.update()
    assert panel.last_error and "\n" not in panel.last_error and "illegal memory access" in panel.last_error
    assert "⚠" in panel.status.value
    assert panel.renders == 0 and released == [1]


def _probe_demo(name: str, topic: str, calls: list, **kw) -> Demo:
    """A tiny declared demo that counts its measurements (for the kept-result tests)."""
    from demos.deck.demo import Choice

    def measure(run, n: int) -> dict:
        calls.append(n)
        return {"n": n, "extra": f"n={n}"}

    def figure(data, reference):
        from demos.engine import plots

        fig, ax = plots.figure()
        ax.set_title(data.get("stamp", ""))
        ax.plot(range(data["n"]))
        return fig

    measure.__module__ = f"tests.{topic}"  # the topic is the declaring module's name
    return Demo(name, name, controls=[Choice("n", 3, options=[3, 4])], measure=measure, figure=figure, **kw)


def test_a_warmed_demo_opens_on_the_warm_result_and_measures_on_run(tmp_path, monkeypatch):
    """Run-button sweeps and cold compiles open on what `make warm` measured (stamped so), measure
    only on Run, and ignore a warm result that their code can no longer draw."""
    import demos.deck.demo as dm

    calls = []
    monkeypatch.setattr(dm, "WARMED_DIR", tmp_path)
    demo = _probe_demo("sweep", "instantprobe", calls, panel="warmed")
    demo.warm_up()
    assert calls == [3] and list(tmp_path.glob("instantprobe.sweep-*.json"))
    panel = demo.open_panel()
    panel._build()
    panel.update()
    assert calls == [3] and panel.renders == 1 and panel.last_error is None  # drawn from the kept result
    panel.button.click()
    panel.join(300)
    assert calls == [3, 3] and panel.renders == 2  # Run measures
    for f in tmp_path.glob("*.json"):  # a kept result of an older shape is measured over, not shown as an error
        f.write_text(json.dumps({"saved": "x", "source": dm._source_hash(demo), "data": {"stamp": "s"}}))
    demo.forget()
    panel = demo.open_panel()
    panel._build()
    panel.update()
    assert panel.last_error is None and calls == [3, 3, 3]


def test_a_cell_that_starts_on_other_values_opens_on_their_warm_result(tmp_path, monkeypatch):
    """`make warm` keeps a result for each configuration it measures (part 7's presets), and a
    live cell that starts there opens on it; that result is then the latest measurement there."""
    import demos.deck.demo as dm

    calls = []
    monkeypatch.setattr(dm, "WARMED_DIR", tmp_path)
    demo = _probe_demo("presets", "presetprobe", calls, panel="warmed", configs=dm.Configs(warm=[{}, {"n": 4}]))
    demo.warm_up()
    assert calls == [3, 4] and len(list(tmp_path.glob("presetprobe.presets-*.json"))) == 2
    demo.forget()
    for panel, n in ((demo.open_panel(n=4), 4), (demo.open_panel(), 3)):
        panel._build()
        panel.update()
        assert panel.last_data["n"] == n and "by `make warm` at " in panel.last_data["stamp"]
    assert calls == [3, 4] and demo.run({"n": 3})["n"] == 3 and calls == [3, 4]
    panel.button.click()  # Run measures again
    panel.join(300)
    assert calls == [3, 4, 3]


def test_a_warm_result_is_drawn_in_the_view_the_cell_asks_for(tmp_path, monkeypatch):
    """``yourfn.inspector(view="kernels")`` opens on the warm result in the kernels view, whatever
    view it was measured in, and a view move redraws it without measuring."""
    import demos.deck.demo as dm
    from demos.deck.demo import Choice

    calls = []
    monkeypatch.setattr(dm, "WARMED_DIR", tmp_path)

    def measure(run, n: int) -> dict:
        calls.append(n)
        return {"n": n}

    measure.__module__ = "tests.viewprobe"
    def figure(data, reference):
        from demos.engine import plots

        fig, ax = plots.figure()
        ax.set_title(data["values"]["view"])
        return fig

    demo = Demo("views", "views", controls=[Choice("n", 3, options=[3, 4]), Choice("view", "a", options=["a", "b"], view=True)],
                measure=measure, figure=figure, panel="warmed")
    demo.warm_up()
    panel = demo.open_panel(view="b")
    panel._build()
    panel.update()
    assert panel.last_error is None and panel.last_data["values"]["view"] == "b" and calls == [3]
    panel.controls["view"].value = "a"
    panel.join(300)
    assert panel.renders == 2 and panel.last_data["values"]["view"] == "a" and calls == [3]


def test_a_warmed_panel_says_what_it_shows_and_a_move_waits_for_run(tmp_path, monkeypatch):
    """A warmed panel opens on `make warm`'s result and says so; moving a measured control does not
    measure until Run (one pacing: ``panel="warmed"``)."""
    import demos.deck.demo as dm

    calls = []
    monkeypatch.setattr(dm, "WARMED_DIR", tmp_path)
    monkeypatch.setattr("demos.deck.ui.static_mode", lambda: False)
    monkeypatch.setattr("IPython.display.display", lambda *a, **k: None)
    demo = _probe_demo("slowfirst", "openswarmprobe", calls, panel="warmed")
    demo.warm_up()
    assert calls == [3] and demo.opens_warmed and demo.button
    demo.forget()
    panel = demo.open_panel()
    panel.show()
    panel.join(300)
    assert calls == [3] and panel.renders == 1 and "press Run to measure it again" in panel.status.value
    first = panel.last_png
    panel.controls["n"].value = 4
    panel.join(300)
    assert calls == [3] and panel.renders == 1
    panel.button.click()
    panel.join(300)
    assert calls == [3, 4] and panel.renders == 2 and panel.last_png != first and "done in" in panel.status.value


def test_run_measures_even_before_a_warmed_panels_first_redraw(tmp_path, monkeypatch):
    """Run measures, never draws `make warm`'s result, even on a panel built but not yet redrawn (a
    test or a script driving it; CI once drew part 7's warm result where a Run was due)."""
    import demos.deck.demo as dm

    calls = []
    monkeypatch.setattr(dm, "WARMED_DIR", tmp_path)
    monkeypatch.setattr("demos.deck.ui.static_mode", lambda: False)
    demo = _probe_demo("runfirst", "runfirstprobe", calls, panel="warmed")
    demo.warm_up()
    demo.forget()
    panel = demo.open_panel()
    assert panel.initial is not None  # it would open on the warm result
    panel._build()
    panel.button.click()
    panel.join(300)
    assert calls == [3, 3] and panel.renders == 1 and "done in" in panel.status.value


def test_a_declaration_is_immutable_and_its_docstring_example_runs():
    import dataclasses
    import doctest

    import demos.deck.demo as dm

    demo = DEMOS[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        demo.pacing = "run"
    with pytest.raises(ValueError, match="pacing"):
        _probe_demo("bad", "badprobe", [], panel="kept")
    with pytest.raises(ValueError, match=r"measure\(run, \*\*values\)"):
        Demo("old", "old", controls=[], measure=lambda n: {}, figure=lambda d, r: None)
    assert doctest.testmod(dm).failed == 0


def test_each_measurement_gets_a_run_whose_cache_forget_drops():
    from demos.engine.measurement import Run

    seen = []

    def measure(run, n: int) -> dict:
        assert isinstance(run, Run)
        seen.append(run)
        run.cache[n] = run.cache.get(n, 0) + 1
        return {"n": n, "hits": run.cache[n]}

    measure.__module__ = "tests.runprobe"
    demo = Demo("counts", "counts", controls=[dm_choice()], measure=measure, figure=lambda d, r: None)
    assert demo.run({"n": 3})["hits"] == 1
    assert demo.run({"n": 3})["hits"] == 1  # the latest measurement at these values: not measured again
    assert demo.run({"n": 4})["hits"] == 1
    assert demo.run({"n": 3})["hits"] == 2  # measured again, with the demo's cache remembering
    assert len({id(r) for r in seen}) == 3 and len({id(r.cache) for r in seen}) == 1
    demo.forget()
    assert demo.run({"n": 4})["hits"] == 1 and seen[-1].cache == {4: 1}


def dm_choice():
    from demos.deck.demo import Choice

    return Choice("n", 3, options=[3, 4])


def test_a_recorded_only_figure_shows_the_view_the_cell_asks_for(monkeypatch):
    """`make pdf RESULTS=…` draws the record in the view the live cell names
    (``yourfn.inspector(view="kernels")``), not the view the record was measured in."""
    from demos.engine.settings import PROJECT_ROOT
    from demos.topics import yourfn

    monkeypatch.setenv("DEMOS_STATIC", "1")
    monkeypatch.setenv("DEMOS_RESULTS", str(PROJECT_ROOT / "assets" / "results"))
    for view, says in (("kernels", "generated code (Inductor)"), ("breaks", "graphs: 1 · graph breaks: 0")):
        drawn = yourfn.inspector.render(yourfn.inspector.validate({"view": view}), lambda f, m="": None)
        assert drawn.data["values"]["view"] == view
        assert says in [t.get_text() for t in drawn.result.texts], view
