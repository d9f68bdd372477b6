"""Figure of part 1's first-call demo (:mod:`demos.topics.firstcall`): every one-time cost on one
logarithmic time axis, beside the steady-state call it precedes."""
from __future__ import annotations

from typing import Any

from demos.engine import plots
from demos.engine.timing import fmt_seconds

# (label, where the cost comes from) per row; rows of a form: first, second, steady
_FORMS = (("sin", "torch.sin(x)"), ("cos", "torch.cos(x), after sin"), ("compiled", "torch.compile(f)(x)"))


def figure_costs(data: dict[str, Any], reference: dict | None = None):
    fig, ax = plots.figure()
    gpu = data.get("device") == "cuda"
    rows: list[tuple[str, float, str, str]] = [  # label, seconds, colour, note
        ("import torch", data["import_s"], plots.PALETTE["floor"], "loading the library"),
        ("CUDA context" if gpu else "input x created", data["context_s"] + data["input_s"], plots.PALETTE["floor"],
         "torch.cuda.init() and x on the GPU" if gpu else f"N={plots.pow2_label(data['N'])} allocated and filled")]
    for form, label in _FORMS:
        f = data[form]
        colour = plots.color("torch_compile" if form == "compiled" else "torch_eager")
        first_note = {"sin": "the process's first op: one-time setup + sin's own",
                      "cos": "cos's own first call only",
                      "compiled": f"capture + compile or load: compiler {fmt_seconds(f.get('inductor_s', 0))}"}
        rows += [(f"{label}: 1st", f["first_s"], colour, first_note[form]),
                 ("2nd", f["second_s"], colour, ""),
                 ("steady", f["steady_s"], colour, "")]
    y = list(range(len(rows)))[::-1]
    secs = [max(r[1], 1e-7) for r in rows]
    ax.barh(y, secs, color=[r[2] for r in rows], height=0.7, alpha=0.9)
    for yi, (label, s, _c, note) in zip(y, rows):
        ax.text(s * 1.15, yi, f"{fmt_seconds(s)}  {note}".rstrip(), va="center", fontsize=11)
    ax.set_yticks(y)
    ax.set_yticklabels([r[0] for r in rows], fontsize=11)
    ax.set_xscale("log")
    ax.set_xlim(min(secs) / 3, max(secs) * 3000)
    ax.set_xlabel("seconds (log scale)")
    ax.grid(axis="y", visible=False)
    ratio = data["sin"]["first_s"] / data["sin"]["steady_s"]
    ax.set_title(f"first calls in a new process: sin's first = {ratio:,.0f}× its steady call", fontsize=14)
    plots.stamp_figure(fig, data, reference)
    return fig
