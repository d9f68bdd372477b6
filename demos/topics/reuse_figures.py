"""Figure of part 2's reuse-and-donation demo (:mod:`demos.topics.reuse`): Inductor's memory plan
as its code states it, beside what jax.jit allocates with and without donated inputs."""
from __future__ import annotations

from typing import Any

from demos.engine import plots
from demos.engine.workload_defs import ITEMSIZE
from demos.topics.fusion_figures import text_block
_DONATION_LABELS = {(): "no donation", (0,): "donate x", (0, 1): "donate x and y"}


def figure_plan(data: dict[str, Any], reference: dict | None = None):
    fig, (txt, ax) = plots.figure(1, 2, width_ratios=[1.45, 1.0])
    mlp = data["inductor"]["mlp_block"]
    lines = mlp["plan"]
    colors = [plots.PALETTE["accent"] if "# reuse" in s else
              plots.color("torch_compile") if any(s.startswith(k.split("(")[0]) for k in mlp["in_place"]) else
              "#222222" for s in lines]
    y = text_block(txt, lines, f"torch.compile, MLP block: {len(mlp['buffers'])} new buffers, "
                    f"{len(mlp['reused'])} reused, {len(mlp['in_place'])} in place", colors, step=0.071)
    ca = data["inductor"]["complex_activation"]
    txt.text(0.0, y - 0.02, f"the seed's six ops: {ca['kernels']} kernel, {len(ca['buffers'])} new buffer "
             f"(the output), {len(ca['reused'])} reused:\nfused, a…e never exist. "
             f"The seed's list: {' · '.join(data.get('seed', []))}", fontsize=12, va="top", transform=txt.transAxes)
    txt.text(0.0, -0.1, "orange: storage handed to the next result (# reuse) · blue: a kernel writing over what it read",
             fontsize=10.5, color="#555555", va="top", transform=txt.transAxes)
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
            fate = "\n".join(f"{n} {'taken over' if dead else 'donated, unused' if j in r['donate_argnums'] else 'kept'}"
                             for j, (n, dead) in enumerate(zip("xy", r["deleted"])))
            ax.text(i, new[i] + 0.04, f"{new[i]:g} × N new\n{fate}", ha="center", va="bottom", fontsize=11.5)
        ax.set_xticks(range(len(rows)))
        ax.set_xticklabels([_DONATION_LABELS.get(tuple(r["donate_argnums"]), str(r["donate_argnums"]))
                            for r in rows], fontsize=11.5)
        ax.set_ylim(0, max(new + [1]) * 1.9)
        ax.set_ylabel("memory one call\nallocates (× N)")
        ax.grid(axis="x", visible=False)
        if any(r["warning"] for r in rows):
            ax.text(0.5, 0.97, "JAX: “" + next(r["warning"] for r in rows if r["warning"]).split(":")[0] + "”",
                    ha="center", va="top", fontsize=10, color="#555555", transform=ax.transAxes)
    ax.set_title("jax.jit(f, donate_argnums=…)", fontsize=15)
    plots.stamp_figure(fig, data, reference)
    return fig
