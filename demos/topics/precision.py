"""Part 3 — precision, the other lever: the seed's MLP block in four precisions, each in torch
eager and torch.compile.

Compiling removes memory passes; lowering precision changes the arithmetic itself. A bfloat16
matmul runs on a GPU's tensor cores (or a recent CPU's bfloat16 dot-product instructions) and
every tensor moves half the bytes. The seed lecture timed its MLP block with TF32 matmuls allowed
(``torch.set_float32_matmul_precision('high')``) on an A100; the rest of this deck measures with
full float32 matmuls, so this demo shows the two levers apart:

``float32``    float32 tensors and full-precision float32 matmuls (the deck's setting everywhere)
``tf32``       float32 tensors, matmuls on TF32 tensor cores (``"high"``): NVIDIA GPUs of compute
               capability 8.0 and newer only; elsewhere one line says why the row is empty
``autocast``   float32 tensors inside ``torch.autocast(dtype=torch.bfloat16)``: the matmuls take
               bfloat16 inputs; here each one's result meets a float32 bias, and type promotion
               brings the rest of the block back to float32
``bfloat16``   every tensor cast to bfloat16

One live demo, ``lever()``: ``measure_lever(run, batch)`` times the eight forms interleaved (each
one's first call, which compiles, timed apart) and measures each output's distance from a float64
evaluation of the same float32 inputs. ``figure_lever`` (:mod:`demos.topics.precision_figures`)
draws each form's time as a speedup over float32 eager, the compiling factor of each precision,
and each form's error. Each precision's compiled copy is its own (``run.compile``, kept in the
demo's cache): its own guards and graph, compiled under its own setting.
"""
from __future__ import annotations

from typing import Any, Callable

from demos.deck import asks
from demos.deck.claims import Claim, Claims, regime
from demos.deck.demo import Choice, Configs, Demo, Reported
from demos.engine.devices import device_kind, dtype_problem, dtype_supported, require_torch, torch_device
from demos.engine.matmul_units import (amx_withheld, bf16_matmul_units, bf16_matrix_units, matmul_precision,
                                      tf32_problem)
from demos.engine.errors import one_line
from demos.engine.measurement import Run
from demos.engine.peaks import oom_is_one_line
from demos.engine.workload_defs import get, unit_roundoff
from demos.engine.workloads import prepare
# the four precisions in the slide's order, and the two forms of each
from demos.topics.precision_figures import FORMS, LABELS as ROWS, figure_lever

# The seed's sizes on a GPU (B, S, D, H = 256, 1024, 512, 2048); a CPU's a hundredth of the tokens
SIZES = {"cpu": {"S": 128, "D": 256, "H": 1024}, "gpu": {"S": 1024, "D": 512, "H": 2048}}
BATCHES = {"cpu": (2, 8, 32), "gpu": (16, 64, 256)}
DEFAULT_BATCH = {"cpu": 8, "gpu": 256}
REFERENCE_TOKENS = 64  # the float64 reference evaluates the first tokens: the block treats each token alone


def sizes(batch: int | None = None, kind: str | None = None) -> dict[str, int]:
    kind = kind or device_kind()
    return {"B": DEFAULT_BATCH[kind] if batch is None else int(batch), **SIZES[kind]}


# =======================================================================================
# The four precisions of one block
# =======================================================================================
def autocast_bf16(fn: Callable, device_type: str) -> Callable:
    """``fn`` run inside ``torch.autocast(device_type, dtype=torch.bfloat16)``."""
    torch = require_torch()

    def mlp_block_autocast(*args):
        with torch.autocast(device_type, dtype=torch.bfloat16):
            return fn(*args)

    return mlp_block_autocast


def why_not(row: str, device: str) -> str | None:
    """Why this device cannot run a precision (None: it can), in one line."""
    if row == "tf32":
        return tf32_problem(device)
    if row in ("autocast", "bfloat16"):
        ok, why = dtype_supported("bfloat16", device)
        return None if ok else why
    return None


def forms_of(run: Run, row: str, args32: tuple, device: str) -> tuple[Callable, Callable]:
    """(eager, compiled) zero-argument calls of one precision on the float32 inputs ``args32``."""
    torch = require_torch()
    block = get("mlp_block").torch_fn
    args = tuple(a.to(torch.bfloat16) for a in args32) if row == "bfloat16" else args32
    fn = autocast_bf16(block, device.split(":")[0]) if row == "autocast" else block
    compiled = run.cached(("compiled", row, device), lambda: run.compile(fn, f"part3_{row}"))
    level = "high" if row == "tf32" else "highest"

    def call(f: Callable) -> Callable:
        def one():
            with matmul_precision(level):
                return f(*args)
        return one

    return call(fn), call(compiled)


def _reference(args32: tuple):
    """The block in float64 on the CPU, for the first tokens of the first sequence."""
    torch = require_torch()
    x, *weights = args32
    cut = x[:1, :REFERENCE_TOKENS]
    with torch.no_grad():
        return get("mlp_block").torch_fn(*(a.detach().to("cpu", torch.float64) for a in (cut, *weights)))


def distance(out, ref) -> float:
    """max |out − ref| over the reference's tokens, relative to max |ref|."""
    got = out[:1, :REFERENCE_TOKENS].detach().to("cpu").double()
    return float((got - ref).abs().max() / ref.abs().max().clamp_min(1e-30))


def measure_lever(run: Run, batch: int | None = None, budget_s: float = 0.1) -> dict[str, Any]:
    """Each precision's eager and compiled block, timed interleaved, with each output's distance
    from float64."""
    torch = require_torch()
    device = torch_device()
    params = get("mlp_block").resolve(sizes(batch))
    rows: dict[str, dict] = {}
    forms: dict[str, tuple[Callable, Callable]] = {}
    firsts: dict[str, float | None] = {}
    with oom_is_one_line("mlp_block", params, "float32"), torch.no_grad():
        prep = prepare("mlp_block", "torch_eager", params, "float32")
        ref = _reference(prep.args)
        for i, (row, label) in enumerate(ROWS.items()):
            why = why_not(row, device) or (dtype_problem("bfloat16") if row != "float32" else None)
            if why:
                rows[row] = {"error": why}
                continue
            run.progress(0.05 + 0.6 * i / len(ROWS), f"{label}: eager, then torch.compile (its first call compiles)…")
            rows[row] = {}
            eager, compiled = forms_of(run, row, prep.args, device)
            for form, fn in zip(FORMS, (eager, compiled)):
                key = f"{row}|{form}"
                try:  # a form this device cannot run (no C++ compiler, an op the backend lacks) is its one line
                    firsts[key] = run.first_call_once((row, form, tuple(sorted(params.items()))), fn, prep.sync)
                    out = fn()
                    prep.sync(out)
                except Exception as exc:  # noqa: BLE001 - shown, not raised: the other forms still measure
                    rows[row][form] = {"error": one_line(exc)}
                    continue
                rows[row][form] = {"distance": distance(out, ref), "out_dtype": str(out.dtype).replace("torch.", "")}
                forms[key] = (fn, prep.sync)
        run.progress(0.7, f"timing {len(forms)} forms in turn…")
        timings = run.time_forms(forms, warmup=0, budget_s=budget_s * len(forms), min_samples=5,
                                 max_samples=200) if forms else {}
        run.progress(0.95, "one GEMM of the block in float32 and in bfloat16…")
        gemm = gemm_speedup(run, params, device, prep.sync) if "distance" in rows["bfloat16"].get(
            "torch_eager", {}) else None
    for key, t in timings.items():
        row, form = key.split("|")
        rows[row][form] = {**t.to_dict(first_s=firsts[key]), **rows[row][form]}
    rows = {r: rows[r] for r in ROWS}  # in the slide's order
    B, S, D, H = (params[k] for k in "BSDH")
    return {"device": device, "params": params, "rows": rows, "bf16_units": bf16_matmul_units(),
            "bf16_matrix_units": bf16_matrix_units(), "bf16_units_withheld": amx_withheld(),
            "bf16_gemm_speedup": gemm,
            "reference_tokens": min(S, REFERENCE_TOKENS),
            "extra": f"mlp_block B,S,D,H = {B},{S},{D},{H}; float32 inputs (cast for the bfloat16 row)"}


def gemm_speedup(run: Run, params: dict[str, int], device: str, sync: Callable) -> float:
    """The block's first GEMM, [B·S, D] @ [D, H], in full float32 and in bfloat16, sampled in
    turn: float32's median time ÷ bfloat16's. What this device's arithmetic gives bfloat16 (a GPU's
    tensor cores: many times; a CPU's bfloat16 dot products: a few times; none: below 1). Sampled
    in turn, a busy spell of the machine slows both alike: timed one after the other on a 2-core box
    shared with another process, this ratio once came out over 8 where it is 4–5."""
    torch = require_torch()
    g = torch.Generator().manual_seed(0)
    a = torch.randn(params["B"] * params["S"], params["D"], generator=g).to(device)
    b = torch.randn(params["D"], params["H"], generator=g).to(device)
    a16, b16 = a.to(torch.bfloat16), b.to(torch.bfloat16)

    def full_float32():
        with matmul_precision("highest"):
            return a @ b

    t = run.time_forms({"float32": (full_float32, sync), "bfloat16": (lambda: a16 @ b16, sync)},
                       warmup=2, budget_s=0.2, min_samples=9)
    return t["float32"].p10 / t["bfloat16"].p10


# =======================================================================================
# The two factors, and what the slide claims
# =======================================================================================
def seconds(d: dict, row: str, form: str) -> float | None:
    return (d["rows"].get(row, {}).get(form) or {}).get("median_s")


def speedup(d: dict, row: str, form: str) -> float | None:
    """Float32 eager's time ÷ this form's: both levers together."""
    base, t = seconds(d, "float32", "torch_eager"), seconds(d, row, form)
    return base / t if base and t else None


def compile_factor(d: dict, row: str) -> float | None:
    """Eager ÷ compiled in one precision: compiling alone."""
    e, c = seconds(d, row, "torch_eager"), seconds(d, row, "torch_compile")
    return e / c if e and c else None


def _distance(d: dict, row: str, form: str) -> float:
    return d["rows"][row][form]["distance"]


def _bf16_eager_vs_fp32_compiled(d: dict) -> float | None:
    """Float32 compiled's time ÷ bfloat16 eager's: over 1 when precision alone beats compiling alone."""
    c, b = seconds(d, "float32", "torch_compile"), seconds(d, "bfloat16", "torch_eager")
    return c / b if c and b else None


def _worst_compiled_error(d: dict) -> float:
    """The largest compiled ÷ eager distance from float64, over the precisions measured."""
    return max(_distance(d, r, "torch_compile") / max(_distance(d, r, "torch_eager"), 1e-30)
               for r, forms in d["rows"].items() if all("distance" in forms.get(f, {}) for f in FORMS))


def _has_bf16(d: dict) -> bool:
    return "distance" in d["rows"].get("bfloat16", {}).get("torch_eager", {})


def _roundoffs(d: dict) -> tuple[bool, str]:
    """The digits claim's condition: the formats' unit roundoffs, 2^16 apart."""
    ratio = unit_roundoff("bfloat16") / unit_roundoff("float32")
    return True, f"bfloat16 rounds to u = 2^-8, float32 to u = 2^-24: {ratio:,.0f}× coarser"


def _same_sums(d: dict) -> tuple[bool, str]:
    """The keeps claim's condition: each precision's forms compute the same sums, of D and H terms."""
    p = d["params"]
    return True, (f"both forms of a precision round the same sums of {p['D']} and {p['H']} terms, in their own "
                  "order (the compiled form rounds less often)")


def _matrix_units(d: dict) -> tuple[bool | None, str]:
    """The lever claim's condition: the measured device multiplies bfloat16 matrices on matrix
    units (tensor cores; AMX where oneDNN runs the GEMMs on it, not where the CPU merely advertises
    it), read when it was measured; the GEMM ratio it measured beside it.
    A device fact, not the ratio against a bound: on a 2-core VM shared with a busy process the
    ratio measured 4.3–4.6× alone and up to 11× beside it (the other process slowed float32's GEMM more)."""
    units = d["bf16_matrix_units"]  # a record made before it was read: "not measured"
    ratio = d.get("bf16_gemm_speedup")
    ran = f"; its bfloat16 GEMM ran {ratio:.2g}× float32's" if ratio else ""
    if units is None:
        return None, "whether this device has bfloat16 matrix units could not be read" + ran
    if units:
        return True, "bfloat16 runs on matrix units here (tensor cores, AMX)" + ran
    withheld = d.get("bf16_units_withheld")
    return False, ((f"{withheld}: bfloat16 is emulated" if withheld else
                    "no bfloat16 matrix units here (tensor cores, AMX): bfloat16 saves bytes more than arithmetic")
                   + ran)


_matrix_units.measures = True  # read with the measurement: the footer states it

lever_claims = Claims(
    Claim("bfloat16 costs digits: its distance from float64 over {threshold:g}× float32's",
          lambda d: _distance(d, "bfloat16", "torch_eager") / _distance(d, "float32", "torch_eager"), ">", 100,
          applies=_has_bf16, key="digits", **regime(when=_roundoffs)),
    Claim("compiling keeps each precision's accuracy: compiled at most {threshold:g}× eager's distance from float64",
          _worst_compiled_error, "<=", 3, key="keeps", **regime(when=_same_sums)),
    # a timing claim where bfloat16 has matrix units; elsewhere bfloat16 saves bytes, and whether
    # that beats compiling is this machine's answer (the question still asks it)
    Claim("precision is the bigger lever: bfloat16 eager beats float32 compiled (time ratio over {threshold:g})",
          _bf16_eager_vs_fp32_compiled, ">", 1.0, applies=_has_bf16, key="lever",
          **regime(when=_matrix_units),
          ask=asks.bands("The MLP block: bfloat16 without compiling, against float32 compiled. How many times "
                         "faster is bfloat16?", (2, 4))),
)


def _seed_mlp(values: dict) -> dict | None:
    """The seed notebook timed its MLP block with TF32 matmuls on an A100 at B,S,D,H = 256,1024,
    512,2048: 22.5 ms ± 62.8 µs eager, 14.4 ms ± 21.2 µs compiled (mean ± sd of 7 %timeit runs)."""
    if int(values.get("batch", 0)) != 256:
        return None

    def t(mean: float, sd: float) -> dict:
        return {"median_s": mean, "p10_s": mean - sd, "p90_s": mean + sd, "n": 7}

    return {"params": {"B": 256, **SIZES["gpu"]}, "device": "cuda",
            "rows": {"tf32": {"torch_eager": t(22.5e-3, 62.8e-6), "torch_compile": t(14.4e-3, 21.2e-6)}},
            "extra": "mlp_block B,S,D,H = 256,1024,512,2048, TF32 matmuls, mean ± sd of 7 %timeit runs"}


def _warm_batches(_demo: Demo) -> list[dict]:
    """`make warm` compiles every batch the control offers: a Run at any of them only measures."""
    kind = device_kind()
    return [{}] + [{"batch": b} for b in BATCHES[kind] if b != DEFAULT_BATCH[kind]]


def _controls(kind: str) -> list:
    seq = SIZES[kind]["S"]
    return [Choice("batch", DEFAULT_BATCH[kind], options=[(f"{b} × {seq}", b) for b in BATCHES[kind]],
                   label="tokens (batch × sequence)", toggle=True)]


lever = Demo(
    "lever", "Precision, the other lever",
    controls=_controls, measure=measure_lever, figure=figure_lever, panel="warmed",
    configs=Configs(warm=_warm_batches,
                    record={"budget_s": 0.3}, quick={"budget_s": 0.05}), claims=lever_claims,
    reported=Reported(_seed_mlp, "the seed lecture notebook ('PyTorch and JAX') on an A100"),
)
