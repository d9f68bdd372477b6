"""docs/authoring.md's "Adding a demo" example, run as it stands: its code block is executed in a
module of its own and the demo it declares goes through the checks every declared demo gets
(measure at the defaults and at another control value, claims that read only what ``measure``
returned, its question, a stamped figure with nothing outside it), so the guide cannot drift
from the code. And the defaults a new author relies on without knowing it: timers that
synchronise, ``run.compile`` of a builtin, a demo bound under its own name."""
from __future__ import annotations

import re
import sys
import types

import pytest

import demos  # noqa: F401  (environment before torch/JAX)
from demos.engine.settings import PROJECT_ROOT

GUIDE = PROJECT_ROOT / "docs" / "authoring.md"


def guide_example() -> str:
    """The first Python block under "## Adding a demo"."""
    text = GUIDE.read_text()
    section = text[text.index("## Adding a demo"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.fixture(scope="module")
def example():
    """The guide's block, executed as a module (``guide_example``), and its demo; the demo leaves
    the registry afterwards."""
    from demos.deck import demo as demo_module

    module = types.ModuleType("guide_example")
    sys.modules["guide_example"] = module
    exec(compile(guide_example(), str(GUIDE), "exec"), module.__dict__)
    declared = [v for v in vars(module).values() if isinstance(v, demo_module.Demo)]
    assert len(declared) == 1, declared
    yield module, declared[0]
    demo_module._REGISTRY.pop(declared[0].key, None)
    sys.modules.pop("guide_example", None)


def deck_names(source: str) -> list[str]:
    """The deck's names a block uses: what it imports from ``demos`` (a module's attributes it reads
    named as ``asks.count``), what it reads of ``run`` (``run.timed``), and ``measure`` itself."""
    import ast

    tree = ast.parse(source)
    imported = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                and (n.module or "").startswith("demos") for a in n.names}
    modules = {n.value.id for n in ast.walk(tree) if isinstance(n, ast.Attribute)
               and isinstance(n.value, ast.Name) and n.value.id in imported}
    names = {f"{n.value.id}.{n.attr}" for n in ast.walk(tree) if isinstance(n, ast.Attribute)
             and isinstance(n.value, ast.Name) and n.value.id in modules | {"run"}}
    return sorted((imported - modules) | names | {"measure"})


def test_the_guides_example_is_short_and_uses_only_what_the_guide_explains(example):
    source = guide_example()
    lines = [ln for ln in source.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    names = deck_names(source)
    assert len(lines) <= 15, len(lines)  # imports included
    assert len(names) <= 12, names
    guide = GUIDE.read_text()
    concepts = guide[guide.index("The concepts an author learns"):guide.index("Then put it on a slide")]
    assert not [n for n in names if f"`{n}" not in concepts and f"`{n.split('.')[-1]}" not in concepts], names
    stated = re.search(r"It is (\d+) lines\. It uses (\w+) names", guide)  # the sentence above the list
    assert stated and int(stated.group(1)) == len(lines), (stated and stated.group(0), len(lines))
    assert stated.group(2) == ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
                               "ten", "eleven", "twelve"][len(names)], (stated.group(0), names)


def test_counting_the_deck_names_counts_what_a_block_uses():
    source = ("from demos.deck.demo import Demo, asks\nfrom numpy import sqrt\n"
              "def measure_x(run, N=2):\n    return {'a': run.timed(lambda: sqrt(N)), 'b': run.timed(lambda: 1)}\n"
              "x = Demo('x', 'X', measure=measure_x, ask=asks.among('q?', ('a', 'b', 'c'), lambda d: 0))\n")
    assert deck_names(source) == ["Demo", "asks.among", "measure", "run.timed"]


def test_the_guides_example_passes_the_checks_every_demo_gets(example):
    from demos import topics
    from demos.engine import plots

    module, gelu = example
    assert topics.bound_as(gelu) == "guide_example.gelu"  # the live cell guide_example.gelu() reaches it
    for values in ({}, {"dtype": "bfloat16", "N": 2**12}):
        data = gelu.run(values)
        for claim in gelu.claims.items:  # each claim reads what measure returned: no missing key
            claim.value(data)
        assert all(gelu.check_claims(data).values()), gelu.check_claims(data)
        assert data["kernels"] == 1  # the law the example claims, on this machine
        for form in ("eager", "compiled"):
            t = data[form]
            assert t["p10_s"] <= t["median_s"] <= t["p90_s"] and t["first_s"] > 0
        choice, said = gelu.ask.answer(data)  # the question the slide asks first has an answer here
        assert gelu.ask.choices[choice] == "1 kernel" and said, (choice, said)
        fig = gelu.draw(data)
        assert getattr(fig, "_demos_stamped", False)  # stamped by the demo: the function did not
        assert plots.texts_outside(fig) == []
        assert plots.texts_too_small(fig) == [] and plots.texts_overlapping(fig) == []
    with pytest.raises(Exception, match="power of two"):
        gelu.run({"N": 3})


def test_a_demo_bound_under_another_name_is_refused():
    from demos import topics
    from demos.deck import demo as demo_module

    module = types.ModuleType("guide_misnamed")
    sys.modules["guide_misnamed"] = module
    source = guide_example().replace("gelu = Demo(", "gelu_demo = Demo(")
    try:
        exec(compile(source, "guide_misnamed", "exec"), module.__dict__)
        with pytest.raises(ValueError, match=r"must bind it under its own name: gelu = Demo\('gelu'"):
            topics.bound_as(module.gelu_demo)
    finally:
        demo_module._REGISTRY.pop("guide_misnamed.gelu", None)
        sys.modules.pop("guide_misnamed", None)


def test_run_compile_takes_a_builtin():
    import torch
    import torch.nn.functional as F

    from demos.engine.measurement import Run

    compiled = Run().compile(F.gelu)
    x = Run.randn(4096).cpu()
    # Inductor's vectorised erf and ATen's differ by up to ~1e-6 here (measured: 9.8e-7 over 30
    # runs), about 8 float32 ulps of 1: gelu within 16 ulps, not the same bits
    assert torch.allclose(compiled(x), F.gelu(x), rtol=0, atol=16 * torch.finfo(torch.float32).eps)


def test_the_timers_synchronise_by_default(monkeypatch):
    """Without a sync argument, Run's timers block on the JAX arrays a call returns, and
    synchronise a GPU torch has started (faked: no GPU here), whatever the call returned."""
    import torch

    from demos.engine import measurement, timing

    blocked, synced = [], []

    class Pending:  # a JAX array's side of it: block_until_ready
        def block_until_ready(self):
            blocked.append(self)
            return self

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: synced.append(1))
    run = measurement.Run()
    run.first_call(lambda: (Pending(), {"b": Pending()}))
    assert len(blocked) == 2 and len(synced) == 1
    run.timed(lambda: None, budget_s=0.001, min_samples=3)  # returns nothing: the device is still synchronised
    assert len(synced) > 1
    before = len(synced)
    run.first_call(lambda: None, timing.no_sync)  # asked for by name
    assert len(synced) == before


def test_the_default_figure_redraws_into_a_kept_figure_as_a_new_one_draws(example):
    """The figure a demo without ``figure=`` gets (``plots.timing_bars``) passes the check every
    declared demo's figure passes (tests/test_figure_slots.py), from this machine's measurement."""
    from test_figure_slots import test_a_reused_figure_draws_what_a_new_one_draws as same_pixels

    same_pixels(example[1], [])


def test_what_the_example_leaves_out_has_a_default(example):
    module, gelu = example
    data = gelu.run({"N": 2**12})
    assert data["extra"] == "N=2^12, dtype=float32" and "N=2^12, dtype=float32" in data["stamp"]
    assert gelu.matching == () and gelu.pacing == "live" and not gelu.button
    assert gelu.claims["kernels"].ask is gelu.ask  # the question is the claim's
    assert gelu.ask.question.startswith("How many kernels")


def test_run_keeps_a_compiled_copy_per_key_and_counts_kernels_once_per_signature(monkeypatch):
    import torch
    import torch.nn.functional as F

    from demos.deck import context
    from demos.engine.devices import torch_device

    run = context.DemoRun()
    a, b = run.compiled(F.gelu, 2**10, "float32"), run.compiled(F.gelu, 2**12, "float32")
    assert a is run.compiled(F.gelu, 2**10, "float32") and a is not b  # a new key compiles anew
    counted = []
    real = context.inductor_code
    monkeypatch.setattr(context, "inductor_code", lambda fn, *args: counted.append(fn) or real(fn, *args))
    x = run.randn(2**10)
    assert run.kernels(F.gelu, x) == 1 and run.kernels(F.gelu, run.randn(2**10)) == 1 and len(counted) == 1
    assert run.kernels(F.gelu, run.randn(2**11)) == 1 and len(counted) == 2  # another shape: counted again
    assert torch.equal(x, run.randn(2**10)) and run.randn(4, 8, dtype="bfloat16").dtype == torch.bfloat16
    assert x.device.type == torch.device(torch_device()).type  # on the device the demo measures on


def test_a_claim_names_a_key_and_carries_its_question():
    from demos.deck import asks
    from demos.deck.claims import Claim, Claims

    claim = Claim("{threshold} kernel", "kernels", "==", 1, ask=asks.count("How many?", (2, 3), noun="kernel"))
    assert claim.key == "kernels" and claim.value({"kernels": 1}) == 1
    assert claim.ask.choices == ("1 kernel", "2 kernels", "3 kernels")  # the claimed count is a choice
    assert claim.ask.answer({"kernels": 2}) == (1, "2 kernels")
    verdict = Claims(claim).verdicts({"kernel": 1})[0]  # a key measure never returned: fails, and says so
    assert verdict.status == "fails" and "no 'kernels'" in verdict.condition
    band = Claim("over {threshold}×", "speedup", ">", 1.5, ask=asks.bands("How much faster?", (1,)))
    assert band.ask.choices == ("under 1×", "1–1.5×", "over 1.5×")
