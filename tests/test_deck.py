"""What every part of the deck must be (docs/authoring.md), checked on the stored notebooks."""
from __future__ import annotations

import copy
import json
import re

import nbformat
import pytest

from demos.deck import nbtools

PARTS = nbtools.parts()
NAMES = [p.name for p in PARTS]


def test_the_deck_has_its_seven_parts_in_order():
    assert [n[:2] for n in NAMES] == ["01", "02", "03", "04", "05", "06", "07"], NAMES



@pytest.mark.parametrize("path", PARTS, ids=NAMES)
def test_stored_clean(path):
    """The notebook is the slides' one source: stored exactly as nbtools.clean leaves it (no
    outputs, no session metadata), so a save from JupyterLab changes only what was edited."""
    raw = json.loads(path.read_text())
    for cell in raw["cells"]:
        if cell["cell_type"] == "code":
            assert cell.get("outputs") == [] and cell.get("execution_count") is None, cell["source"]
    nb = nbformat.read(str(path), as_version=4)
    assert nbformat.writes(nbformat.from_dict(nbtools.clean(nb))) + "\n" == path.read_text(), \
        f"{path.name} is not stored clean: run `make clean-slides`"


@pytest.mark.parametrize("path", PARTS, ids=NAMES)
def test_part_follows_the_deck_rules(path):
    nb = nbformat.read(str(path), as_version=4)
    assert nbtools.problems(nb, path.name) == []
    live = sum(1 for g in nbtools.slide_groups(nb) if any(c.cell_type == "code" for c in g))
    assert live >= 3, "each part has live cells"
    n = nbtools.slide_count(nb)
    assert 10 <= n <= 18, f"{n} slides"


def test_every_live_cell_calls_a_declared_demo_and_every_demo_is_on_a_slide():
    from demos import topics

    declared = {d.key for d in topics.load()}
    called = set()
    for path in PARTS:
        for c in nbformat.read(str(path), as_version=4).cells:
            if c.cell_type == "code":
                call = c.source.strip().splitlines()[-1]
                called.add(call.split("(")[0])
    missing = {c for c in called if c not in declared and not c.endswith(".verdict")}
    assert not missing, f"live cells call undeclared demos: {sorted(missing)}"
    assert declared - called == set(), f"declared demos no slide shows: {sorted(declared - called)}"


@pytest.mark.parametrize("path", PARTS, ids=NAMES)
def test_rise_finds_the_css_it_asks_for(path):
    """jupyterlab_rise requests rise.css and <notebook>.css from the notebook's folder: both
    exist, so the slideshow's console shows no 404 of ours."""
    assert (path.parent / "rise.css").exists() and path.with_suffix(".css").exists()


def test_the_lint_names_what_is_wrong():
    nb = nbformat.read(str(PARTS[0]), as_version=4)
    code = next(c for c in nb.cells if c.cell_type == "code")
    code.source = "import demos.topics.eager as e\ne.timeline()\nprint(1)"
    code.outputs = [nbformat.v4.new_output("stream", text="x")]
    nb.metadata.rise["width"] = 1024
    found = "\n".join(nbtools.problems(nb))
    assert "stored with outputs" in found and "a live cell is" in found and "RISE settings" in found


@pytest.mark.parametrize("path", PARTS[:-1], ids=NAMES[:-1])
def test_each_part_links_to_the_next(path):
    nxt = PARTS[PARTS.index(path) + 1].name
    nb = nbformat.read(str(path), as_version=4)
    last_md = "\n".join(c.source for c in nb.cells[-3:] if c.cell_type == "markdown")
    assert re.search(r"\]\(\.?/?" + re.escape(nxt) + r"\)", last_md), f"last slides of {path.name} link to {nxt}"


def test_seed_figures_are_cited():
    text = "\n".join(c.source for p in PARTS for c in nbformat.read(str(p), as_version=4).cells)
    for fig in ("731", "144", "549", "81.9", "183", "214", "22.5", "14.4"):
        assert fig in text, f"seed figure {fig} not cited anywhere in the deck"


def test_ui_bench_report_names_slow_controls_and_exempts_cold_compiles():
    from demos.deck.uibench import report

    rows = [{"demo": "a.fast", "control": "N", "median_s": 0.2, "run_button": False, "cold": False},
            {"demo": "a.slow", "control": "N", "median_s": 0.7, "run_button": False, "cold": False},
            {"demo": "a.sweep", "control": "n", "median_s": 4.0, "run_button": True, "cold": False},
            {"demo": "a.cold", "control": "w", "median_s": 40.0, "run_button": True, "cold": True}]
    text = report(rows)
    assert "over target (0.5 s a move, 5 s a Run): a.slow:N" in text
    assert "a.sweep" not in text.split("over target")[1].split("\n")[0] and "exempt" in text and "a.cold" in text
    assert "4 controls over 4 demos" in text


def test_the_authoring_rules_name_only_checks_and_code_that_exist():
    """docs/authoring.md explains each rule by the check that enforces it: every test, module,
    setting and make target it names exists, so the page cannot drift from what is enforced."""
    from pathlib import Path

    from demos.deck import nbtools as nt

    root = Path(nt.PROJECT_ROOT)
    text = (root / "docs" / "authoring.md").read_text()
    tests_src = "\n".join(p.read_text() for p in (root / "tests").glob("test_*.py"))
    named_tests = set(re.findall(r"`(test_\w+)`", text))
    assert named_tests, "the page names the tests that enforce its rules"
    for t in named_tests:
        assert f"def {t}(" in tests_src, f"docs/authoring.md names {t}, which no test defines"
    for path in re.findall(r"`((?:tests|demos|slides|assets)/[\w/.]+\.(?:py|css))`", text):
        if "NN_" not in path and "<" not in path:  # a pattern, not a file
            assert (root / path).exists(), f"docs/authoring.md names {path}, which does not exist"
    makefile = (root / "Makefile").read_text()
    for target in set(re.findall(r"`make ([\w-]+)", text)):
        assert re.search(rf"^{target}:", makefile, re.M), f"docs/authoring.md names make {target}"
    for key in ("width", "height", "theme", "autolaunch"):
        assert key in nt.RISE_SETTINGS
    assert "the window's size" in text and (nt.RISE_SETTINGS["width"], nt.RISE_SETTINGS["height"]) == ("100%", "100%")



# -- README.md and docs/*.md cite only what exists -------------------------------------------

_GENERATED = ("build", "test-artifacts", ".cache", "node_modules", ".venv")  # made by commands, never committed


def _cited_docs() -> list:
    from pathlib import Path

    root = Path(nbtools.PROJECT_ROOT)
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def _missing_citations(doc) -> tuple[list[str], int]:
    """What ``doc`` cites that does not exist, and how many citations were checked. Read from
    backticked spans, fenced code blocks and relative links:

    - test names (`test_x`): a ``def test_x(`` in tests/;
    - repository paths (`tests/...`, `demos/...`, `assets/...`, `docs/...`, `.ci/run`, ...):
      exist (a glob matches something); a path under a folder commands write (build/,
      test-artifacts/, .cache/) names only what the code writes there;
    - make targets (`make x`, and ``make x`` in code blocks): a rule in the Makefile;
    - ``python -m demos x|y``: a subcommand of demos/cli.py; ``python -m demos.a.b``: a module;
    - dotted names (`demos.a.b.name`, `module.name` for a module of demos/, `Class.name` for a
      class of demos/): the module exists and defines the name;
    - relative Markdown links: the file exists.
    """
    from pathlib import Path

    root = Path(nbtools.PROJECT_ROOT)
    text = doc.read_text()
    name = doc.relative_to(root).as_posix() if doc.is_relative_to(root) else doc.name
    fenced = "\n".join(re.findall(r"^```[^\n]*\n(.*?)^```", text, re.M | re.S))
    spans = [" ".join(span.split()) for span in  # a span may wrap onto the next line
             re.findall(r"`([^`]+)`", re.sub(r"^```[^\n]*\n.*?^```", "", text, flags=re.M | re.S))]
    tops = {p.name for p in root.iterdir() if p.name != ".git"}
    sources = {p: p.read_text() for p in (root / "demos").rglob("*.py")}
    code = "\n".join([*sources.values(),  # what the package, the tests (not this file's) and make write
                      *(p.read_text() for p in (root / "tests").glob("*.py") if p.name != "test_deck.py"),
                      (root / "Makefile").read_text(), (root / ".ci" / "run").read_text()])
    tests_src = "\n".join(p.read_text() for p in (root / "tests").glob("test_*.py"))
    modules = {p.stem: p for p in sources if p.stem != "__init__"}
    classes = {c: p for p, src in sources.items() for c in re.findall(r"^class (\w+)", src, re.M)}
    missing, checked = [], 0

    def defines(path, attr: str) -> bool:
        src = sources.get(path) or path.read_text()
        return bool(re.search(rf"^\s*(?:def|class)\s+{attr}\b|^\s*{attr}\s*(?::[^=\n]*)?=[^=]", src, re.M))

    for t in set(re.findall(r"`(test_\w+)`", text)):
        checked += 1
        if f"def {t}(" not in tests_src:
            missing.append(f"{name} names {t}, which no test defines")

    for span in spans:
        token = span.strip()
        if " " in token or "<" in token or "…" in token or "NN_" in token or token.startswith("/"):
            continue
        top = token.split("/")[0]
        if "/" in token and top in _GENERATED:
            checked += 1
            for part in [p for p in token.split("/")[1:] if p]:
                if part not in code:
                    missing.append(f"{name} names {token}, but no code writes {part!r}")
        elif "/" in token and top in tops:
            checked += 1
            if not (("*" in token and list(root.glob(token))) or (root / token).exists()):
                missing.append(f"{name} names {token}, which does not exist")
        elif m := re.fullmatch(r"demos((?:\.\w+)+?)(?:\.(\w+))?(\(.*\))?", token):
            checked += 1
            dotted = ("demos" + m.group(1)).split(".")
            base = root.joinpath(*dotted)
            path = base.with_suffix(".py") if base.with_suffix(".py").exists() else base / "__init__.py"
            if not path.exists():
                missing.append(f"{name} names {token}, but {'.'.join(dotted)} is no module")
            elif m.group(2) and not (root.joinpath(*dotted, m.group(2)).with_suffix(".py").exists()
                                     or (root.joinpath(*dotted, m.group(2)) / "__init__.py").exists()
                                     or defines(path, m.group(2))):
                missing.append(f"{name} names {token}, which {'.'.join(dotted)} does not define")
        elif m := re.fullmatch(r"(\w+)\.(\w+)(\(.*\))?", token):
            owner, attr = m.group(1), m.group(2)
            if owner in modules or owner in classes:
                checked += 1
                if not defines(modules.get(owner) or classes[owner], attr):
                    missing.append(f"{name} names {token}, which {owner} does not define")

    makefile = (root / "Makefile").read_text()
    targets = set(re.findall(r"\bmake ([\w-]+)", fenced))
    for span in spans:
        targets |= set(re.findall(r"(?:^|&&|;|\|)\s*make ([\w-]+)", span))
    for target in targets:
        checked += 1
        if not re.search(rf"^{re.escape(target)}:", makefile, re.M):
            missing.append(f"{name} names make {target}, which the Makefile has no rule for")

    commands = set(re.findall(r'add_parser\("([\w-]+)"', sources[root / "demos" / "cli.py"]))
    for found in re.findall(r"python -m demos ([\w|-]+)", "\n".join([fenced, *spans])):
        for cmd in found.split("|"):
            checked += 1
            if cmd not in commands:
                missing.append(f"{name} names python -m demos {cmd}, which demos/cli.py does not have")
    for module in re.findall(r"python -m (demos\.[\w.]+)", "\n".join([fenced, *spans])):
        checked += 1
        if not root.joinpath(*module.split(".")).with_suffix(".py").exists():
            missing.append(f"{name} names python -m {module}, which is no module")

    for link in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:|#", link):
            continue
        checked += 1
        if not (doc.parent / link.split("#")[0]).exists():
            missing.append(f"{name} links to {link}, which does not exist")
    return missing, checked


@pytest.mark.parametrize("doc", _cited_docs(), ids=lambda p: p.name)
def test_the_readme_and_docs_name_only_tests_paths_targets_and_code_that_exist(doc):
    """README.md and every page in docs/ cite tests, files, make targets, commands and code by
    name: each one exists, so the documentation cannot drift from the repository."""
    missing, checked = _missing_citations(doc)
    assert checked >= 5, f"{doc.name}: only {checked} citations found; does the check still read this page?"
    assert not missing, "\n".join(missing)


def test_the_citation_check_catches_what_does_not_exist(tmp_path):
    """The check above is not vacuous: a page naming a missing test, file, target, command,
    generated file, definition or link fails on each."""
    page = tmp_path / "page.md"
    page.write_text("`test_no_such_test` `tests/test_no_such_file.py` `make no-such-target`\n"
                    "`python -m demos no-such-command` `build/walk/no-such-report.md`\n"
                    "`demos.engine.plots.no_such_name` `plots.no_such_name` [x](no-such-page.md)\n"
                    "```bash\nmake also-no-such-target\n```\n")
    missing, _ = _missing_citations(page)
    for bad in ("test_no_such_test", "tests/test_no_such_file.py", "make no-such-target",
                "make also-no-such-target", "no-such-command", "no-such-report.md",
                "demos.engine.plots.no_such_name", "plots.no_such_name", "no-such-page.md"):
        assert any(bad in m for m in missing), (bad, missing)

def test_ui_bench_times_measuring_and_drawing_apart():
    """A move's seconds split into measuring and drawing + encoding (the targets differ)."""
    from demos.deck.uibench import bench_panel, report
    from demos.topics import fusion

    panel = fusion.memory.open_panel()
    rows = bench_panel(panel, repeats=2)
    assert rows and all(r["measure_s"] is not None and r["draw_s"] is not None for r in rows), rows
    for r in rows:
        assert 0 < r["draw_s"] and 0 <= r["measure_s"]
        assert r["measure_s"] <= r["max_s"] and r["draw_s"] <= r["max_s"], r  # each a part of a redraw
        assert 0 <= r["layouts"] <= r["n"], r
    # every redraw after the first drew into the panel's one reused figure
    assert len(panel.slot.figures) == 1 and panel.slot.reused == 4 * len(rows) - 1, panel.slot.reused
    rows = [{**r, "demo": "fusion.memory", "first_s": 0.1, "run_button": False, "cold": False} for r in rows]
    assert "drawing + encoding: median" in report(rows)
    slow = [{**rows[0], "draw_s": 0.2, "draw_max_s": 0.2, "view": True, "median_s": 0.3}]
    text = report(slow)
    assert "drawing over 0.1 s: fusion.memory" in text and "view-only controls over 0.15 s: fusion.memory" in text


# ---------------------------------------------------------------------------------------
# No test or tool names on slides: the audience sees the lesson, not the harness
# ---------------------------------------------------------------------------------------
def _make_targets() -> set[str]:
    from pathlib import Path

    makefile = (Path(nbtools.PROJECT_ROOT) / "Makefile").read_text()
    return set(re.findall(r"^([A-Za-z0-9][\w-]*)\s*:(?!=)", makefile, re.M))


_HARNESS = [
    ("a test file", re.compile(r"\btests?/[\w./-]+|\b(?:test_\w+|\w+_test)\.py\b")),
    ("a test function", re.compile(r"\btest_\w+")),
    ("'(tested)'", re.compile(r"\(tested\)", re.I)),
    ("pytest", re.compile(r"\bpytest\b")),
]


def harness_words(text: str, targets: set[str]) -> list[str]:
    """What a slide's text names of the test harness: a test file, a `test_` function,
    "(tested)", pytest, or `make X` where X is a target of the Makefile ("make the branch
    data" is prose: "the" is no target)."""
    found = [f"{what}: {m.group(0)!r}" for what, rx in _HARNESS for m in rx.finditer(text)]
    found += [f"a make target: {m.group(0)!r}" for m in re.finditer(r"\bmake\s+([A-Za-z0-9][\w-]*)", text)
              if m.group(1) in targets]
    return found


def _slide_text_cells(nb):
    """Markdown cells the audience sees: every markdown cell but speaker notes."""
    return [(i, c) for i, c in enumerate(nb.cells) if c.cell_type == "markdown"
            and c.get("metadata", {}).get("slideshow", {}).get("slide_type") != "notes"]


@pytest.mark.parametrize("path", PARTS, ids=NAMES)
def test_no_test_or_tool_names_on_slides(path):
    """Slides teach compilers, not this repository's harness: a test file, a `test_`
    function, "(tested)", pytest or a make target belong in the speaker notes."""
    nb = nbformat.read(str(path), as_version=4)
    targets = _make_targets()
    found = [(i, w) for i, c in _slide_text_cells(nb) for w in harness_words(c.source, targets)]
    assert not found, f"{path.name}: harness names on a slide (move them to the notes): {found}"


def test_the_harness_check_catches_a_planted_slide_and_spares_notes_and_prose():
    targets = _make_targets()
    assert {"record", "test", "warm", "check"} <= targets, sorted(targets)
    planted = {
        "- peaks agree within ±10 % (tested)": "(tested)",
        "<small>tests/test_model.py checks it</small>": "tests/test_model.py",
        "- `test_seed_figures_are_cited` guards the seed's numbers": "test_seed_figures_are_cited",
        "- `make record` stores the peaks": "make record",
        "- run make warm the day before": "make warm",
        "- run `pytest -m gpu` on the GPU": "pytest",
    }
    for line, word in planted.items():
        hits = harness_words(line, targets)
        assert hits and any(word in h for h in hits), (line, hits)
    for prose in ("## Fixing the break: make the branch data", "- latest_value, contest_id, attested",
                  "- make it fast: fuse, then measure", "- a test of patience"):
        assert harness_words(prose, targets) == [], prose

    nb = nbformat.read(str(PARTS[2]), as_version=4)
    slide = nbformat.v4.new_markdown_cell("- fp32 peaks agree (tested); `make record` stores them")
    slide.metadata = {"slideshow": {"slide_type": "-"}}
    notes = nbformat.v4.new_markdown_cell("`make record` stores the peaks (tests/test_roofline.py)")
    notes.metadata = {"slideshow": {"slide_type": "notes"}}
    nb.cells[1:1] = [slide, notes]
    seen = [w for i, c in _slide_text_cells(nb) for w in harness_words(c.source, targets) if i in (1, 2)]
    assert len(seen) == 2 and "(tested)" in seen[0] and "make record" in seen[1], seen


# -- the glossary -----------------------------------------------------------------------------
def _deck():
    return [(p.name, nbformat.read(str(p), as_version=4)) for p in PARTS]


def test_every_term_is_defined_on_the_first_slide_that_uses_it():
    """No glossary up front: the first slide (or its notes) that uses a term of
    demos.deck.glossary.TERMS writes it in bold with its meaning, and every term is used."""
    from demos.deck import glossary

    assert glossary.problems(_deck()) == []
    assert len(glossary.TERMS) >= 18
    first = glossary.first_uses(_deck())
    assert set(first) == set(glossary.TERMS)
    assert len({(p, n) for p, n, _h, _t in first.values()}) >= 8  # spread over the deck, not one slide


def test_the_glossary_check_catches_a_term_used_before_its_definition_and_a_term_never_used():
    from demos.deck import glossary

    deck = copy.deepcopy(_deck())
    first = deck[0][1]
    # part 1's second slide talks of Inductor, which part 2 defines: named, with its slide
    first.cells[2].source += "\n- Inductor will fuse this later"
    found = glossary.problems(deck)
    assert any("uses 'Inductor' first but does not define it" in f and "slide 3" in f for f in found), found
    # a slide that defines the term in bold may use it first
    first.cells[2].source += " (**Inductor**: torch.compile's code generator)"
    assert not any("'Inductor'" in f for f in glossary.problems(deck))
    # a term no slide uses any more
    for _name, nb in deck:
        for c in nb.cells:
            c.source = c.source.replace("remat", "recompute")
    assert "no slide uses 'remat' (drop it from the terms, or use it)" in glossary.problems(deck)


@pytest.mark.parametrize("path", PARTS, ids=NAMES)
def test_each_part_ends_with_its_further_reading(path):
    """The last slide lists the part's primary sources: at least four, most of them linked."""
    last = nbformat.read(str(path), as_version=4).cells[-1]
    assert last.cell_type == "markdown" and last.source.startswith("## Further reading"), path.name
    items = [line for line in last.source.splitlines() if line.startswith("- ")]
    links = re.findall(r"\]\((https://[^)\s]+)\)", last.source)
    assert len(items) >= 4 and len(links) >= 3, (path.name, items)
