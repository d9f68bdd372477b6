"""The lecture's topics, one module per part, each holding only its lesson: what each live
demo measures and how its figure draws it. Each module declares its demos with
:class:`demos.deck.demo.Demo`; :func:`load` imports them all and returns every declaration, so
nothing else lists demos by hand."""
from __future__ import annotations


def load():
    """Import every topic module; return every declared demo in part order."""
    import importlib
    import pkgutil

    from demos.deck.demo import registered

    for mod in pkgutil.iter_modules(__path__):
        if not mod.name.startswith("_"):
            importlib.import_module(f"{__name__}.{mod.name}")
    return registered(__name__ + ".")
