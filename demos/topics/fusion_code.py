"""What part 2's figures show of generated code, picked out of what the compilers wrote: the
calls in Inductor's wrapper, the excerpt of XLA's optimized HLO, the buffers a jaxpr keeps live
and the relayout einsum's transposes. :mod:`demos.topics.fusion` measures with them; the text
itself comes from :mod:`demos.introspection.codegen`, the helpers that cut it from
:mod:`demos.introspection.hlo`.
"""
from __future__ import annotations

import math
import re
from typing import Any

from demos.introspection.hlo import XlaCode, excerpt, shorten
from demos.introspection.inductor import InductorCode

FUSED_HLO = (r"^(ROOT )?%\S+ = .* (fusion|dot|custom-call|copy|transpose)\(",)  # the entry's ops a fusion slide shows
RELAYOUT_HLO = (r" (transpose|copy|dot|fusion|custom-call)\(",)  # the ops that show where XLA put the heads


def wrapper_lines(ind: InductorCode, keep: int = 5, width: int = 62) -> list[str]:
    """The first ``keep`` lines of Inductor's wrapper worth showing: what runs (kernels and extern
    calls) when there are at least three, else those and the allocations; asserts, frees, comments,
    argument unpacking and reinterpreted views left out."""
    wrapper = [s for s in ind.wrapper.splitlines()
               if not s.startswith(("assert_size_stride", "args.clear", "del ", "#", "return"))
               and ("(" in s or "reuse" in s) and not s.startswith("arg")
               and not re.match(r"^\w+ = reinterpret_tensor\(", s)]
    calls = [s for s in wrapper if "extern_kernels." in s or any(s.startswith(k) for k in ind.kernels)]
    if len(calls) >= 3:
        wrapper = calls  # what runs; allocations only when there is room
    return [shorten(s, width) for s in wrapper[:keep]]


def _drop_views(line: str) -> str:
    """``reinterpret_tensor(buf0, (…), (…), 0)`` → ``buf0``: a view of a buffer is the buffer."""
    while (i := line.find("reinterpret_tensor(")) >= 0:
        j, depth = i + len("reinterpret_tensor("), 1
        k = j
        while k < len(line) and depth:
            depth += {"(": 1, ")": -1}.get(line[k], 0)
            k += 1
        line = line[:i] + line[j:k - 1].split(",")[0].strip() + line[k:]
    return line


_EMPTY = re.compile(r"^(?P<buf>\w+) = empty_strided\w*\((?P<shape>\([^)]*\)).*?torch\.(?P<dtype>\w+)\)$")


def plan_lines(ind: InductorCode, keep: int = 9, width: int = 60) -> list[str]:
    """Inductor's memory plan as its wrapper states it, in order: allocations (``buf0 = new
    (1024, 1024)``), ``# reuse`` lines (a dead buffer taken over under a new name) and what runs
    (kernels, extern calls); asserts, frees, comments and argument unpacking left out, views
    shortened to their buffer."""
    out = []
    for s in ind.wrapper.splitlines():
        s = s.strip()
        if s.startswith(("assert_size_stride", "args.clear", "del ", "#", "return", "arg", "with ", "stream")):
            continue
        s = _drop_views(s)
        if m := _EMPTY.match(s):
            s = f"{m.group('buf')} = new {m.group('shape')} {m.group('dtype')}"
        elif not ("# reuse" in s or "extern_kernels." in s or any(s.startswith(k) for k in ind.kernels)):
            continue
        out.append(shorten(s.replace("extern_kernels.", ""), width))
    return out[:keep]


def fused_hlo_lines(entry: str) -> list[str]:
    """Three lines of XLA's optimized entry computation: its fusions, dots, custom calls and copies."""
    return excerpt(entry, FUSED_HLO, max_lines=3, width=62)


def relayout_lines(code: XlaCode) -> list[str]:
    """The relayout einsum's HLO as a slide shows it: three entry ops, then up to two transposes."""
    return (excerpt(code.entry, RELAYOUT_HLO, max_lines=3, width=64)
            + [shorten(s, 64) for s in code.transposes][:2])


def jaxpr_buffers(jaxpr: Any, min_bytes: int) -> list[dict[str, Any]]:
    """Each jaxpr equation's result of at least ``min_bytes`` (op name and bytes). Op-by-op JAX frees
    an array when its last reference dies; the seed's code binds every result to a local name, so
    all of them live until return. Smaller ones are scalars and broadcast constants XLA folds."""
    vals = []
    for e in jaxpr.jaxpr.eqns:
        for v in e.outvars:
            nbytes = int(math.prod(v.aval.shape)) * v.aval.dtype.itemsize
            if nbytes >= min_bytes:  # skip scalars/broadcast constants folded by XLA
                vals.append({"op": e.primitive.name, "bytes": nbytes})
    return vals
