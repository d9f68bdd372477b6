"""Figure of part 1's first-call demo (:mod:`demos.topics.firstcall`): every one-time cost on one
logarithmic time axis, beside the steady-state call it precedes."""
from __future__ import annotations

import math
from typing import Any

from demos.engine import plots
from demos.engine.figure_values import fmt_ratio, log_limits, measured, on_log, ratio_of
from demos.engine.timing import fmt_seconds

# (label, where the cost comes from) per row; rows of a form: first, second, steady
_FORMS = (("sin", "torch.sin(x)"), ("cos", "torch.cos(x), after sin"), ("compiled", "torch.compile(f)(x)"))


def _right_edge(left: float, notes: list[tuple[float, int]], axes_px: float = 950.0, char_px: float = 9.0) -> float:
    """The log axis' right end that leaves every note (where it starts, how many characters) inside
    the axes (at most ``char_px`` a character of 11.5 pt, an axes some ``axes_px`` wide): a note that
    stuck out moved the layout, and with it a reused figure's axes."""
    lo = math.log10(left)
    need = 0.0
    for x, chars in notes:
        f = min(chars * char_px / axes_px, 0.9)  # the share of the axes' width the note takes
        need = max(need, (math.log10(x) - f * lo) / (1 - f))
    return 10 ** need


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
                      "compiled": f"compile (or load): compiler {fmt_seconds(f.get('inductor_s', 0))}"}
        rows += [(f"{label}: 1st", f["first_s"], colour, first_note[form]),
                 ("2nd · steady", (f["second_s"], f["steady_s"]), colour, "")]
    # one row for the 2nd and the steady call (the 2nd light, the steady dark, the shorter in front):
    # eight rows stay readable above a footer of several verdicts
    y = list(range(len(rows)))[::-1]
    pair = [isinstance(r[1], tuple) for r in rows]
    def each(r, two):  # a pair's calls, or the one, where each sits on the log axis
        return [on_log(v) for v in (r[1] if two else (r[1],))]

    secs = [min(each(r, two), default=math.nan) for r, two in zip(rows, pair)]  # a pair's shorter call, or the one
    left = log_limits(secs, below=3)[0]
    tops = [max((v for v in each(r, two) if measured(v)), default=left)
            for r, two in zip(rows, pair)]  # a pair's longer call, or the one (a missing one: its "—" at the left)
    notes = []
    for yi, (_label, s, colour, note), top, two in zip(y, rows, tops, pair):
        if two:
            second, steady = (on_log(v) for v in s)
            ax.barh(yi, second, color=colour, alpha=0.35, height=0.7, zorder=2 if second < steady else 1)
            ax.barh(yi, steady, color=colour, alpha=0.9, height=0.7, zorder=1.5)
        else:
            ax.barh(yi, on_log(s), color=colour, alpha=0.9, height=0.7)
        said = f"{fmt_seconds(s[0])} · {fmt_seconds(s[1])}" if two else f"{fmt_seconds(s)}  {note}".rstrip()
        ax.text(top * 1.15, yi, said, va="center", fontsize=11.5)
        notes.append((top * 1.15, len(said)))
    ax.set_yticks(y)
    ax.set_yticklabels([r[0] for r in rows], fontsize=11.5)
    ax.set_xscale("log")
    ax.set_xlim(left, _right_edge(left, notes))
    ax.set_ylim(-0.5, len(rows) - 0.5)
    ax.grid(axis="y", visible=False)
    ratio = fmt_ratio(ratio_of(data["sin"]["first_s"], data["sin"]["steady_s"]), ",.0f")
    # the unit in the title, no x label: eight rows of labels keep their height over a footer of verdicts
    ax.set_title(f"first calls in a new process (seconds, log scale): sin's first = {ratio} its steady call",
                 fontsize=14)
    plots.stamp_figure(fig, data, reference)
    return fig
