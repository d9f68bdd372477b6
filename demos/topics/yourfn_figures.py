"""Part 7's figure: the inspector's report drawn in one of four views (graphs & breaks, guards &
recompiles, kernels & code, time & numerics), with before → after when a preset's fix was inspected
too."""
from __future__ import annotations

import textwrap
from typing import Any

from demos.engine import plots
from demos.introspection.inspector_report import call_kind
from demos.topics.yourfn_presets import PRESETS

VIEWS = ("breaks", "recompiles", "kernels", "time & numerics")  # graphs & breaks, guards & recompiles, kernels & code
FIG_SIZE = (12.2, 3.85)  # a little lower than the deck's figures: the code box sits above it
RED, GREEN, GREY, AMBER = "#b00020", "#1b7f3a", "#555555", "#a15c00"


def _header(fig, data: dict[str, Any]) -> None:
    r = data["report"]
    p = PRESETS[data["preset"]]
    what = "your code" if data["edited"] else f"{p['title']} — {data['version']}"
    fig.text(0.012, 0.985, f"{r['name']}({r['inputs']}) · {what}", fontsize=15, fontweight="bold", va="top")


def _before_after(fig, data: dict[str, Any], footer: float) -> None:
    """Two lines under the view, above the footer (``footer``: the top of its text): a long stamp,
    wrapped to three lines, pushes them closer together and up, never under it."""
    ba = data.get("before_after")
    if not ba:
        return
    b, a = ba["before"], ba["after"]

    def pair(key: str, fmt=str) -> str:
        f = lambda v: "?" if v is None else fmt(v)  # noqa: E731
        return f"{f(b.get(key))} → {f(a.get(key))}"

    fix = PRESETS[data["preset"]]["fix_title"]
    body = (f"graphs {pair('graphs')} · breaks {pair('breaks')} · kernels {pair('kernels')} · compiles over "
            f"{b.get('sizes')} sizes {pair('compiles')} · speedup {pair('speedup', lambda v: f'{v:.2f}×')}"
            + (f" · jax.jit {pair('jax')}" if b.get("jax") or a.get("jax") else ""))
    lines = [f"as written → with the fix ({fix}):", body]
    width = plots.chars_per_line(fig, 12.5, 0.97)
    if len(body) > width:  # a JAX error's name runs past the figure's edge: both lines share the text
        lines = textwrap.wrap(f"{lines[0]} {body}", width)
        lines = lines[:1] + [" ".join(lines[1:])[:width - 1] + "…" if len(lines) > 2 else lines[1]]
    step = 0.055 if footer < 0.1 else 0.05  # a three-line footer: the lines closer, clear of the view's labels
    plots.text_lines(fig, 0.012, max(0.215, footer + 0.05 + step), lines, step=step, fontsize=12.5, color="#0b4f8a")


def _code_lines(data: dict[str, Any]) -> list[str]:
    return [ln for ln in data["code"] if not ln.startswith(("import ", "from "))]


def _view_breaks(fig, data: dict[str, Any]) -> None:
    r, t = data["report"], data["report"]["torch"]
    code = data["code"]
    marks = {b["line"] - 1 for b in t.get("break_list", []) if b.get("line")}
    j = r.get("jax") or {}
    if j.get("line"):
        marks.add(j["line"] - 1)
    # drop the import lines but keep the line numbers the marks refer to
    shown = [(i, ln) for i, ln in enumerate(code) if not ln.startswith(("import ", "from "))]
    while shown and not shown[0][1].strip():
        shown.pop(0)
    plots.draw_code(fig, 0.012, 0.915, 0.49, 0.68, [f"{i + 1:>2} {ln}" for i, ln in shown], fontsize=11.5,
                    mark={k for k, (i, _ln) in enumerate(shown) if i in marks})
    x = 0.52
    fig.text(x, 0.915, "torch.compile", fontsize=15, fontweight="bold", color=plots.color("torch_compile"), va="top")
    if t.get("skipped"):  # a function written with JAX alone
        y = plots.text_lines(fig, x, 0.845, textwrap.wrap(t["skipped"], 60)[:3], step=0.055, fontsize=12.5, color=GREY)
        _jax_breaks(fig, r, j, x, y - 0.02)
        return
    fig.text(x, 0.845, f"graphs: {t['graphs']} · graph breaks: {t['breaks']}", fontsize=15, fontweight="bold",
             color=RED if t["breaks"] else GREEN, va="top")
    y = 0.775
    for b in t.get("break_list", [])[:2]:
        y = plots.text_lines(fig, x, y, textwrap.wrap(f"line {b['line']}: {b['plain']}", 62)[:2], step=0.055,
                             fontsize=12.5)
        if b.get("hint"):
            y = plots.text_lines(fig, x, y, textwrap.wrap(f"hint: {b['hint']}", 56)[:2], step=0.055, fontsize=12.5,
                                 color=AMBER)
    if not t.get("break_list"):
        y = plots.text_lines(fig, x, y, ["the whole function is one graph"], fontsize=12.5)
    if t.get("printed", {}).get("lines"):
        y = plots.text_lines(fig, x, y, [f"it printed {t['printed']['lines']} lines while inspected (once per "
                                         "eager call)"], fontsize=12.5, color=GREY)
    _jax_breaks(fig, r, j, x, y - 0.02)


def _jax_breaks(fig, r: dict[str, Any], j: dict[str, Any], x: float, y: float) -> None:
    """The jax.jit column of the breaks view: one program, the tracer's error, or no twin."""
    fig.text(x, y, "jax.jit", fontsize=15, fontweight="bold", color=plots.color("jax_jit"), va="top")
    if not r.get("jax"):
        msg = ["no jax.numpy twin here (define <name>_jax to compare)"] if not r.get("has_jax_twin") else []
        plots.text_lines(fig, x, y - 0.07, msg, fontsize=12.5, color=GREY)
    elif j.get("error"):
        plots.text_lines(fig, x, y - 0.065, textwrap.wrap(j["error"], 60)[:2], step=0.055, fontsize=12.5, color=RED)
    else:
        plots.text_lines(fig, x, y - 0.07, [f"one program: {j['jaxpr_eqns']} jaxpr equations → {j['fusions']} "
                                            f"fusion{'s' * (j['fusions'] != 1)}"], fontsize=12.5, color=GREEN)


def _view_recompiles(fig, data: dict[str, Any]) -> None:
    r, t = data["report"], data["report"]["torch"]
    sw = r.get("sweep") or {}
    if t.get("skipped"):  # a function written with JAX alone
        _jax_recompiles(fig, sw)
        return
    guards = t.get("guards", [])
    fig.text(0.012, 0.915, f"guards on the first compile ({t.get('guard_count', len(guards))} checks)", fontsize=14,
             fontweight="bold", va="top")
    plots.draw_code(fig, 0.012, 0.86, 0.43, 0.62, [f"• {g}" for g in guards] or ["(none logged)"], fontsize=11.5)
    calls = (sw.get("torch") or {}).get("calls", [])
    ax = plots.add_axes(fig, (0.58, 0.47, 0.4, 0.27))
    colors = {"hit": GREEN, "static": RED, "dynamic": AMBER, "eager": GREY}
    jcalls = {c["size"]: c for c in (sw.get("jax") or {}).get("calls", [])}
    for k, c in enumerate(calls):
        kind = call_kind(c)
        key = "eager" if kind.startswith("eager") else "hit" if kind == "hit" else kind.split()[-1]
        ax.scatter([k], [1], s=110, color=colors[key], marker="o" if key == "hit" else "X" if key != "eager" else "s")
        if c["size"] in jcalls:
            jc = jcalls[c["size"]]
            ax.scatter([k], [0], s=110, color=RED if jc["miss"] else GREEN, marker="X" if jc["miss"] else "o")
    if jcalls:
        ax.set_yticks([0, 1], ["jax.jit", "torch.compile"], fontsize=12)
    else:  # no jax.numpy twin: one row
        ax.set_yticks([1], ["torch.compile"], fontsize=12)
    ax.set_xticks(range(len(calls)), [str(c["size"]) for c in calls], rotation=0, fontsize=11.5)
    ax.set_ylim(-0.6, 1.6)
    ax.grid(False)
    fig.text(0.47, 0.915, f"one call per size of dimension {sw.get('dim', 0)}", fontsize=14, fontweight="bold",
             va="top")
    for key, lab in (("hit", "hit"), ("static", "recompile"), ("dynamic", "recompile, dynamic"),
                     ("eager", "recompile limit: eager")):
        ax.scatter([], [], color=colors[key], label=lab, marker="o" if key == "hit" else "X" if key != "eager" else "s")
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper left", bbox_to_anchor=(0.465, 0.865), ncols=4, fontsize=11.5,
               frameon=False, handletextpad=0.1, columnspacing=0.9)
    n = (sw.get("torch") or {}).get("compiles", 0)
    fell = [c for c in calls if c["fallback"] and not c["compiled"]]
    dyn = next((c for c in calls if c["dynamic"]), None)
    if fell:
        verdict = f"{n} compiles, then the recompile limit ({sw['torch']['limit']}) ran the rest uncompiled"
    elif dyn:
        verdict = f"{n} compiles: at size {dyn['size']} it compiled dynamic, and later sizes hit"
    else:
        verdict = f"{n} compile{'s' * (n != 1)} over {len(calls)} sizes"
    first = next((c["reason"] for c in calls if c["reason"]), "")
    lines = textwrap.wrap(verdict, 68) + ([f"first failed guard: {first[:50]}"] if first else [])
    if jcalls:
        misses = sum(c["miss"] for c in jcalls.values())
        lines.append(f"jax.jit: {misses} misses — each new shape is traced again")
    plots.text_lines(fig, 0.47, 0.4, lines, step=0.05, fontsize=12.5)  # clear of the before → after lines


def _jax_recompiles(fig, sw: dict[str, Any]) -> None:
    """The recompiles view of a function written with JAX alone: jax.jit's cache misses per size."""
    fig.text(0.012, 0.915, "jax.jit has no guards to read", fontsize=14, fontweight="bold", va="top")
    plots.text_lines(fig, 0.012, 0.84, textwrap.wrap(
        "It compiles again for each new input shape or dtype: the arguments' shapes and dtypes (and any static "
        "arguments) are its cache key. Each miss names the argument whose shape changed.", 52),
        step=0.06, fontsize=12.5)
    jx = sw.get("jax") or {}
    calls = jx.get("calls", [])
    fig.text(0.47, 0.915, f"one call per size of dimension {sw.get('dim', 0)}", fontsize=14, fontweight="bold",
             va="top")
    if jx.get("error") or not calls:
        plots.text_lines(fig, 0.47, 0.8, [jx.get("error") or "no sweep (the function did not trace)"], fontsize=12.5,
                         color=RED if jx.get("error") else GREY)
        return
    ax = plots.add_axes(fig, (0.58, 0.47, 0.4, 0.27))
    for k, c in enumerate(calls):
        ax.scatter([k], [0], s=110, color=RED if c["miss"] else GREEN, marker="X" if c["miss"] else "o")
    ax.set_yticks([0], ["jax.jit"], fontsize=12)
    ax.set_xticks(range(len(calls)), [str(c["size"]) for c in calls], fontsize=11.5)
    ax.set_ylim(-0.6, 0.6)
    ax.grid(False)
    ax.scatter([], [], color=GREEN, marker="o", label="hit")
    ax.scatter([], [], color=RED, marker="X", label="miss: traced and compiled again")
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper left", bbox_to_anchor=(0.465, 0.865), ncols=2, fontsize=11.5, frameon=False)
    misses = sum(c["miss"] for c in calls)
    first = next((c["reason"] for c in calls[1:] if c["reason"]), "")
    lines = [f"{misses} compile{'s' * (misses != 1)} over {len(calls)} sizes"] + (
        textwrap.wrap(f"miss reason: {first}", 68)[:2] if first else [])
    plots.text_lines(fig, 0.47, 0.4, lines, step=0.05, fontsize=12.5)  # clear of the before → after lines


def _view_kernels(fig, data: dict[str, Any]) -> None:
    r, t = data["report"], data["report"]["torch"]
    j = r.get("jax") or {}
    ax = plots.add_axes(fig, (0.06, 0.37, 0.34, 0.48))  # its two-line labels clear of the before → after lines
    names, vals, cols = [], [], []
    for name, v, c in (("eager\naten ops", t.get("eager_ops"), plots.color("torch_eager")),
                       ("Inductor\nkernels", t.get("kernels"), plots.color("torch_compile")),
                       ("jaxpr\nequations", j.get("jaxpr_eqns"), plots.color("jax_eager")),
                       ("XLA\nfusions", j.get("fusions"), plots.color("jax_jit"))):
        if v is not None:
            names.append(name)
            vals.append(v)
            cols.append(c)
    bars = ax.bar(range(len(vals)), vals, color=cols)
    ax.bar_label(bars, [str(v) for v in vals], fontsize=13)
    ax.set_xticks(range(len(vals)), names, fontsize=11.5)
    ax.set_ylim(0, max(vals + [1]) * 1.25)
    ax.set_title("ops → kernels", loc="left", fontsize=14)
    libs = t.get("library_calls") or []
    if libs:
        fig.text(0.06, 0.22, f"+ library calls: {', '.join(sorted(set(libs)))[:60]}", fontsize=12.5, va="top")
    if t.get("skipped"):  # a function written with JAX alone: XLA's program instead
        fig.text(0.45, 0.915, "optimized HLO (XLA)", fontsize=14, fontweight="bold", va="top")
        plots.draw_code(fig, 0.45, 0.86, 0.54, 0.66, j.get("hlo_excerpt") or [j.get("error") or "(none)"], fontsize=11.5)
        return
    fig.text(0.45, 0.915, "generated code (Inductor)", fontsize=14, fontweight="bold", va="top")
    plots.draw_code(fig, 0.45, 0.86, 0.54, 0.66, t.get("code_excerpt") or ["(none)"], fontsize=11.5)


def _view_time(fig, data: dict[str, Any]) -> None:
    from demos.engine.timing import fmt_seconds

    r, t = data["report"], data["report"]["torch"]
    j = r.get("jax") or {}
    ax = plots.add_axes(fig, (0.105, 0.37, 0.345, 0.48))  # room for the two-line labels, over the before → after lines
    # two-line names: four of one line met each other under this narrow axes
    forms = [("torch\neager", t.get("eager"), "torch_eager"), ("torch.\ncompile", t.get("compiled"), "torch_compile"),
             ("JAX\nop-by-op", j.get("op_by_op"), "jax_eager"), ("jax.jit", j.get("jit"), "jax_jit")]
    forms = [f for f in forms if f[1]]
    med = [f[1]["median_s"] * 1e6 for f in forms]
    lo = [m - f[1]["p10_s"] * 1e6 for m, f in zip(med, forms)]
    hi = [f[1]["p90_s"] * 1e6 - m for m, f in zip(med, forms)]
    bars = ax.bar(range(len(forms)), med, yerr=[lo, hi], capsize=5, color=[plots.color(f[2]) for f in forms])
    ax.bar_label(bars, [fmt_seconds(m * 1e-6) for m in med], fontsize=12, padding=6)
    ax.set_xticks(range(len(forms)), [f[0] for f in forms], fontsize=11.5)
    ax.set_ylabel("µs per call\n(median, p10–p90)")
    ax.set_ylim(0, max(m + h for m, h in zip(med, hi)) * 1.3 if med else 1)
    x = 0.5
    if t.get("skipped"):  # a function written with JAX alone
        lines = ["torch.compile: not inspected (written with JAX alone)"]
        if j.get("compile_s") is not None:
            lines.append(f"jax.jit compile (cache off): {j['compile_s']:.2f} s")
        lines.append(f"jit vs op-by-op: {j['speedup']:.2f}×" if j.get("speedup") else "jit vs op-by-op: —")
        if j.get("error"):
            lines += textwrap.wrap(j["error"], 60)[:2]
        plots.text_lines(fig, x, 0.86, lines, step=0.07, fontsize=13.5)
        return
    lines = [f"compile (caches bypassed): {t['compile_s']:.2f} s" + (f" · jax.jit {j['compile_s']:.2f} s"
                                                                      if j.get("compile_s") is not None else ""),
             f"speedup: {t['speedup']:.2f}×" if t.get("speedup") else "speedup: —",
             (f"compiling pays after {t['pays_after']:,} calls" if t.get("pays_after")
              else "compiling never pays at this size (not faster)")]
    y = plots.text_lines(fig, x, 0.86, lines, step=0.07, fontsize=13.5)
    num = t.get("numerics") or {}
    y = plots.text_lines(fig, x, y - 0.02, [f"largest |compiled − eager|: {num.get('max_abs', float('nan')):.3g}"],
                         fontsize=13.5)
    y = plots.text_lines(fig, x, y, textwrap.wrap(num.get("why", ""), 66)[:3], step=0.055, fontsize=12.5, color=GREY)
    if t.get("mutates"):
        plots.text_lines(fig, x, y - 0.01, ["it changes its input in place: eager and compiled each ran on copies"],
                         fontsize=12.5, color=AMBER)


VIEW_DRAW = dict(zip(VIEWS, (_view_breaks, _view_recompiles, _view_kernels, _view_time)))


def figure_inspection(data: dict[str, Any], reference: dict[str, Any] | None = None, view: str = VIEWS[0]):
    fig, ax = plots.figure(size=FIG_SIZE)
    ax.axis("off")
    _header(fig, data)
    VIEW_DRAW[view](fig, data)
    w = data["report"].get("worker") or {}
    stamped = dict(data, extra=f"{data['extra']} · worker started in {w['start_s']:.0f} s") if w.get("start_s") else data
    _before_after(fig, data, plots.stamp_figure(fig, stamped, None))
    return fig


def figure_view(data: dict[str, Any], reference: dict[str, Any] | None = None):
    """The figure in the view the panel's view control chose."""
    return figure_inspection(data, reference, data.get("values", {}).get("view", VIEWS[0]))


# Exercises
def figure_grade(data: dict[str, Any], reference: dict[str, Any] | None = None):
    """The grade: each goal met (✓) or not (✗, with what is in the way), beside the code it
    graded; the solution in place of the goals when the solution control says "shown"."""
    # shorter than the inspector's views: under this panel a full-height figure reached y=726 of the 720-px slide
    fig, (code_ax, txt) = plots.figure(1, 2, size=(plots.SLIDE_SIZE[0], 3.8), width_ratios=[1.0, 1.15])
    for ax in (code_ax, txt):
        ax.axis("off")
    bad_lines = {int(p.split(":")[0].split()[1]) for g in data["goals"] for p in g["problems"]
                 if p.startswith("line ") and p.split(":")[0].split()[1].isdigit()}
    skip = 0  # the import lines at the top are not what is graded
    while skip < len(data["code"]) and (not data["code"][skip].strip() or data["code"][skip].startswith(("import ", "from "))):
        skip += 1
    shown, first = data["code"][skip:], skip + 1
    code_ax.text(0, 1.0, "graded code", fontsize=13, fontweight="bold", va="top", transform=code_ax.transAxes)
    for i, line in enumerate(shown[:14]):
        n = first + i
        code_ax.text(0, 0.9 - i * 0.068, f"{n:>2} {line[:52]}", va="top", transform=code_ax.transAxes,
                     color=plots.PALETTE["torch_eager"] if n in bad_lines else "#222222",
                     family="monospace", fontsize=11.5)
    ok = data["passed"]
    txt.text(0, 1.0, ("✓ all goals met" if ok else "✗ not yet") + f" — {data['title']}", fontsize=15,
             fontweight="bold", color="#1a7f37" if ok else "#b00020", va="top", transform=txt.transAxes)
    y = 0.88
    if (data.get("values") or {}).get("solution") == "shown":
        txt.text(0, y, "a solution:", fontsize=12.5, fontweight="bold", va="top", transform=txt.transAxes)
        for i, line in enumerate(data["solution_code"][:10]):
            txt.text(0, y - 0.08 - i * 0.068, line[:60], family="monospace", fontsize=11.5, va="top",
                     color=plots.PALETTE["torch_compile"], transform=txt.transAxes)
    else:
        for g in data["goals"]:
            met = not g["problems"]
            txt.text(0, y, ("✓ " if met else "✗ ") + g["goal"], fontsize=12.5, va="top", wrap=True,
                     color="#1a7f37" if met else "#b00020", transform=txt.transAxes)
            y -= 0.085
            for p in g["problems"][:3]:
                txt.text(0.03, y, p[:78], fontsize=11.5, va="top", color="#333333", transform=txt.transAxes)
                y -= 0.07
            y -= 0.02
        if not ok:
            txt.text(0, max(y - 0.02, 0.05), f"hint: {data['hint']}", fontsize=11.5, style="italic", va="top",
                     color="#555555", transform=txt.transAxes)
    plots.stamp_figure(fig, data, reference)
    return fig
