"""demos.introspection.dynamo: what Dynamo and JAX log about capture and recompiles, parsed.

The parsers are tested on text in the shape torch 2.13 / JAX 0.10 print it; the captures on
real loggers (a few on real, tiny compiles), including that they leave no setting behind."""
from __future__ import annotations

import logging

import pytest

import demos  # noqa: F401  (environment before torch/JAX)
from demos.introspection import dynamo

# A guard tree in the shape torch 2.13's `guards` log prints (trimmed by hand).
TREE = """
TREE_GUARD_MANAGER:
+- RootGuardManager
| +- LAMBDA_GUARD: torch._functorch.aot_autograd.utils.top_saved_tensors_hooks ids == None  # x
| +- GLOBAL_STATE: ___check_global_state() against {"grad_mode":true,"num_threads":2,"autocast_state":{"enabled":[false,false]}}
| +- TORCH_FUNCTION_MODE_STACK: ___check_torch_function_mode_stack()
| +- DEFAULT_DEVICE: utils_device.CURRENT_DEVICE == None                           # _dynamo/output_graph.py:1122
| +- GuardManager: source=L['x'], accessed_by=FrameLocalsGuardAccessor(key='x', framelocals_idx=0)
| | +- TENSOR_MATCH: check_tensor(L['x'], Tensor, DispatchKeySet(CUDA, BackendSelect, ADInplaceOrView, AutogradCUDA), torch.bfloat16, device=0, requires_grad=True, size=[32, 128], stride=[128, 1])  # a = f(x)  # t.py:3 in f
| | +- DIMENSION_DYNAMIC_MARKING_GUARD: hasattr(L['x'], '_dynamo_dynamic_indices') == False  # a
| | +- DIMENSION_DYNAMIC_MARKING_GUARD: hasattr(L['x'], '_dynamo_static_indices') == False  # a
| | +- NO_TENSOR_ALIASING: check_no_aliasing(L['x'], L['y'])
| +- GuardManager: source=G, accessed_by=GlobalsGuardAccessor, type=<class 'dict'>
| | +- GuardManager: source=G['torch'], accessed_by=DictGetItemGuardAccessor('torch')
| | | +- ID_MATCH: ___check_obj_id(G['torch'], 1401), type=<class 'module'>  # a
| | | +- GuardManager: source=G['torch'].sin, accessed_by=GetAttrGuardAccessor(sin)
| | | | +- ID_MATCH: ___check_obj_id(G['torch'].sin, 1402), type=<class 'builtin_function_or_method'>  # a
"""

RECOMPILING = ("Recompiling function f in /x.py:10\n    triggered by the following guard failure(s):\n"
               "    - 0/1: tensor 'x' dtype mismatch. expected Double, actual Float\n"
               "    - 0/0: tensor 'x' size mismatch at index 0. expected 1000, actual 500")
LIMIT = ("torch._dynamo hit config.recompile_limit (8)\n   function: 'step' (<jitdeck-static-1>:2)\n"
         "   last reason: 0/7: tensor 'x' size mismatch at index 1. expected 147, actual 141")
JAX_MISS = ("TRACING CACHE MISS at f.py:1 (<module>):\n  for step defined at <x>:2\n  all previously seen "
            "cache keys differ. For the closest previous key:\n  different input types:\n"
            "  * at x, now f32[4,50,64] and before f32[4,37,64]")


# =======================================================================================
# Guard trees
# =======================================================================================
def test_guard_trees_keep_only_trees():
    assert dynamo.guard_trees(["GUARDS:", TREE, "something else"]) == [TREE]


def test_guard_leaves_count_checks_not_managers():
    leaves = dynamo.guard_leaves(TREE)
    kinds = [k for k, _ in leaves]
    assert len(leaves) == 10
    assert kinds.count("TENSOR_MATCH") == 1 and kinds.count("ID_MATCH") == 2
    assert "GuardManager" not in " ".join(kinds)
    assert all("#" not in code for _, code in leaves)  # source comments stripped


def test_plain_guards_say_dtype_device_shape_stride_in_words():
    words = dynamo.plain_guards(TREE)
    assert words[0] == "x: bfloat16 on cuda:0, shape [32,128], stride [128,1], requires grad"
    assert "x: no dynamic-shape marks (2 checks)" in words
    assert "x and y do not share memory" in words
    assert "same objects: torch.sin" in words
    assert any(w.startswith("global state unchanged (grad mode on, 2 threads, autocast off)") for w in words)
    assert "no default-device override" in words and "no saved-tensor hooks" in words


def test_device_and_global_state_in_words():
    assert dynamo._device_of("CPU, BackendSelect, ADInplaceOrView, AutogradCPU", "None") == "cpu"
    assert dynamo._device_of("CUDA, AutogradCUDA", "1") == "cuda:1"
    assert dynamo._device_of("MPS", "None") == "mps"
    assert dynamo._global_state('___check_global_state() against {"grad_mode":false}') == \
        "global state unchanged (grad mode off)"
    assert dynamo._global_state("___check_global_state()") == "global state unchanged"


# =======================================================================================
# Reasons
# =======================================================================================
def test_failed_guard_and_torch_reason_strip_the_compile_id():
    assert dynamo.failed_guard(RECOMPILING) == "tensor 'x' dtype mismatch. expected Double, actual Float"
    assert dynamo.failed_guard("nothing here") == ""
    assert dynamo.torch_reason(RECOMPILING) == dynamo.failed_guard(RECOMPILING)
    assert dynamo.torch_reason("Recompiling function f\n(no guard listed)") == "Recompiling function f"
    size = "Recompiling function step\n    - 0/1: tensor 'x' size mismatch at index 1. expected 64, actual 65"
    assert dynamo.torch_reason(size) == "tensor 'x' size mismatch at index 1. expected 64, actual 65"


def test_jax_reason():
    assert dynamo.jax_reason(JAX_MISS) == "at x, now f32[4,50,64] and before f32[4,37,64]"
    assert dynamo.jax_reason("TRACING CACHE MISS at f.py:1\n  never seen function:\n  step id=1") == \
        "first call: never seen function"
    assert dynamo.jax_reason("") == ""


def test_read_recompiles_and_jax_misses_from_captured_pairs():
    pairs = [(dynamo.RECOMPILES, RECOMPILING), (dynamo.CONVERT_FRAME, LIMIT),
             (dynamo.CONVERT_FRAME, LIMIT.replace("(8)", "(9)"))]
    reason, limit = dynamo.read_recompiles(pairs)
    assert reason == "tensor 'x' dtype mismatch. expected Double, actual Float"
    assert limit == "torch._dynamo hit config.recompile_limit (8)"  # the first warning, first line
    assert dynamo.read_recompiles([(dynamo.CONVERT_FRAME, "torchdynamo start compiling")]) == ("", "")
    assert dynamo.read_jax_misses([("jax._src.pjit", "compiling step"), ("jax._src.pjit", JAX_MISS)]) == \
        "at x, now f32[4,50,64] and before f32[4,37,64]"
    assert dynamo.read_jax_misses([("jax._src.pjit", "CACHE MISS for compilation")]) == ""


def test_plain_reason_names_the_branch_and_the_print():
    assert "data-dependent branch" in dynamo.plain_reason("generic_jump TensorVariable()")
    assert "print" in dynamo.plain_reason("Failed to trace builtin operator\n Dynamo does not know how to "
                                          "trace builtin operator `print` with argument types ['str']")
    assert dynamo.plain_reason("Failed to trace builtin operator `len`") == "unsupported Python builtin len"
    assert dynamo.plain_reason("") == "?"


# =======================================================================================
# Captures: collect, print nothing, leave every setting as it was
# =======================================================================================
def test_capture_logs_collects_without_propagating_and_restores(caplog):
    name = "demos.test.capture"
    lg = logging.getLogger(name)
    lg.setLevel(logging.WARNING)
    with caplog.at_level(logging.DEBUG):
        with dynamo.capture_logs([name], debug=[name]) as cap:
            lg.debug("seen %d", 1)
            lg.warning("also seen")
        lg.warning("after")
    assert cap.texts(name) == ["seen 1", "also seen"] and cap.texts(name, since=1) == ["also seen"]
    assert [r.getMessage() for r in caplog.records if r.name == name] == ["after"]  # nothing leaked meanwhile
    assert lg.level == logging.WARNING and lg.propagate and cap not in lg.handlers


def test_dynamo_logs_catch_a_recompile_and_leave_logging_as_it_was():
    import torch
    from torch._logging._internal import log_state

    lg = logging.getLogger(dynamo.RECOMPILES)
    before = (lg.level, lg.propagate, list(lg.handlers), log_state.is_artifact_enabled("recompiles"))
    f = torch.compile(lambda t: torch.sin(t) + 1, backend="eager", dynamic=False)
    with dynamo.dynamo_logs() as cap:
        f(torch.ones(8))
        f(torch.ones(8, dtype=torch.float64))
    assert dynamo.guard_trees(cap.texts(dynamo.GUARDS)), "no guard tree logged"
    reasons = [dynamo.failed_guard(m) for m in cap.texts(dynamo.RECOMPILES)]
    assert reasons and "dtype mismatch" in reasons[-1], reasons
    assert (lg.level, lg.propagate, list(lg.handlers), log_state.is_artifact_enabled("recompiles")) == before


def test_jax_miss_log_names_the_new_shape():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    f = jax.jit(lambda a: a * 2)
    old = jax.config.jax_explain_cache_misses
    with dynamo.jax_miss_log() as cap:
        f(jnp.ones(3))
        f(jnp.ones(4))
    assert "now f32[4]" in dynamo.read_jax_misses(cap.messages) and "before f32[3]" in dynamo.read_jax_misses(cap.messages)
    assert jax.config.jax_explain_cache_misses == old


def test_recompile_limit_is_torchs_setting():
    import torch

    assert dynamo.recompile_limit() == torch._dynamo.config.recompile_limit
