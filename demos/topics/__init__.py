"""The lecture's topics, one module per part, each holding only its lesson: what each live
demo measures and how its figure draws it. Each module declares its demos with
:class:`demos.deck.demo.Demo`; :func:`load` imports them all and returns every declaration, so
nothing else lists demos by hand."""
from __future__ import annotations

# The lecture's parts, in order, and the topic modules each presents (slides/NN_*.ipynb)
PARTS: dict[int, tuple[str, ...]] = {
    1: ("eager", "firstcall"),
    2: ("fusion", "reuse"),
    3: ("roofline", "precision", "autotune"),
    4: ("internals", "collectives"),
    5: ("recompilation", "numerics"),
    6: ("model", "graphs"),
    7: ("yourfn",),
}


def part_of(topic: str) -> int:
    """The part that presents ``topic`` (a module name in this package)."""
    for part, topics in PARTS.items():
        if topic in topics:
            return part
    raise KeyError(f"topic {topic!r} is in no part of demos.topics.PARTS")


def load():
    """Import every topic module; return every declared demo in part order, then declaration order."""
    import importlib

    from demos.deck.demo import registered

    order = [t for topics in PARTS.values() for t in topics]
    for topic in order:
        importlib.import_module(f"{__name__}.{topic}")
    demos = registered(__name__ + ".")
    for d in demos:
        bound_as(d)
    return sorted(demos, key=lambda d: order.index(d.topic))


def bound_as(demo) -> str:
    """``topic.name``, the live cell's call, after checking that it reaches ``demo``: the module its
    ``measure`` lives in binds it under its own name. A demo bound under another name (``chain_demo
    = Demo("chain", …)``) is refused at load, in one line, instead of a slide test failing later."""
    import sys

    module = sys.modules.get(demo.module)
    if module is None or getattr(module, demo.name, None) is not demo:
        raise ValueError(f"demo {demo.key}: its live cell calls {demo.topic}.{demo.name}(), so {demo.module} must "
                         f"bind it under its own name: {demo.name} = Demo({demo.name!r}, …)")
    return demo.key


def preload() -> float:
    """What a presenter's kernel does as it starts (``make present`` points PYTHONSTARTUP at
    ``_kernel_startup.py``): import every topic and the frameworks, and start the profiler, XLA,
    matplotlib's text and torch.compile once, so the first Shift+Enter on a live slide pays for none
    of it (10–15 s on a 2-core CPU, while the presenter is still on the title slide). It fills only
    ``sys.modules``: no name reaches the notebook, so a live cell still imports what it calls.
    Each step is best effort: a missing framework is a demo's one-line message later, never a
    kernel that fails to start. Returns the seconds it took."""
    import time

    t0 = time.perf_counter()

    def torch_profiler() -> None:
        from demos.engine.hardware import torch_or_none
        from demos.introspection.profiling import quiet_native_stderr

        torch = torch_or_none()
        if torch is not None:
            with quiet_native_stderr(), torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
                torch.ones(8).sin()

    def inductor() -> None:
        # the first torch.compile in a process pays ~7 s of one-time set-up (Dynamo, Inductor,
        # the code cache) even when every kernel is cached; pay it here, on a tiny function
        from demos.engine.devices import cxx_problem, torch_device
        from demos.engine.hardware import torch_or_none

        torch = torch_or_none()
        if torch is not None and not (torch_device() == "cpu" and cxx_problem()):
            torch.compile(_tiny)(torch.ones(8, device=torch_device()))

    def xla() -> None:
        from demos.engine.devices import jax_or_none

        jax = jax_or_none()
        if jax is not None:
            jax.jit(lambda a: a + 1)(jax.numpy.ones(4)).block_until_ready()

    def text() -> None:
        from demos.engine.devices import machine_info
        from demos.engine.plots import figure, to_png

        machine_info()
        fig, ax = figure(size=(2, 1))
        ax.set_title("µs · ×")
        to_png(fig)

    def widgets() -> None:
        import ipywidgets  # noqa: F401

    for step in (load, torch_profiler, inductor, xla, text, widgets):
        try:
            step()
        except Exception:  # noqa: BLE001 - best effort, see above
            pass
    return time.perf_counter() - t0


def _tiny(t):
    """What :func:`preload` compiles (module level, so its compiled code is cached by `make warm`)."""
    return (t.sin() + 1).relu()
