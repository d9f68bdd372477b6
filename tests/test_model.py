"""Part 6 (demos.topics.model): the model's four forms agree, compiled gradients match eager,
and the slides' claims hold on this device. Every panel drawing, recording and redrawing on
every control is tests/test_demos.py's; the notebook executing is tests/test_notebooks.py's.

Sizes: the CPU defaults (4 layers, D=128, 4 heads, batch 4 × seq 64) unless a test says
otherwise; the tests here share one ``Run`` (RUN), so its cache keeps each size's bundle."""
from __future__ import annotations

import math
from collections import Counter

import pytest

import demos  # noqa: F401  (environment before torch/JAX)
from demos.engine import model_zoo as zoo
from demos.engine.devices import torch_device
from demos.engine.errors import DemoError, one_line
from demos.engine.measurement import Run
from demos.topics import model

cpu_only = pytest.mark.skipif(torch_device() != "cpu", reason="CPU form of the claim (GPU form: -m gpu)")
RUN = Run()  # one demo's memory for the whole module: its bundles (compiled models) are reused


# =======================================================================================
# Units
# =======================================================================================
@cpu_only
def test_cpu_defaults_are_a_small_stack():
    cfg = model.config()
    assert (cfg.layers, cfg.width, cfg.heads, cfg.batch, cfg.seq, cfg.dtype) == (4, 128, 4, 4, 64, "float32")
    assert cfg.params_count() == sum(p.numel() for p in zoo.torch_model(cfg).parameters())


def test_bad_sizes_are_one_clear_line():
    for kw, text in (({"tokens": "lots"}, "batch x seq"), ({"dtype": "int8"}, "dtype"),
                     ({"width": 2**17, "layers": 256}, "out of memory")):
        with pytest.raises(DemoError, match=text) as err:
            model.config(**kw)
        assert "\n" not in one_line(err.value)
    with pytest.raises(DemoError, match="not divisible"):
        zoo.check(zoo.Config(width=100, heads=3))
    with pytest.raises(DemoError, match="caches"):
        model.measure_compile_cost(Run(), caches="lukewarm")


def test_break_even_and_the_op_split():
    assert model.break_even(10.0, 0.030, 0.020) == pytest.approx(1000)
    assert math.isinf(model.break_even(10.0, 0.020, 0.030))
    assert zoo.split_ops(Counter(view=3, t=1, addmm=2)) == {"total": 6, "layout": 4, "compute": 2}


# =======================================================================================
# The model: four forms, one function; compiled gradients match eager
# =======================================================================================
def test_forward_outputs_of_the_four_forms_agree():
    with model.threads():
        agree = model.agreement(model.bundle(RUN, model.config()))
    assert set(agree) == {"torch_compile", "jax_eager", "jax_jit"}
    assert model.speed_claims["agree"].holds(max(agree.values()), "cpu"), agree  # max |Δ| ÷ max |y|, float32


def test_compiled_training_gradients_match_eager_and_jax():
    import jax
    import numpy as np

    b = model.bundle(RUN, model.config())
    grads = {}
    with model.threads():
        b.call("torch_compile", True)  # compiled (warm) and stepped once: compare at the current weights
        for name, m in (("eager", b.model), ("compiled", b.compiled)):
            b.opt.zero_grad(set_to_none=True)
            zoo.torch_loss(m, b.x, b.t).backward()
            grads[name] = {n: p.grad.detach().clone() for n, p in b.model.named_parameters()}
    assert len(grads["eager"]) == 12 * b.cfg.layers
    for n, g in grads["eager"].items():
        assert np.allclose(grads["compiled"][n].numpy(), g.numpy(), rtol=1e-3, atol=1e-6), n
    params = zoo.jax_params(b.model)
    jg = jax.grad(zoo.jax_loss)(params, zoo.jax_array(b.x), zoo.jax_array(b.t), b.cfg.heads)
    for i, layer in enumerate(jg):
        for n, g in layer.items():
            ref = grads["eager"][f"layers.{i}.{n}"].numpy()
            got = np.asarray(g).T if ref.ndim == 2 else np.asarray(g)
            assert np.allclose(got, ref, rtol=1e-3, atol=1e-6), (i, n)


# =======================================================================================
# The slides' claims, on this device
# =======================================================================================
def _fresh(expr: str):
    """Measure in a fresh process, as a lecture's kernel would: compiled-graph counts must not
    depend on what other tests compiled before in this one."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    code = ("import json, demos\nfrom demos.engine.measurement import Run\nfrom demos.topics import model\n"
            f"print(json.dumps({expr}, default=str))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900,
                         cwd=Path(__file__).resolve().parent.parent)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


# At the defaults (one forward: eager 196 aten ops, 49 per block → one graph, 21 fused kernels + 16
# library calls; the backward's peak and saved tensors), model.ops' and model.backward's claims are
# checked from the declared state by tests/test_ordering.py, in a fresh process, in both orders.
def test_claim_eager_issues_many_times_the_ops_compiled_launches_in_a_training_step():
    tr = _fresh('model.measure_ops(Run(), step="training")')
    # forward + backward: many times as many eager ops as fused kernels; a step issues ~660 ops in all
    claims = model.ops.check_claims(tr)
    assert claims and all(claims.values()), (claims, model.ops_totals(tr))


def _op_heavy_training() -> dict:
    """The op-heavy training step measured as the demo measures it: from the declared state."""
    with RUN.declared():
        _OP_HEAVY[:] = [model.measure_speed(RUN, step="training", **model.OP_HEAVY["cpu"], budget_s=0.5)]
    return _OP_HEAVY[0]


_OP_HEAVY: list[dict] = []  # the latest op-heavy measurement (the next test compares with it first)


@cpu_only
@pytest.mark.timing  # a speed ratio: a busy spell of the shared box gets one more measurement
def test_claim_compiled_training_step_faster_than_eager_at_an_op_heavy_size():
    # slide: batch 1 × seq 32, D=64 (4 layers) — measured ×1.2–1.3 on the 2-core machine
    d = _op_heavy_training()
    claims = model.speed.check_claims(d)
    claim = model.speed_claims["op_heavy"].render(d)
    if claim not in claims or not all(claims.values()):  # as test_demos does: once more, from the declared state
        d = _op_heavy_training()
        claims = model.speed.check_claims(d)
    assert claim in claims and all(claims.values()), (claims, d["rows"], model.speed_claims["op_heavy"].condition(d))
    assert 0 < d["compile_s"] <= d["first_s"]  # the step's first compiled call less a steady one


@cpu_only
@pytest.mark.timing
def test_claim_the_speedup_shrinks_when_big_matmuls_dominate():
    # slide: ~1.2–1.3× at 1 × 32, D=64; about 1.0 (0.9–1.05 measured) at 4 × 64, D=512
    # measured again (up to three times) when a busy spell (another test worker) tipped either ratio:
    # CI saw 1.154 at D=512 beside the browser walk, just over the claim
    for attempt in range(3):
        small = (_OP_HEAVY[0] if attempt == 0 and _OP_HEAVY else _op_heavy_training())["speedup"]["torch_compile"]
        b = model.bundle(RUN, model.config(width=512))
        with model.threads():
            b.call("torch_compile", True)
            t = RUN.time_forms({"eager": (lambda: b.call("torch_eager", True), lambda _o: None),
                                "compiled": (lambda: b.call("torch_compile", True), lambda _o: None)},
                               budget_s=1.5, settle=False, max_samples=80)
        big = t["eager"].median / t["compiled"].median
        if big < small and model.speed_claims["big_matmuls"].holds(big, "cpu"):
            break
    assert big < small and model.speed_claims["big_matmuls"].holds(big, "cpu"), (small, big)


# The compile-cost slide's claims (graphs, regional quicker from empty caches, the three stances) are
# measured at its defaults in the declared state by tests/test_ordering.py and test_demos.py; here,
# the two cache states the slide declares.
def test_an_empty_cache_folder_builds_again_and_the_folder_it_filled_answers(tmp_path):
    """Empty: a compile builds its kernel even when this process built the same one just before (so
    no form of the slide reuses another's builds); warm: the FX graph cache the empty run filled
    answers, and nothing is built."""
    from torch._dynamo.utils import counters

    from demos.introspection.hooks import cache_folder

    import os

    x, folder, before = model.require_torch().randn(64), tmp_path / "form", os.environ.get("TORCHINDUCTOR_CACHE_DIR")

    def compiled_once(empty: bool) -> list:
        with cache_folder(folder, empty=empty):
            RUN.compile(lambda a: (a.sin() * 2).sum(), dynamic=False)(x)  # a fresh copy each time
        return sorted(p.name for p in folder.rglob("*.so"))

    built = compiled_once(empty=True)
    hits, misses = counters["inductor"]["fxgraph_cache_hit"], counters["inductor"]["fxgraph_cache_miss"]
    assert built and compiled_once(empty=False) == built
    assert (counters["inductor"]["fxgraph_cache_hit"], counters["inductor"]["fxgraph_cache_miss"]) == (hits + 1, misses)
    again = compiled_once(empty=True)  # emptied: the kernel built again, although this process has it
    assert again and set(again) <= set(built)  # (the first built more libraries, once per process)
    assert counters["inductor"]["fxgraph_cache_miss"] == misses + 1
    assert os.environ.get("TORCHINDUCTOR_CACHE_DIR") == before  # the project's cache folder again


# =======================================================================================
# GPU forms of the claims
# =======================================================================================
@pytest.mark.gpu
def test_gpu_claim_compiled_training_step_faster_at_gpu_defaults():
    d = model.measure_speed(Run(), step="training", budget_s=1.0)
    claims = model.speed.check_claims(d)
    assert model.speed_claims["training"].render(d) in claims and all(claims.values()), (claims, d["rows"])
    assert "torch_compile_ro" in d["rows"]  # reduce-overhead is measured on CUDA


@pytest.mark.gpu
def test_gpu_claim_eager_issues_many_times_the_ops_compiled_launches():
    d = model.measure_ops(Run(), step="inference")
    claims = model.ops_claims.select("graphs", "per_kernel")(d)
    assert len(claims) == 2 and all(claims.values()), (claims, model.ops_totals(d))


@pytest.mark.gpu
def test_gpu_claim_compiled_peak_memory_no_higher():
    d = model.measure_backward(Run())
    assert model.backward_claims.select("peak")(d) == {model.backward_claims["peak"].render(d): True}, d["peak"]


@pytest.mark.gpu
def test_gpu_claim_regional_compile_beats_whole_stack_compile():
    d = model.measure_compile_cost(Run())
    assert d["regional"]["compile_s"] < d["whole"]["compile_s"]
