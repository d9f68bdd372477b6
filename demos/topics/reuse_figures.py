"""Figure of part 2's reuse-and-donation demo (:mod:`demos.topics.reuse`): Inductor's memory plan
as its code states it, beside what jax.jit allocates with and without donated inputs."""
from __future__ import annotations

import textwrap
from typing import Any

from demos.engine import plots
from demos.engine.workload_defs import ITEMSIZE
from demos.topics.fusion_figures import text_block, under_block
_DONATION_LABELS = {(): "no donation", (0,): "donate x", (0, 1): "donate x and y"}
_UNUSED = "donated,\nnot usable"  # two short lines: three bars' notes share a narrow axes


def figure_plan(data: dict[str, Any], reference: dict | None = None):
    fig, (txt, ax) = plots.figure(1, 2, width_ratios=[1.45, 1.0])
    mlp = data["inductor"]["mlp_block"]
    lines = mlp["plan"]
    colors = [plots.PALETTE["accent"] if "# reuse" in s else
              plots.color("torch_compile") if any(s.startswith(k.split("(")[0]) for k in mlp["in_place"]) else
              "#222222" for s in lines]
    # the heading in the row of the panel's title beside, the lines from the axes' top down, in points:
    # they fit above a footer of seven lines
    txt.set_title(f"torch.compile, MLP block: {len(mlp['buffers'])} new buffers, {len(mlp['reused'])} reused, "
                  f"{len(mlp['in_place'])} in place", loc="left", fontsize=14, fontweight="bold")
    y = text_block(txt, lines, "", colors, top=1.0)
    ca = data["inductor"]["complex_activation"]
    txt.text(0.0, 1.0, "orange: storage handed on to the next result (# reuse) · blue: a kernel writes over its input",
             fontsize=11.5, color="#555555", va="top", transform=under_block(txt, y + 2, 1.0))
    txt.text(0.0, 1.0, f"the seed's six ops: {ca['kernels']} kernel, {len(ca['buffers'])} new buffer "
             f"(the output), {len(ca['reused'])} reused:\nfused, a…e never exist. "
             f"The seed's list: {' · '.join(data.get('seed', []))}", fontsize=12, va="top",
             transform=under_block(txt, y + 20, 1.0))
    rows = data["donation"]
    if not rows:
        ax.axis("off")
        ax.text(0.5, 0.5, f"jax.jit not shown:\n{data.get('jax_error', 'JAX unavailable')}", ha="center",
                va="center", fontsize=12, wrap=True, transform=ax.transAxes)
    else:
        nbytes = data["N"] * ITEMSIZE[data["dtype"]]
        new = [(r["memory"].get("output_size_in_bytes", 0) + r["memory"].get("temp_size_in_bytes", 0)
                - r["memory"].get("alias_size_in_bytes", 0)) / nbytes for r in rows]
        ax.bar(range(len(rows)), new, color=plots.color("jax_jit"), width=0.6)
        for i, r in enumerate(rows):
            fate = "\n".join(f"{n} {'taken over' if dead else _UNUSED if j in r['donate_argnums'] else 'kept'}"
                             for j, (n, dead) in enumerate(zip("xy", r["deleted"])))
            ax.text(i, new[i] + 0.04, f"{new[i]:g} × N new\n{fate}", ha="center", va="bottom", fontsize=11.5)
        ax.set_xticks(range(len(rows)))
        ax.set_xticklabels([_DONATION_LABELS.get(tuple(r["donate_argnums"]), str(r["donate_argnums"]))
                            for r in rows], fontsize=11.5)
        ax.set_ylim(0, max(new + [1]) * 1.9)
        ax.set_ylabel("memory one call\nallocates (× N)")
        ax.grid(axis="x", visible=False)
        if any(r["warning"] for r in rows):  # under the bars' names: wider than the axes, it met the y tick labels
            said = textwrap.fill("JAX warns: “" + next(r["warning"] for r in rows if r["warning"]).split(":")[0] + "”", 36)
            ax.set_xlabel(said, fontsize=11.5, color="#555555")
    ax.set_title("jax.jit(f, donate_argnums=…)", fontsize=15)
    plots.stamp_figure(fig, data, reference)
    return fig
