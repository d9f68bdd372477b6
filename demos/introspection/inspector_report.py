"""The inspector's report: the :class:`Report` record and how it reads as text.

:class:`Report` holds what :func:`demos.introspection.inspector.inspect_fn` found (``to_dict()``
is JSON-able, ``from_dict()`` reads it back); :func:`summary_line` is its one-line summary,
:func:`report_text` the full text a terminal shows (``python -m demos inspect``), and
:func:`call_kind` names one call of the recompilation sweep (a hit, a compile, or eager after the
recompile limit). All of them read the report's dict, so a report from a worker process reads the
same.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


# =======================================================================================
# The report
# =======================================================================================
@dataclass
class Report:
    """What :func:`inspect_fn` found (``to_dict()`` is JSON-able; ``text()`` reads in a terminal)."""
    name: str
    inputs: str
    device: str
    torch: dict[str, Any] = field(default_factory=dict)
    jax: dict[str, Any] | None = None
    sweep: dict[str, Any] | None = None
    source: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "inputs": self.inputs, "device": self.device, "torch": self.torch,
                "jax": self.jax, "sweep": self.sweep, "source": self.source, "seconds": round(self.seconds, 3)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Report":
        return cls(name=d["name"], inputs=d["inputs"], device=d["device"], torch=d.get("torch") or {},
                   jax=d.get("jax"), sweep=d.get("sweep"), source=d.get("source") or [], seconds=d.get("seconds", 0.0))

    def summary(self) -> str:
        """One line: breaks, recompiles, kernels eager → compiled, speedup, compile time."""
        return summary_line(self.to_dict())

    def text(self) -> str:
        return report_text(self.to_dict())


def _jax_summary(d: dict[str, Any]) -> str:
    """One line for a function written with JAX alone: jaxpr → fusions, recompiles, speedup, compile."""
    j = d.get("jax") or {}
    if j.get("error"):
        return f"{d['name']}: jax.jit: {j['error']}"
    bits = [f"{j.get('jaxpr_eqns', '?')} jaxpr equations → {j.get('fusions', '?')} XLA fusion"
            + "s" * (j.get("fusions") != 1)]
    sw = (d.get("sweep") or {}).get("jax") or {}
    if sw.get("calls"):
        bits.append(f"{sw.get('misses', '?')} compiles over {len(sw['calls'])} sizes")
    if j.get("speedup"):
        bits.append(f"{j['speedup']:.2f}× jit vs op-by-op")
    if j.get("compile_s") is not None:
        bits.append(f"compile {j['compile_s']:.2f} s")
    return f"{d['name']}: jax.jit only · " + " · ".join(bits)


def summary_line(d: dict[str, Any]) -> str:
    t = d.get("torch") or {}
    if t.get("skipped"):
        return _jax_summary(d)
    if t.get("error"):
        return f"{d['name']}: {t['error']}"
    bits = [f"{t.get('graphs', 0)} graph{'s' * (t.get('graphs') != 1)}",
            f"{t.get('breaks', 0)} break{'s' * (t.get('breaks') != 1)}"]
    sw = d.get("sweep") or {}
    if sw.get("torch"):
        bits.append(f"{sw['torch']['compiles']} compiles over {len(sw['torch']['calls'])} sizes")
    if t.get("kernels") is not None:
        ops = "?" if t.get("eager_ops") is None else t["eager_ops"]
        bits.append(f"{ops} aten ops → {t['kernels']} kernel{'s' * (t['kernels'] != 1)}"
                    + (f" + {len(t['library_calls'])} library call{'s' * (len(t['library_calls']) != 1)}"
                       if t.get("library_calls") else ""))
    if t.get("speedup"):
        bits.append(f"{t['speedup']:.2f}× compiled vs eager")
    if t.get("compile_s") is not None:
        bits.append(f"compile {t['compile_s']:.2f} s")
    return f"{d['name']}: " + " · ".join(bits)


def call_kind(c: dict[str, Any]) -> str:
    """One sweep call in words: a cache hit, a (dynamic) recompile, or eager after the limit."""
    if c["fallback"] and not c["compiled"]:
        return "eager (recompile limit reached: runs uncompiled)"
    if c["compiled"]:
        return "miss → compiled" + (" dynamic" if c["dynamic"] else " static")
    return "hit"


def report_text(d: dict[str, Any]) -> str:
    from demos.engine.timing import fmt_seconds

    t = d.get("torch") or {}
    out = [f"{d['name']}({d['inputs']}) on {d['device']}", "  " + summary_line(d)]
    if t.get("skipped"):
        out.append(f"  torch.compile: {t['skipped']}")
    for b in t.get("break_list", []):
        out.append(f"  break at line {b['line']}: {b['source']}  — {b['plain']}")
        if b.get("hint"):
            out.append(f"      hint: {b['hint']}")
    if t.get("guards"):
        out.append(f"  guards ({t.get('guard_count', len(t['guards']))}): " + "; ".join(t["guards"][:6]))
    if t.get("eager") and t.get("compiled"):
        out.append(f"  eager {fmt_seconds(t['eager']['median_s'])} (p10–p90 {fmt_seconds(t['eager']['p10_s'])}–"
                   f"{fmt_seconds(t['eager']['p90_s'])}) · compiled {fmt_seconds(t['compiled']['median_s'])} "
                   f"(p10–p90 {fmt_seconds(t['compiled']['p10_s'])}–{fmt_seconds(t['compiled']['p90_s'])})")
        out.append(f"  pays after: {t['pays_after'] if t.get('pays_after') else 'never at this size'}"
                   + (" calls" if t.get("pays_after") else ""))
    if t.get("numerics"):
        out.append(f"  numerics: max |compiled − eager| = {t['numerics']['max_abs']:.3g} — {t['numerics']['why']}")
    if t.get("mutates"):
        out.append("  mutates its inputs: eager and compiled each ran on copies")
    j = d.get("jax")
    if j:
        if j.get("error"):
            out.append(f"  jax.jit: {j['error']}")
        else:
            out.append(f"  jax.jit: {j['jaxpr_eqns']} jaxpr equations → {j['fusions']} fusion{'s' * (j['fusions'] != 1)}, "
                       f"{j['kernels']} kernel{'s' * (j['kernels'] != 1)}; "
                       f"{j.get('flops') or 0:.3g} FLOPs, {j.get('bytes') or 0:.3g} bytes; compile {j['compile_s']:.2f} s")
            if j.get("op_by_op") and j.get("jit"):
                o, k = j["op_by_op"], j["jit"]
                out.append(f"  JAX op-by-op {fmt_seconds(o['median_s'])} (p10–p90 {fmt_seconds(o['p10_s'])}–"
                           f"{fmt_seconds(o['p90_s'])}) · jax.jit {fmt_seconds(k['median_s'])} (p10–p90 "
                           f"{fmt_seconds(k['p10_s'])}–{fmt_seconds(k['p90_s'])})")
            if t.get("skipped") and j.get("hlo_excerpt"):
                out.append("  optimized HLO (excerpt):")
                out.extend(f"    {ln}" for ln in j["hlo_excerpt"][:12])
    sw = d.get("sweep") or {}
    if t.get("skipped"):
        for c in (sw.get("jax") or {}).get("calls", []):
            out.append(f"  size {c['size']:>6}: jax {'miss → traced and compiled' if c['miss'] else 'hit'}"
                       f"{(' — ' + c['reason']) if c['reason'] else ''}")
    for c in (sw.get("torch") or {}).get("calls", []):
        jx = next((x for x in (sw.get("jax") or {}).get("calls", []) if x["size"] == c["size"]), None)
        out.append(f"  size {c['size']:>6}: {call_kind(c)}"
                   f"{(' — ' + c['reason']) if c['reason'] else ''}"
                   + (f" | jax {'miss' if jx['miss'] else 'hit'}{(' — ' + jx['reason']) if jx['reason'] else ''}"
                      if jx else ""))
    return "\n".join(out)

