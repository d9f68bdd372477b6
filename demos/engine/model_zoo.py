"""A real model for Part 6: a stack of pre-norm transformer blocks as torch/JAX twins.

One block: ``x + attn(LN(x))`` then ``y + MLP(LN(y))`` — multi-head self-attention written out
(qkv projection, scores, softmax, weighted sum, output projection) and a GELU MLP of width
4·D. A stack is ``layers`` blocks with seeded random weights (nothing is downloaded). The JAX
twin takes the torch weights, so the four forms compute one function: ``torch_eager``,
``torch_compile``, ``jax_eager`` (op by op) and ``jax_jit``.

Training step (both frameworks): mean-squared error against a fixed random target, gradients
of every parameter, one AdamW update (``torch.optim.AdamW``, multi-tensor, eager in both torch
forms; in JAX the same update written out — no optax).

Every torch model gets forward methods with code objects of its own (:func:`torch_model`):
Dynamo keeps its compiled code per code object, so each model compiles afresh, one model's
shapes never turn another's graphs dynamic, and no shared cache fills up to the recompile
limit. Inductor's on-disk caches key on the graph, not the code object, and still apply.

Also here, the model-level measurements that need no compiler internals: aten ops counted by a
``TorchDispatchMode``, tensors saved for backward (``saved_tensors_hooks``), the peak memory of
a training step (``torch.profiler`` memory events), and JAX's autodiff residuals.
"""
from __future__ import annotations

import contextlib
import math
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable

from demos.engine.devices import check_dtype, free_memory_bytes, require_jax, require_torch, torch_device
from demos.engine.errors import DemoError
from demos.engine.convert import to_jax
from demos.engine.protocol import engine_cache, fresh_function

LR, BETAS, EPS, WEIGHT_DECAY = 1e-3, (0.9, 0.999), 1e-8, 0.01
LN_EPS = 1e-5
# ops that only re-view or re-label memory (no arithmetic, usually no kernel)
LAYOUT_OPS = frozenset({"view", "_unsafe_view", "reshape", "_reshape_alias", "transpose", "t", "expand",
                        "split", "split_with_sizes", "permute", "as_strided", "detach", "alias",
                        "unsqueeze", "squeeze", "slice", "select", "unbind", "lift_fresh"})


@dataclass(frozen=True)
class Config:
    layers: int = 4
    width: int = 128
    heads: int = 4
    batch: int = 4
    seq: int = 64
    dtype: str = "float32"

    @property
    def tokens(self) -> int:
        return self.batch * self.seq

    def params_count(self) -> int:
        d = self.width
        return self.layers * (12 * d * d + 13 * d)

    def flops(self, training: bool = False) -> float:
        """Matmul FLOPs of one forward (×3 for forward + backward)."""
        t, d, s = self.tokens, self.width, self.seq
        fw = self.layers * (2 * t * 12 * d * d + 4 * t * s * d)
        return 3.0 * fw if training else float(fw)

    def describe(self) -> str:
        return (f"{self.layers} layers, D={self.width}, {self.heads} heads, "
                f"batch {self.batch} × seq {self.seq}, {self.dtype}")


def check(cfg: Config) -> None:
    """Refuse sizes that make no sense or do not fit in memory (one clear line)."""
    if min(cfg.layers, cfg.width, cfg.heads, cfg.batch, cfg.seq) <= 0:
        raise DemoError(f"sizes must be positive ({cfg.describe()})")
    if cfg.width % cfg.heads:
        raise DemoError(f"width {cfg.width} is not divisible by {cfg.heads} heads")
    check_dtype(cfg.dtype)
    item = 4 if cfg.dtype == "float32" else 2
    # weights, grads, two AdamW moments, a spare; activations kept for the backward
    need = item * (5 * cfg.params_count() + cfg.layers * cfg.tokens * (24 * cfg.width + 3 * cfg.heads * cfg.seq))
    free = free_memory_bytes()
    if free is not None and need > 0.6 * free:
        raise DemoError(f"out of memory at {cfg.describe()}: needs ~{need / 2**30:.1f} GiB, "
                        f"{free / 2**30:.1f} GiB free — pick a smaller size")


@contextlib.contextmanager
def threads(n: int | None):
    """Run the block with ``n`` torch intra-op threads (None: unchanged), then restore."""
    torch = require_torch()
    before = torch.get_num_threads()
    if n:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


# ---------------------------------------------------------------------------------------
# torch
# ---------------------------------------------------------------------------------------
def _torch_classes():
    torch = require_torch()
    nn = torch.nn
    F = torch.nn.functional

    class Block(nn.Module):
        """Pre-norm transformer block: LN → attention → residual, LN → GELU MLP → residual."""

        def __init__(self, width: int, heads: int):
            super().__init__()
            self.heads = heads
            self.ln1 = nn.LayerNorm(width, eps=LN_EPS)
            self.qkv = nn.Linear(width, 3 * width)
            self.proj = nn.Linear(width, width)
            self.ln2 = nn.LayerNorm(width, eps=LN_EPS)
            self.fc1 = nn.Linear(width, 4 * width)
            self.fc2 = nn.Linear(4 * width, width)

        def forward(self, x):
            B, S, D = x.shape
            h = self.heads
            q, k, v = self.qkv(self.ln1(x)).split(D, dim=-1)
            q = q.view(B, S, h, D // h).transpose(1, 2)
            k = k.view(B, S, h, D // h).transpose(1, 2)
            v = v.view(B, S, h, D // h).transpose(1, 2)
            att = torch.softmax((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D // h)), dim=-1)
            y = (att @ v).transpose(1, 2).reshape(B, S, D)
            x = x + self.proj(y)
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    class Stack(nn.Module):
        def __init__(self, cfg: Config):
            super().__init__()
            self.layers = nn.ModuleList(Block(cfg.width, cfg.heads) for _ in range(cfg.layers))

        def forward(self, x):
            for block in self.layers:
                x = block(x)
            return x

    return Block, Stack


_CLASSES: tuple | None = None


def torch_model(cfg: Config, device: str | None = None, rng: int = 0):
    """The stack with seeded random weights on ``device`` at ``cfg.dtype``; its Block and Stack
    forwards have fresh code objects (see the module docstring)."""
    global _CLASSES
    torch = require_torch()
    check(cfg)
    if _CLASSES is None:
        _CLASSES = _torch_classes()
    Block, Stack = _CLASSES
    torch.manual_seed(rng)
    model = Stack(cfg)
    block_cls = type("Block", (Block,), {"forward": fresh_function(Block.forward)})
    for blk in model.layers:
        blk.__class__ = block_cls
    model.__class__ = type("Stack", (Stack,), {"forward": fresh_function(Stack.forward)})
    return model.to(device=device or torch_device(), dtype=getattr(torch, cfg.dtype))


def torch_data(cfg: Config, device: str | None = None, rng: int = 1, seq: int | None = None):
    """(input, target), each (batch, seq, width)."""
    torch = require_torch()
    g = torch.Generator().manual_seed(rng)
    shape = (cfg.batch, seq or cfg.seq, cfg.width)
    x, t = torch.randn(shape, generator=g), torch.randn(shape, generator=g)
    dt, dev = getattr(torch, cfg.dtype), device or torch_device()
    return x.to(dev, dt), t.to(dev, dt)


def optimizer(model):
    """AdamW, multi-tensor (``foreach=True``: torch's default on CUDA; on a CPU the default is a
    per-parameter loop of ~13 ops per tensor, which would dominate a small model's step)."""
    torch = require_torch()
    return torch.optim.AdamW(model.parameters(), lr=LR, betas=BETAS, eps=EPS, weight_decay=WEIGHT_DECAY,
                             foreach=True)


def torch_loss(model, x, target):
    return ((model(x) - target) ** 2).mean()


def train_step(model, opt, x, target):
    """Forward, loss, backward, AdamW. ``model`` may be compiled, whole or block by block."""
    opt.zero_grad(set_to_none=True)
    loss = torch_loss(model, x, target)
    loss.backward()
    opt.step()
    return loss


# ---------------------------------------------------------------------------------------
# Measuring torch without compiler internals
# ---------------------------------------------------------------------------------------
def dispatched_ops(fn: Callable[[], Any]) -> tuple[Any, list[str]]:
    """Run ``fn()`` under a TorchDispatchMode: (its result, the aten ops the dispatcher ran below
    autograd, in order, by overload packet name: ``add``, ``mm``, ``view``, …), as eager issues
    them. The one dispatch-mode counter (part 6's op summary and the inspector read it)."""
    require_torch()
    from torch.utils._python_dispatch import TorchDispatchMode

    class Recording(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops: list[str] = []

        def __torch_dispatch__(self, func, types_, args=(), kwargs=None):
            self.ops.append(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    with Recording() as mode:
        out = fn()
    return out, mode.ops


def split_ops(ops: Counter) -> dict[str, int]:
    layout = sum(n for op, n in ops.items() if op in LAYOUT_OPS)
    total = sum(ops.values())
    return {"total": total, "layout": layout, "compute": total - layout}


def op_summary(fn: Callable[[], Any]) -> dict[str, Any]:
    """Ops ``fn()`` dispatches: total, layout (views), compute, and the four most issued."""
    ops = Counter(dispatched_ops(fn)[1])
    return split_ops(ops) | {"top": [[k, v] for k, v in ops.most_common(4)]}


def saved_for_backward(model, x, target) -> dict[str, float]:
    """Tensors autograd keeps for the backward of one loss (``saved_tensors_hooks``): how many
    are saved, and the distinct activation storages and bytes (parameters left out)."""
    torch = require_torch()
    storages: dict[int, int] = {}
    count = [0]

    def pack(t):
        count[0] += 1
        s = t.untyped_storage()
        storages[s.data_ptr()] = s.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = torch_loss(model, x, target)
    del loss
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    act = {k: v for k, v in storages.items() if k not in params}
    return {"saved": count[0], "tensors": len(act), "bytes": float(sum(act.values()))}


def peak_step_bytes(model, opt, x, target, quiet: Callable = contextlib.nullcontext) -> dict[str, float]:
    """Peak memory of one training step above what was live before it. CUDA: the caching
    allocator's peak. CPU: the running sum of torch.profiler's memory events (every allocation
    and free of torch's CPU allocator during the step), its maximum. Gradients are freed before
    the step starts, so nothing allocated earlier is freed inside it. ``quiet``: a context that
    silences the profiler's native log lines."""
    torch = require_torch()
    train_step(model, opt, x, target)  # optimizer state exists before measuring
    opt.zero_grad(set_to_none=True)
    if x.device.type == "cuda":
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        torch_loss(model, x, target).backward()
        opt.step()
        torch.cuda.synchronize()
        return {"peak": float(torch.cuda.max_memory_allocated() - base), "how": "CUDA allocator peak"}
    from torch.profiler import ProfilerActivity, profile

    with quiet(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        torch_loss(model, x, target).backward()
        opt.step()
    events = sorted((e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events()
                    if e.name() == "[memory]")
    if not events:
        raise DemoError("the profiler recorded no memory events")
    cur = peak = 0
    for _t, nbytes in events:
        cur += nbytes
        peak = max(peak, cur)
    return {"peak": float(peak), "how": "torch.profiler memory events"}


# ---------------------------------------------------------------------------------------
# JAX twin
# ---------------------------------------------------------------------------------------
def jax_params(model) -> list[dict[str, Any]]:
    """The torch stack's weights as a JAX pytree (one dict per block). Linear weights are
    stored transposed, (in, out), so the JAX forward multiplies without transposing."""
    require_jax()
    import jax.numpy as jnp

    out = []
    for blk in model.layers:
        d = {}
        for name, p in blk.named_parameters():
            a = p.detach().float().cpu().numpy()
            d[name] = jnp.asarray(a.T if a.ndim == 2 else a).astype(str(p.dtype).replace("torch.", ""))
        out.append(d)
    return out


def jax_array(t):
    """A torch tensor as a JAX array of the same values and dtype (:func:`demos.engine.convert.to_jax`)."""
    return to_jax(t, put=False)


def jax_layer_norm(x, w, b):
    import jax.numpy as jnp

    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / jnp.sqrt(v + LN_EPS) * w + b


def jax_block(p: dict, x, heads: int):
    import jax
    import jax.numpy as jnp

    B, S, D = x.shape
    hd = D // heads
    qkv = jax_layer_norm(x, p["ln1.weight"], p["ln1.bias"]) @ p["qkv.weight"] + p["qkv.bias"]
    q, k, v = (t.reshape(B, S, heads, hd).transpose(0, 2, 1, 3) for t in jnp.split(qkv, 3, axis=-1))
    att = jax.nn.softmax((q @ k.transpose(0, 1, 3, 2)) * (1.0 / math.sqrt(hd)), axis=-1)
    y = (att @ v).transpose(0, 2, 1, 3).reshape(B, S, D)
    x = x + y @ p["proj.weight"] + p["proj.bias"]
    h = jax_layer_norm(x, p["ln2.weight"], p["ln2.bias"]) @ p["fc1.weight"] + p["fc1.bias"]
    return x + jax.nn.gelu(h, approximate=False) @ p["fc2.weight"] + p["fc2.bias"]


def jax_forward(params: list[dict], x, heads: int, remat: bool = False):
    """The stack; ``remat=True`` wraps each block in ``jax.checkpoint``: only block inputs are
    kept for the backward, everything inside a block is recomputed."""
    import jax

    block = jax.checkpoint(jax_block, static_argnums=(2,)) if remat else jax_block
    for p in params:
        x = block(p, x, heads)
    return x


def jax_loss(params, x, target, heads: int, remat: bool = False):
    return ((jax_forward(params, x, heads, remat) - target) ** 2).mean()


def jax_adamw_init(params):
    import jax
    import jax.numpy as jnp

    zeros = lambda: jax.tree_util.tree_map(jnp.zeros_like, params)  # noqa: E731
    return {"m": zeros(), "v": zeros(), "t": jnp.zeros((), jnp.int32)}


def jax_train_step(params, state, x, target, heads: int, remat: bool = False):
    """Loss and gradients, then AdamW (decoupled weight decay, bias-corrected), written out."""
    import jax
    import jax.numpy as jnp

    loss, grads = jax.value_and_grad(jax_loss)(params, x, target, heads, remat)
    t = state["t"] + 1
    b1, b2 = BETAS
    m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, state["m"], grads)
    v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, state["v"], grads)
    c1 = 1 - b1 ** t.astype(jnp.float32)
    c2 = 1 - b2 ** t.astype(jnp.float32)

    def update(p, m, v):
        return (p * (1 - LR * WEIGHT_DECAY) - LR * (m / c1) / (jnp.sqrt(v / c2) + EPS)).astype(p.dtype)

    return jax.tree_util.tree_map(update, params, m, v), {"m": m, "v": v, "t": t}, loss


_JIT: dict[str, Any] = engine_cache("engine.model_zoo._JIT", {})


def jitted(name: str):
    """jax.jit of the forward ("forward") or of the training step ("train"), made once."""
    jax = require_jax()
    if not _JIT:
        _JIT["forward"] = jax.jit(jax_forward, static_argnums=(2, 3))
        _JIT["train"] = jax.jit(jax_train_step, static_argnums=(4, 5))
        _JIT["vjp"] = jax.jit(lambda p, x, t, heads, remat: jax.vjp(lambda q: jax_loss(q, x, t, heads, remat), p)[1],
                              static_argnums=(3, 4))
    return _JIT[name]


def jax_outputs(model, x, heads: int) -> dict[str, Any]:
    """The JAX twin's forward on the torch model's weights: op by op and jitted (numpy, float32)."""
    import numpy as np

    params, xj = jax_params(model), jax_array(x)
    return {"jax_eager": np.asarray(jax_forward(params, xj, heads).astype("float32")),
            "jax_jit": np.asarray(jitted("forward")(params, xj, heads, False).astype("float32"))}


def jax_form(model, x, target, heads: int, training: bool) -> Callable[[], Any]:
    """A zero-argument call of jax.jit's forward, or of its training step (which carries the
    parameters and AdamW state from call to call), on the torch model's current weights."""
    params, xj, tj = jax_params(model), jax_array(x), jax_array(target)
    if not training:
        return lambda: jitted("forward")(params, xj, heads, False)
    box = [params, jax_adamw_init(params)]

    def step():
        box[0], box[1], loss = jitted("train")(box[0], box[1], xj, tj, heads, False)
        return loss

    return step


def jax_residuals_of(model, x, target, heads: int) -> dict[str, dict[str, float]]:
    """JAX's residuals on the torch model's weights, without ("jax") and with ("jax_remat")
    ``jax.checkpoint`` around every block."""
    params, xj, tj = jax_params(model), jax_array(x), jax_array(target)
    return {"jax": jax_residuals(params, xj, tj, heads, False), "jax_remat": jax_residuals(params, xj, tj, heads, True)}


def jax_residuals(params, x, target, heads: int, remat: bool = False) -> dict[str, float]:
    """What JAX's autodiff keeps for the backward: the residuals the ``jax.vjp`` function
    closes over (computed under jit; which values are kept is decided when tracing, before XLA
    optimises): count and bytes, parameters left out."""
    jax = require_jax()
    import numpy as np

    leaves = jax.tree_util.tree_leaves(jitted("vjp")(params, x, target, heads, remat))
    plist = jax.tree_util.tree_leaves(params)
    shapes = {tuple(p.shape) for p in plist}

    def is_param(a) -> bool:
        return tuple(a.shape) in shapes and any(p.shape == a.shape and np.array_equal(np.asarray(p), np.asarray(a))
                                                for p in plist)

    res = [a for a in leaves if not is_param(a)]
    return {"tensors": len(res), "bytes": float(sum(a.nbytes for a in res))}
