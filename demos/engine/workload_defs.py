"""The seed workloads: programs written as torch/JAX twins, their sizes, and their analytic cost.

Each :class:`Workload` names a torch function and its jax.numpy twin (module-level functions, so
torch.compile's and jax.jit's caches key on stable code), its size parameters (:class:`Param`:
defaults per device, a quick size, an upper limit), its input shapes and how the inputs are
drawn, and its cost model. ``WORKLOADS`` holds them by name; :func:`get` looks one up,
:func:`check_backend` checks a backend name and :func:`tolerance` says how closely two forms of a
workload agree. How a workload becomes runnable (inputs, compiled forms, :func:`prepare`) is in
:mod:`demos.engine.workloads`.

Cost model (stated on the slides): every elementwise op or reduction costs one FLOP per
element it produces/reads, a matmul (m,k)@(k,n) costs 2mkn. "Bytes" count every tensor an
op reads plus every tensor it writes, at the dtype's width: eager pays them op by op
("~2 passes over memory per op"), the fused form reads each input once and writes each
output once (intermediates stay in registers).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from demos.engine.devices import BACKENDS, device_kind
from demos.engine.errors import DemoError, unknown_name

ITEMSIZE = {"float32": 4, "bfloat16": 2, "float16": 2}


# ---------------------------------------------------------------------------------------
# The programs. Module-level functions so torch.compile/jax.jit caches key on stable code.
# ---------------------------------------------------------------------------------------
def complex_activation_torch(x, y):
    import torch

    a = torch.sin(x)
    b = torch.cos(y)
    c = a * b
    d = c + x
    e = d * y
    return torch.relu(e)


def complex_activation_jax(x, y):
    import jax.numpy as jnp

    a = jnp.sin(x)
    b = jnp.cos(y)
    c = a * b
    d = c + x
    e = d * y
    return jnp.maximum(e, 0)


def chain_torch(x):
    import torch

    return (torch.tanh(0.1 * x + 1.7) * torch.sigmoid(x) + torch.exp(-(x * x))).sum()


def chain_jax(x):
    import jax
    import jax.numpy as jnp

    return (jnp.tanh(0.1 * x + 1.7) * jax.nn.sigmoid(x) + jnp.exp(-(x * x))).sum()


def two_matmuls_torch(x, a, b):
    import torch

    return torch.relu(x @ a) @ b


def two_matmuls_jax(x, a, b):
    import jax.numpy as jnp

    return jnp.maximum(x @ a, 0) @ b


def mlp_block_torch(x, w1, b1, w2, b2, gamma, beta):
    import torch
    import torch.nn.functional as F

    h = x @ w1 + b1
    h = F.gelu(h, approximate="tanh")
    h = h @ w2 + b2
    y = x + h
    m = y.mean(dim=-1, keepdim=True)
    v = (y - m).pow(2).mean(dim=-1, keepdim=True)
    return (y - m) / torch.sqrt(v + 1e-5) * gamma + beta


def mlp_block_jax(x, w1, b1, w2, b2, gamma, beta):
    import jax
    import jax.numpy as jnp

    h = x @ w1 + b1
    h = jax.nn.gelu(h, approximate=True)
    h = h @ w2 + b2
    y = x + h
    m = y.mean(-1, keepdims=True)
    v = ((y - m) ** 2).mean(-1, keepdims=True)
    return (y - m) / jnp.sqrt(v + 1e-5) * gamma + beta


def mlp_dead_code_torch(x, gating0, gating1, linear):
    import torch

    y = x @ gating0
    unused = x @ gating1  # noqa: F841 - never used: the compiler should drop it
    return torch.relu(y) @ linear


def mlp_dead_code_jax(x, gating0, gating1, linear):
    import jax.numpy as jnp

    y = x @ gating0
    unused = x @ gating1  # noqa: F841
    return jnp.maximum(y, 0) @ linear


# ---------------------------------------------------------------------------------------
# Workload descriptions
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Param:
    name: str
    cpu: int
    gpu: int
    quick: int
    hi: int
    doc: str


@dataclass(frozen=True)
class Workload:
    name: str
    title: str
    params: tuple[Param, ...]
    torch_fn: Callable
    jax_fn: Callable
    shapes: Callable[[dict], list[tuple[int, ...]]]  # input shapes
    scales: tuple[float | str, ...]  # per input: std of randn, "zeros", "ones", or "fan_in"
    flops_fn: Callable[[dict, bool], float]
    elems_fn: Callable[[dict, bool], float]  # elements moved (eager if fused False)
    eager_ops: tuple[str, ...]
    source: str
    seed_dtype: str = "float32"
    notes: str = ""
    extra: dict = field(default_factory=dict)

    # -- parameters -------------------------------------------------------------------
    def defaults(self, kind: str | None = None) -> dict[str, int]:
        kind = kind or device_kind()
        return {p.name: getattr(p, kind) for p in self.params}

    def resolve(self, params: dict | None = None, kind: str | None = None) -> dict[str, int]:
        """Defaults for this device overlaid with ``params``; nonsense sizes refused."""
        out = self.defaults(kind)
        names = [p.name for p in self.params]
        for key, value in (params or {}).items():
            if key not in names:
                raise unknown_name(f"parameter of {self.name}", key, names)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or (
                isinstance(value, float) and not value.is_integer()
            ):
                raise DemoError(f"{self.name}: {key}={value!r} is not a whole number")
            value = int(value)
            spec = next(p for p in self.params if p.name == key)
            if value <= 0:
                raise DemoError(f"{self.name}: {key}={value} must be a positive size")
            if value > spec.hi:
                raise DemoError(f"{self.name}: {key}={value} is above the limit {spec.hi}")
            out[key] = value
        return out

    # -- cost model -----------------------------------------------------------------
    def flops(self, params: dict | None = None, fused: bool = False) -> float:
        return float(self.flops_fn(self.resolve(params), fused))

    def bytes(self, params: dict | None = None, dtype: str = "float32", fused: bool = False) -> float:
        return float(self.elems_fn(self.resolve(params), fused)) * ITEMSIZE[dtype]

    def intensity(self, params: dict | None = None, dtype: str = "float32", fused: bool = False) -> float:
        """Arithmetic intensity, FLOPs per byte."""
        return self.flops(params, fused) / self.bytes(params, dtype, fused)

    def input_bytes(self, params: dict | None = None, dtype: str = "float32") -> int:
        return sum(math.prod(s) for s in self.shapes(self.resolve(params))) * ITEMSIZE[dtype]

    def describe(self, params: dict | None = None) -> str:
        p = self.resolve(params)
        return ", ".join(f"{k}={v:,}" for k, v in p.items())


def _ca_flops(p, fused):
    return 6 * p["N"]


def _ca_elems(p, fused):
    # eager: sin 2, cos 2, mul 3, add 3, mul 3, relu 2 passes of N; fused: read x, y; write out
    return (3 if fused else 15) * p["N"]


def _chain_flops(p, fused):
    return 10 * p["N"]


def _chain_elems(p, fused):
    # eager: mul 2, add 2, tanh 2, sigmoid 2, mul 3, x*x 3, neg 2, exp 2, add 3, sum 1
    return (p["N"] + 1) if fused else (22 * p["N"] + 1)


def _tm_flops(p, fused):
    B, D, H = p["B"], p["D"], p["H"]
    return 4 * B * D * H + B * H


def _tm_elems(p, fused):
    B, D, H = p["B"], p["D"], p["H"]
    # mm1 (BD+DH read, BH write), relu (2BH), mm2 (BH+HD read, BD write). Compiled alike: default
    # Inductor cannot fuse into an extern GEMM, so the ReLU stays a pass of its own, run in place on
    # mm1's output (in_out_ptr0: an allocation saved, no bytes). Only a GEMM that takes the ReLU as
    # its epilogue (max-autotune's templates, XLA's GEMM fusion) would drop it, to 2BH.
    return 2 * B * D + 2 * D * H + 4 * B * H


def _mlp_flops(p, fused):
    T, D, H = p["B"] * p["S"], p["D"], p["H"]
    # 2 matmuls, bias adds, tanh-GELU (~8 ops/elem), residual, layer norm (~10 ops/elem)
    return 4 * T * D * H + 9 * T * H + 12 * T * D


def _mlp_elems(p, fused):
    T, D, H = p["B"] * p["S"], p["D"], p["H"]
    if fused:
        # mm1 (x in, h out) → fused bias+GELU (read, write) → mm2 (read, write) →
        # fused bias+residual+layer-norm (read h and x, write y)
        return 4 * T * H + 5 * T * D + 2 * D * H + H + 3 * D
    return 6 * T * H + 21 * T * D + 2 * D * H + 9 * T + H + 4 * D


def _dead_flops(p, fused):
    B, D, F = p["B"], p["D"], p["F"]
    return (4 if fused else 6) * B * D * F + B * F


def _dead_elems(p, fused):
    B, D, F = p["B"], p["D"], p["F"]
    if fused:
        return 2 * B * D + 2 * D * F + 4 * B * F
    return 3 * B * D + 3 * D * F + 6 * B * F


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in [
        Workload(
            name="complex_activation",
            title="sin · cos · mul · add · mul · relu",
            params=(Param("N", cpu=2**21, gpu=20 * 2**20, quick=2**16, hi=2**28, doc="elements"),),
            torch_fn=complex_activation_torch,
            jax_fn=complex_activation_jax,
            shapes=lambda p: [(p["N"],), (p["N"],)],
            scales=(1.0, 1.0),
            flops_fn=_ca_flops,
            elems_fn=_ca_elems,
            eager_ops=("sin", "cos", "mul", "add", "mul", "relu"),
            source="book chapter 'Eager mode' / 'Optimizations' (seeds 000–002): 731 µs → 144 µs at N=20M on the author's GPU",
        ),
        Workload(
            name="chain",
            title="tanh(0.1x+1.7)·sigmoid(x) + exp(−x²), summed",
            params=(Param("N", cpu=2**22, gpu=10_000_000, quick=2**16, hi=2**28, doc="elements"),),
            torch_fn=chain_torch,
            jax_fn=chain_jax,
            shapes=lambda p: [(p["N"],)],
            scales=(1.0,),
            flops_fn=_chain_flops,
            elems_fn=_chain_elems,
            eager_ops=("mul", "add", "tanh", "sigmoid", "mul", "mul", "neg", "exp", "add", "sum"),
            source="lecture notebook (seed 003): 549 µs eager → 81.9 µs compiled at N=10M on an A100",
        ),
        Workload(
            name="two_matmuls",
            title="relu(X @ A) @ B",
            params=(
                Param("B", cpu=128, gpu=256, quick=32, hi=65536, doc="rows of X"),
                Param("D", cpu=512, gpu=1024, quick=128, hi=65536, doc="model dim"),
                Param("H", cpu=1024, gpu=2048, quick=256, hi=65536, doc="hidden dim"),
            ),
            torch_fn=two_matmuls_torch,
            jax_fn=two_matmuls_jax,
            shapes=lambda p: [(p["B"], p["D"]), (p["D"], p["H"]), (p["H"], p["D"])],
            scales=(1.0, "fan_in", "fan_in"),
            flops_fn=_tm_flops,
            elems_fn=_tm_elems,
            eager_ops=("mm", "relu", "mm"),
            source="lecture notebook (seed 003): 183 µs eager vs 214 µs compiled, (256×1024)·(1024×2048)·(2048×1024) on an A100",
        ),
        Workload(
            name="mlp_block",
            title="matmul+bias → GELU(tanh) → matmul+bias → residual → LayerNorm",
            params=(
                Param("B", cpu=8, gpu=256, quick=2, hi=65536, doc="batch"),
                Param("S", cpu=128, gpu=1024, quick=64, hi=65536, doc="sequence"),
                Param("D", cpu=256, gpu=512, quick=64, hi=65536, doc="model dim"),
                Param("H", cpu=1024, gpu=2048, quick=256, hi=65536, doc="hidden dim"),
            ),
            torch_fn=mlp_block_torch,
            jax_fn=mlp_block_jax,
            shapes=lambda p: [
                (p["B"], p["S"], p["D"]),
                (p["D"], p["H"]),
                (p["H"],),
                (p["H"], p["D"]),
                (p["D"],),
                (p["D"],),
                (p["D"],),
            ],
            scales=(1.0, "fan_in", "zeros", "fan_in", "zeros", "ones", "zeros"),
            flops_fn=_mlp_flops,
            elems_fn=_mlp_elems,
            eager_ops=("mm", "add", "gelu", "mm", "add", "add", "mean", "sub", "pow", "mean", "add", "sqrt",
                       "sub", "div", "mul", "add"),
            source="lecture notebook (seed 003): 22.5 ms eager → 14.4 ms compiled (14.8 ms jax.jit), B,S,D,H = 256,1024,512,2048 on an A100",
        ),
        Workload(
            name="mlp_dead_code",
            title="relu(x @ g0) @ W, with an unused x @ g1",
            params=(
                Param("B", cpu=128, gpu=512, quick=32, hi=65536, doc="rows of x"),
                Param("D", cpu=512, gpu=2048, quick=128, hi=65536, doc="model dim"),
                Param("F", cpu=1024, gpu=4096, quick=256, hi=65536, doc="hidden dim"),
            ),
            torch_fn=mlp_dead_code_torch,
            jax_fn=mlp_dead_code_jax,
            shapes=lambda p: [(p["B"], p["D"]), (p["D"], p["F"]), (p["D"], p["F"]), (p["F"], p["D"])],
            scales=(1.0, "fan_in", "fan_in", "fan_in"),
            flops_fn=_dead_flops,
            elems_fn=_dead_elems,
            eager_ops=("mm", "mm", "relu", "mm"),
            source="book chapter 'Optimizations' (seed 001): only 2 GEMM kernels remain after compiling, b,d,f = 512,2048,4096 in bf16",
            seed_dtype="bfloat16",
        ),
    ]
}


def get(name: str) -> Workload:
    if isinstance(name, Workload):
        return name
    try:
        return WORKLOADS[name]
    except KeyError:
        raise unknown_name("workload", name, WORKLOADS) from None


def check_backend(backend: str) -> str:
    if backend not in BACKENDS:
        raise unknown_name("backend", backend, BACKENDS)
    return backend


# u: half the gap between 1 and the next number of the format
UNIT_ROUNDOFF = {"float64": 2.0**-53, "float32": 2.0**-24, "bfloat16": 2.0**-8, "float16": 2.0**-11}
POINTWISE_ROUNDINGS = 8  # a pointwise chain of up to 8 ops (the deck's chains have 3 to 6)


def unit_roundoff(dtype: str) -> float:
    return UNIT_ROUNDOFF[str(dtype).replace("torch.", "")]


def tolerance(dtype: str, roundings: int = POINTWISE_ROUNDINGS) -> dict[str, float]:
    """How closely two forms of one computation (fused, reordered) agree, to first order: each
    of n roundings adds about u, so two forms sit within about 2·n·u (n: the roundings on its
    longest path, or the terms of its longest sum; u: the dtype's unit roundoff; Higham's γ_n).
    rtol = atol = 2·n·u. A rule of thumb, not a bound: it takes each step as correctly rounded
    (x86's vectorised sin and cos are SLEEF's 3.5-ulp versions), cancellation magnifies a relative
    error, and a sum's error is relative to Σ|terms|, not to the sum."""
    t = 2 * int(roundings) * unit_roundoff(dtype)
    return {"rtol": t, "atol": t}
