"""The package's shape, read from its source with ``ast`` (nothing is imported):

- no import circle anywhere in ``demos/``, counting imports inside functions;
- imports run one way, down the layers: topics → deck → introspection → engine
  (``demos/__init__.py``, ``demos/cli.py`` and ``demos/__main__.py`` are the top and may import anything);
- every environment read goes through ``demos/engine/settings.py``, the one parser;
- in topics and introspection, every clock goes through the engine's timers (``Run``,
  ``demos.engine.timing``) and every torch → NumPy conversion through ``demos.engine.convert``.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Lowest first. A module may import its own layer (without a cycle) and any layer below it.
LAYERS = ("engine", "introspection", "deck", "topics")
TOP = ("demos", "demos.cli", "demos.__main__")


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(root: Path = ROOT) -> dict[str, Path]:
    return {module_name(p, root): p for p in sorted((root / "demos").rglob("*.py"))}


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """The module ``name`` is, or the package it lies in (None outside demos)."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def _base(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    """The absolute module a ``from … import`` names, relative ones resolved."""
    if not node.level:
        return node.module or ""
    package = importer.split(".") if is_package else importer.split(".")[:-1]
    if node.level > 1:
        package = package[: len(package) - (node.level - 1)]
    return ".".join(package + ([node.module] if node.module else []))


def imports_of(importer: str, path: Path, known: dict[str, Path]) -> list[tuple[str, int]]:
    """(demos module imported, line) for every import statement in the file, at module level, in
    functions, classes and branches alike. ``from demos.engine import plots`` is the module
    ``demos.engine.plots``; ``from demos.engine.plots import to_png`` is ``demos.engine.plots``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    out: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [_resolve(alias.name, known) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _base(node, importer, path.name == "__init__.py")
            targets = []
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                targets.append(sub if sub in known else _resolve(base, known))
        else:
            continue
        out += [(t, node.lineno) for t in targets if t is not None]
    return out


def import_graph(root: Path = ROOT) -> dict[str, dict[str, int]]:
    """module -> {module it imports: first line that does}."""
    known = modules(root)
    graph: dict[str, dict[str, int]] = {m: {} for m in known}
    for m, path in known.items():
        for target, line in imports_of(m, path, known):
            graph[m].setdefault(target, line)
    return graph


def strongly_connected(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                found.append(sorted(comp))
    return found


def layer(module: str) -> int:
    """The module's layer (0 = engine); the top (demos, cli, __main__) is above every layer."""
    if module in TOP:
        return len(LAYERS)
    return LAYERS.index(module.split(".")[1])


def cycles(graph: dict[str, dict[str, int]]) -> list[str]:
    """One line per import circle: its modules, and the edges inside it with their lines."""
    lines = []
    for comp in strongly_connected(graph):
        if len(comp) == 1 and comp[0] not in graph[comp[0]]:
            continue
        members = set(comp)
        edges = [f"{a} -> {b} (line {line})" for a in comp for b, line in sorted(graph[a].items()) if b in members]
        lines.append(f"cycle {' <-> '.join(comp)}: " + "; ".join(edges))
    return lines


def upward(graph: dict[str, dict[str, int]]) -> list[str]:
    return [f"{a} (line {line}) imports {b}: {LAYERS[layer(a)]} must not import {'the top' if layer(b) == len(LAYERS) else LAYERS[layer(b)]}"
            for a in sorted(graph) for b, line in sorted(graph[a].items())
            if layer(a) < len(LAYERS) and layer(b) > layer(a)]


# ------------------------------------------------------------------------------------------
def test_the_graph_sees_every_kind_of_import(tmp_path):
    """The parser itself: module-level, function-level, relative, `from pkg import module`."""
    pkg = tmp_path / "demos"
    (pkg / "engine").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "engine" / "__init__.py").write_text("")
    (pkg / "engine" / "a.py").write_text("def f():\n    from demos.engine import b\n")
    (pkg / "engine" / "b.py").write_text("from . import c\nfrom .c import thing\n")
    (pkg / "engine" / "c.py").write_text("import demos.engine.a\nfrom demos.engine import not_a_module\n")
    graph = import_graph(tmp_path)
    assert graph["demos.engine.a"] == {"demos.engine.b": 2}
    assert graph["demos.engine.b"] == {"demos.engine.c": 1}
    assert graph["demos.engine.c"] == {"demos.engine.a": 1, "demos.engine": 2}
    assert cycles(graph) == ["cycle demos.engine.a <-> demos.engine.b <-> demos.engine.c: "
                             "demos.engine.a -> demos.engine.b (line 2); demos.engine.b -> demos.engine.c (line 1); "
                             "demos.engine.c -> demos.engine.a (line 1)"]
    graph["demos.engine.a"]["demos.engine.a"] = 3
    graph["demos.engine.b"] = {}
    assert cycles(graph) == ["cycle demos.engine.a: demos.engine.a -> demos.engine.a (line 3)"]
    assert upward({"demos.engine.a": {"demos": 1}, "demos": {}}) == [
        "demos.engine.a (line 1) imports demos: engine must not import the top"]


def test_no_import_cycles():
    found = cycles(import_graph())
    assert not found, "import circles in demos/ (imports inside functions count):\n" + "\n".join(found)


def test_imports_run_down_the_layers():
    graph = import_graph()
    outside = [m for m in graph if m not in TOP and (m.count(".") < 1 or m.split(".")[1] not in LAYERS)]
    assert not outside, f"modules in no layer (put them in one of {LAYERS}, or add them to TOP): {outside}"
    found = upward(graph)
    assert not found, "imports against the layer order engine → introspection → deck → topics:\n" + "\n".join(found)


# ------------------------------------------------------------------------------------------
# Every environment read goes through demos/engine/settings.py
# ------------------------------------------------------------------------------------------
SETTINGS_MODULE = "demos.engine.settings"
_WRITES = ("pop", "setdefault", "update", "clear")   # os.environ.<these>(…) as a statement: setting it
_COPIES = ("copy",)                                  # os.environ.copy(): a child's environment


def _is_environ(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr in ("environ", "environb")
            and isinstance(node.value, ast.Name) and node.value.id == "os")


def environment_reads(source: str) -> list[tuple[int, str]]:
    """(line, what) for every read of the process environment in ``source``: ``os.getenv``,
    ``os.environ.get``, ``os.environ[…]`` read, ``… in os.environ``, iterating it, ``from os import
    environ``. Not reads: setting or deleting a variable (``os.environ[k] = v``, ``del``, ``.pop``,
    ``.setdefault`` or ``.update`` as a statement) and copying it whole for a child
    (``dict(os.environ, …)``, ``os.environ.copy()``)."""
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "os":
            for alias in node.names:
                if alias.name in ("environ", "environb", "getenv", "getenvb"):
                    found.append((node.lineno, f"from os import {alias.name}"))
            continue
        if (isinstance(node, ast.Attribute) and node.attr in ("getenv", "getenvb")
                and isinstance(node.value, ast.Name) and node.value.id == "os"):
            found.append((node.lineno, f"os.{node.attr}"))
            continue
        if not _is_environ(node):
            continue
        up = parents.get(node)
        if isinstance(up, ast.Subscript) and up.value is node and isinstance(up.ctx, (ast.Store, ast.Del)):
            continue                                             # os.environ[k] = v / del os.environ[k]
        if isinstance(up, ast.Call) and node in up.args and isinstance(up.func, ast.Name) and up.func.id == "dict":
            continue                                             # dict(os.environ, …): a child's environment
        if isinstance(up, ast.Attribute) and isinstance(parents.get(up), ast.Call) and parents[up].func is up:
            call = parents[up]
            if up.attr in _COPIES or (up.attr in _WRITES and isinstance(parents.get(call), ast.Expr)):
                continue
            found.append((node.lineno, f"os.{node.attr}.{up.attr}(…)"))
            continue
        found.append((node.lineno, f"os.{node.attr}" + ("[…]" if isinstance(up, ast.Subscript) else "")))
    return sorted(found)


def test_the_environment_read_detector():
    reads = environment_reads(
        "import os\n"
        "a = os.environ.get('A')\n"            # 2
        "b = os.getenv('B', '')\n"             # 3
        "c = os.environ['C']\n"                # 4
        "d = 'D' in os.environ\n"              # 5
        "e = os.environ.pop('E', None)\n"      # 6: a pop whose value is used reads it
        "for k in os.environ: pass\n"          # 7
        "from os import environ\n"             # 8
        "os.environ['F'] = '1'\n"
        "del os.environ['F']\n"
        "os.environ.pop('G', None)\n"
        "os.environ.setdefault('H', 'x')\n"
        "env = dict(os.environ, I='1')\n"
        "env2 = os.environ.copy()\n"
        "env.get('PYTHONSTARTUP')\n")
    assert [line for line, _ in reads] == [2, 3, 4, 5, 6, 7, 8], reads


def test_every_environment_read_goes_through_settings():
    found = [f"{path.relative_to(ROOT)}:{line}: {what}"
             for name, path in modules().items() if name != SETTINGS_MODULE
             for line, what in environment_reads(path.read_text())]
    assert not found, ("environment read outside demos/engine/settings.py (declare the variable in its SETTINGS "
                       "and read it with settings.get/raw):\n" + "\n".join(found))


def test_modules_stay_readable_sizes():
    """No module of demos/ over 500 lines, and no topic lesson (a module that declares demos) over
    400: a lesson reads as its slides, its figures and helpers live beside it."""
    too_long = []
    for name, path in modules().items():
        lines = len(path.read_text().splitlines())
        lesson = name.startswith("demos.topics.") and "= Demo(" in path.read_text()
        limit = 400 if lesson else 500
        if lines > limit:
            too_long.append(f"{name}: {lines} lines (at most {limit}{' for a lesson' if lesson else ''})")
    assert not too_long, too_long


# ------------------------------------------------------------------------------------------
# One timing path: topics and introspection time through Run / demos.engine.timing and convert
# through demos.engine.convert
# ------------------------------------------------------------------------------------------
TIMED_PACKAGES = ("topics", "introspection")
_CLOCKS = ("perf_counter", "perf_counter_ns")
TIME_WITH = ("time it through Run (run.timed, run.time, run.first_call) or demos.engine.timing "
             "(first_call, measure, Stopwatch for a block)")
CONVERT_WITH = "convert with demos.engine.convert.to_numpy (to_jax for JAX)"

# The clocks that measure nothing a figure or claim shows, each with its reason (file:function).
CLOCKS_ALLOWED = {
    "demos/topics/__init__.py:preload": "the presenter's kernel start-up, printed as it starts: no figure or claim",
    "demos/topics/recompilation_panel.py:LivePanel.sweep": "paces the panel's redraws mid-sweep: a UI throttle",
    "demos/introspection/inspector.py:run_isolated": "wall time of a worker call, whose own timings the report holds",
}


def _qualnames(tree: ast.AST) -> dict[ast.AST, str]:
    """Every node -> the dotted name of the class and function definitions around it ("" at module level)."""
    names: dict[ast.AST, str] = {}

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = where
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = f"{where}.{child.name}" if where else child.name
            names[child] = inner
            visit(child, inner)

    visit(tree, "")
    return names


def _receivers(call: ast.Call) -> list[str]:
    """The methods called before ``call``'s in a chain: ``x.detach().cpu().numpy()`` -> [cpu, detach]."""
    out = []
    node = call.func.value if isinstance(call.func, ast.Attribute) else None
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        out.append(node.func.attr)
        node = node.func.value
    return out


def timing_violations(source: str) -> list[tuple[int, str, str]]:
    """(line, enclosing function, what) for every clock read by hand (``time.perf_counter``, called
    or not, ``from time import perf_counter``) and every ``….cpu()….numpy()`` chain in ``source``."""
    tree = ast.parse(source)
    where = _qualnames(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "time":
            found += [(node.lineno, where[node], f"from time import {a.name}") for a in node.names if a.name in _CLOCKS]
        elif isinstance(node, ast.Attribute) and node.attr in _CLOCKS:
            found.append((node.lineno, where[node], f"….{node.attr}"))
        elif isinstance(node, ast.Name) and node.id in _CLOCKS:
            found.append((node.lineno, where[node], node.id))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "numpy"
              and "cpu" in _receivers(node)):
            found.append((node.lineno, where[node], ".cpu().numpy()"))
    return sorted(found)


def test_the_timing_detector():
    found = timing_violations(
        "import time\n"
        "from time import perf_counter\n"                     # 2
        "def f(x):\n"
        "    t0 = time.perf_counter()\n"                      # 4
        "    clock = time.perf_counter\n"                     # 5
        "    a = x.detach().cpu().numpy()\n"                  # 6
        "    b = x.float().cpu().numpy()\n"                   # 7
        "    c = x.cpu().detach().numpy()\n"                  # 8
        "    d = x.numpy()\n"                                 # a CPU tensor's view: not a chain through .cpu()
        "    e = time.monotonic()\n"
        "    return perf_counter() - t0\n"                    # 11
        "class P:\n"
        "    def g(self):\n"
        "        return time.perf_counter_ns()\n")            # 14
    assert [(line, fn) for line, fn, _ in found] == [(2, ""), (4, "f"), (5, "f"), (6, "f"), (7, "f"), (8, "f"),
                                                     (11, "f"), (14, "P.g")], found


def test_topics_and_introspection_time_and_convert_through_the_engine():
    """A clock read by hand in a topic or an introspection module is a second timing path (no
    synchronisation, no first call apart, no p10–p90): it goes through the engine's helpers, or is
    in CLOCKS_ALLOWED with the reason it measures nothing shown. A torch tensor becomes NumPy
    through demos.engine.convert, once."""
    found, used = [], set()
    for package in TIMED_PACKAGES:
        for path in sorted((ROOT / "demos" / package).glob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            for line, fn, what in timing_violations(path.read_text()):
                if what == ".cpu().numpy()":
                    found.append(f"{rel}:{line} ({fn or 'module'}): {what} — {CONVERT_WITH}")
                elif f"{rel}:{fn}" in CLOCKS_ALLOWED:
                    used.add(f"{rel}:{fn}")
                else:
                    found.append(f"{rel}:{line} ({fn or 'module'}): {what} — {TIME_WITH}, "
                                 "or add it to CLOCKS_ALLOWED with the reason it measures nothing shown")
    assert not found, "a second timing or conversion path:\n" + "\n".join(found)
    stale = sorted(set(CLOCKS_ALLOWED) - used)
    assert not stale, f"CLOCKS_ALLOWED names functions that read no clock now (remove them): {stale}"


# Imports kept although the module never uses them, with why. Everything else a module imports
# from demos it uses itself: a caller imports a name from the module that defines it.
RE_EXPORTS_ALLOWED = {
    # the vocabulary of a demo declaration: `from demos.deck.demo import Demo, Choice, Pow2, …`
    # is how a topic declares one, so demo.py hands on the controls, Claim and asks
    "demos/deck/demo.py": {"asks", "Claim", "Choice", "Code", "Float", "Int", "Pow2", "Pow2Range"},
}


def re_exports(source: str) -> list[tuple[int, str, str]]:
    """``(line, name, module)`` for each ``from demos… import name`` (or ``import demos… as name``)
    whose name the module never uses: an import kept only so that callers can take it from here.
    A use is any reference to the name (string annotations included); ``__all__`` is not a use."""
    tree = ast.parse(source)
    used: set[str] = set()

    def names_in(node: ast.AST) -> None:
        for n in ast.walk(node):
            if isinstance(n, ast.Name):
                used.add(n.id)
            elif isinstance(n, ast.Constant) and isinstance(n.value, str) and n in annotations:
                try:
                    names_in(ast.parse(n.value, mode="eval"))
                except SyntaxError:
                    pass

    annotations = set()
    for n in ast.walk(tree):
        for ann in ([n.annotation] if isinstance(n, (ast.AnnAssign, ast.arg)) else []) + (
                [n.returns] if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) else []):
            if isinstance(ann, ast.Constant):
                annotations.add(ann)
    names_in(tree)
    found = []
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and (n.level or (n.module or "").split(".")[0] == "demos"):
            module = "." * n.level + (n.module or "")
            found += [(n.lineno, a.asname or a.name, module) for a in n.names if (a.asname or a.name) not in used]
        elif isinstance(n, ast.Import):
            found += [(n.lineno, a.asname, a.name) for a in n.names
                      if a.asname and a.name.split(".")[0] == "demos" and a.asname not in used]
    return sorted(found)


def test_no_module_re_exports_a_name_it_does_not_define():
    """A module that imports a name only to hand it on makes callers import it from a module that
    does not define it (the shims left by splitting a file): each caller imports it from where it is
    defined instead. The one vocabulary block a topic declares demos with is in RE_EXPORTS_ALLOWED."""
    assert re_exports("from demos.engine.hlo import parse_hlo, xla_code  # noqa: F401\n"
                      "from demos.engine import devices as dv\nimport demos.engine.timing as timing\n"
                      "__all__ = ['parse_hlo']\nx: 'dv.Thing' = xla_code()\n") == [
        (1, "parse_hlo", "demos.engine.hlo"), (3, "timing", "demos.engine.timing")]
    found, used = [], set()
    for path in sorted((ROOT / "demos").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        allowed = RE_EXPORTS_ALLOWED.get(rel, set())
        for line, name, module in re_exports(path.read_text()):
            if name in allowed:
                used.add((rel, name))
            else:
                found.append(f"{rel}:{line}: {name} (from {module}) is imported but never used there: "
                             f"make its callers import it from {module} and drop the import")
    assert not found, "re-exported names:\n" + "\n".join(found)
    stale = sorted((rel, n) for rel, names in RE_EXPORTS_ALLOWED.items() for n in names if (rel, n) not in used)
    assert not stale, f"RE_EXPORTS_ALLOWED names imports that are used or gone now (remove them): {stale}"
