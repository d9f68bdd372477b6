"""What the inspector is given: your source text, the function it defines, and inputs for it.

The panel's code box and ``python -m demos inspect FILE.py:FUNC`` hand in source text:
:func:`load_source` executes it as a module of its own (its lines registered with
``linecache``, so tracebacks, Dynamo and the report can quote them), :func:`pick_function`
chooses the function to inspect, :func:`uses_jax_only` tells a function written with
``jax.numpy`` alone (it gets the JAX half of the report only), and :func:`user_error` turns an
exception raised in that code into one line naming the line of your source it passed through.

Inputs: :func:`parse_shape` reads ``"1024x1024"``, :func:`positional_count` how many tensors the
function takes, :func:`check_fits` refuses sizes whose copies would not fit before anything is
allocated, :func:`torch_inputs` makes seeded random tensors and :func:`jax_inputs` the same values
as JAX arrays. ``DTYPES`` are the dtypes offered, ``BUDGET_S`` the default timing budget per form.

Both halves time your function uncompiled against compiled the same way: :func:`time_against`.
"""
from __future__ import annotations

import linecache
import math
import sys
import traceback
import types
from typing import Any, Callable, Sequence

from demos.engine.convert import to_jax
from demos.engine.devices import require_jax, require_torch, torch_device
from demos.engine.errors import DemoError, one_line
from demos.engine.protocol import declared_state
from demos.engine.timing import measure_interleaved

SOURCE_NAME = "<your code>"
DTYPES = ("float32", "float64", "bfloat16", "float16")
BUDGET_S = 0.3
# The first thing run is your function, eagerly, at your shape: a call that has not returned
# EAGER_LIMIT_S after Run (a cold worker's start included; the call itself gets at least the
# worker's MIN_STAGE_S) is taken for an endless loop and stopped, with the line it was at
# (compiling keeps the whole job's limit). Stopped, said and ready again within 15 s of Run.
EAGER_STAGE = "running it eagerly"
EAGER_LIMIT_S = 11.0


# =======================================================================================
# Source text → function (what the panel's code box and `inspect FILE.py:FUNC` hand in)
# =======================================================================================
_RUNS = [0]


def load_source(source: str, filename: str | None = None) -> dict[str, Any]:
    """Execute ``source`` in a namespace of its own, its lines registered with ``linecache``
    under ``filename`` (so tracebacks, Dynamo and this report can quote them). A syntax error is
    one line with its line and column; an error while defining is one line with its line."""
    if not isinstance(source, str) or not source.strip():
        raise DemoError("the code box is empty: define a function, e.g. def f(x): return x.sin() * 2")
    _RUNS[0] += 1
    filename = filename or f"{SOURCE_NAME[:-1]} #{_RUNS[0]}>"
    try:
        code = compile(source, filename, "exec")
    except SyntaxError as exc:
        where = f"line {exc.lineno}, column {exc.offset}" if exc.lineno else "somewhere"
        raise DemoError(f"syntax error at {where}: {exc.msg}") from None
    lines = source.splitlines(keepends=True)
    linecache.cache[filename] = (len(source), None, lines, filename)
    # a real module (torch.cond compiles its branches and imports their module by name)
    module = types.ModuleType(f"yourcode_{_RUNS[0]}")
    module.__file__ = filename
    sys.modules[module.__name__] = module
    namespace = module.__dict__
    try:
        exec(code, namespace)
    except Exception as exc:
        raise DemoError(f"defining your code failed: {user_error(exc, filename)}") from None
    namespace["__filename__"] = filename
    return namespace


def pick_function(namespace: dict[str, Any], name: str | None = None) -> Callable:
    """The function ``name`` of a loaded source, or the first one it defines."""
    filename = namespace.get("__filename__", "")
    funcs = {k: v for k, v in namespace.items() if isinstance(v, types.FunctionType)
             and v.__code__.co_filename == filename}
    if name:
        if name not in funcs:
            raise DemoError(f"no function {name!r} in your code (it defines: {', '.join(funcs) or 'none'})")
        return funcs[name]
    plain = [f for k, f in funcs.items() if not k.endswith("_jax")]
    if not plain:
        raise DemoError("your code defines no function (def f(x): …)")
    return plain[0]


def uses_jax_only(fn: Callable) -> bool:
    """Whether ``fn`` is written with JAX alone: the globals its code names (and the code of the
    functions of its own source it calls) include a JAX module or function and no torch one.
    Such a function cannot take torch tensors, so the inspector reports its jax.jit half alone."""
    frameworks: set[str] = set()
    seen: set[int] = set()

    def walk(f: Callable) -> None:
        if id(f) in seen:
            return
        seen.add(id(f))
        cells = dict(zip(f.__code__.co_freevars, f.__closure__ or ()))  # names it closes over
        codes = [f.__code__]
        while codes:
            code = codes.pop()
            codes.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
            for name in (*code.co_names, *code.co_freevars):
                try:
                    v = cells[name].cell_contents if name in cells else f.__globals__.get(name)
                except ValueError:  # an empty cell
                    continue
                if v is None:
                    continue
                if isinstance(v, types.FunctionType) and v.__code__.co_filename == f.__code__.co_filename:
                    walk(v)  # a helper defined beside it
                    continue
                module = v.__name__ if isinstance(v, types.ModuleType) else getattr(v, "__module__", None)
                if isinstance(module, str):
                    frameworks.add(module.split(".", 1)[0])

    walk(fn)
    return bool(frameworks & {"jax", "jaxlib"}) and "torch" not in frameworks


def user_error(exc: BaseException, filename: str | None = None) -> str:
    """An exception raised inside the user's code as one line: its type, first line, and the last
    line of the user's source it passed through."""
    line = None
    for fr in traceback.extract_tb(exc.__traceback__):
        if (filename and fr.filename == filename) or (not filename and fr.filename.startswith(SOURCE_NAME[:-1])):
            line = fr
    text = one_line(exc)
    if line is not None:
        return f"line {line.lineno} ({(line.line or '').strip()[:60]}): {text}"
    return text


# =======================================================================================
# Inputs
# =======================================================================================
def parse_shape(text: str | Sequence[int]) -> tuple[int, ...]:
    """``"1024x1024"`` → (1024, 1024); at most 4 dimensions, each 1 … 2^26."""
    if isinstance(text, str):
        parts = [p.strip() for p in text.lower().replace("×", "x").replace(",", "x").split("x")]
        try:
            dims = tuple(int(p, 10) for p in parts if p)
        except ValueError:
            raise DemoError(f"shape {text!r}: give sizes like 1024x1024") from None
    else:
        dims = tuple(text)
    if not 1 <= len(dims) <= 4 or any(isinstance(d, bool) or not isinstance(d, int) or not 1 <= d <= 2**26 for d in dims):
        raise DemoError(f"shape {text!r}: 1 to 4 sizes, each from 1 to 2^26")
    return dims


def positional_count(fn: Callable) -> int:
    """How many inputs the function takes (positional parameters without defaults), 1 … 4."""
    import inspect

    params = [p for p in inspect.signature(fn).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    if not 1 <= len(params) <= 4:
        raise DemoError(f"{fn.__name__} takes {len(params)} inputs; the inspector feeds 1 to 4 tensors")
    return len(params)


def input_bytes(shape: tuple[int, ...], dtype: str, count: int) -> int:
    item = {"float64": 8, "float32": 4, "bfloat16": 2, "float16": 2}[dtype]
    return math.prod(shape) * item * count


def check_fits(shape: tuple[int, ...], dtype: str, count: int, limit_bytes: int) -> None:
    """Refuse, before allocating anything, inputs whose copies would not fit: eager and compiled
    each get copies, and the function's intermediates need room too (×8)."""
    need = input_bytes(shape, dtype, count) * 8
    if need > limit_bytes:
        raise DemoError(f"shape {'x'.join(map(str, shape))} {dtype} × {count} input{'s' * (count != 1)} needs "
                        f"~{need / 2**30:.1f} GiB with copies and intermediates; the limit here is "
                        f"{limit_bytes / 2**30:.1f} GiB: choose a smaller shape")


def torch_inputs(shape: tuple[int, ...], dtype: str, count: int, device: str | None = None, rng: int = 0) -> list:
    torch = require_torch()
    if dtype not in DTYPES:
        raise DemoError(f"dtype {dtype!r}: one of {', '.join(DTYPES)}")
    g = torch.Generator().manual_seed(rng)
    dev = device or torch_device()
    return [torch.randn(shape, generator=g, dtype=torch.float32).to(device=dev, dtype=getattr(torch, dtype))
            for _ in range(count)]


def jax_inputs(torch_xs: list) -> list:
    """The same values as JAX arrays (through float32 numpy: JAX's CPU has no bfloat16 numpy)."""
    require_jax()
    return [to_jax(x) for x in torch_xs]


def time_against(out: dict[str, Any], uncompiled: tuple[str, Callable[[], Any]],
                 compiled: tuple[str, Callable[[], Any]], sync: Callable[[Any], None],
                 budget_s: float) -> tuple[float, float]:
    """Your function uncompiled against compiled, taking turns, from the declared state: each
    form's timing under its key in ``out``, with the conditions and the speedup. Returns the two
    medians (seconds per call)."""
    with declared_state() as cond:
        times = measure_interleaved({k: (fn, sync) for k, fn in (uncompiled, compiled)}, budget_s=budget_s)
    out["conditions"] = cond.stamp()
    for key, _fn in (uncompiled, compiled):
        out[key] = times[key].to_dict()
    e, c = times[uncompiled[0]].median, times[compiled[0]].median
    out["speedup"] = e / c if c > 0 else None
    return e, c
