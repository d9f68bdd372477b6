# The lecture deck on JIT compilation. Every target sets up .venv on first use.
SHELL := /bin/bash
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PYTEST_ARGS ?=
# the test files run on two pytest-xdist workers (tests/conftest.py keeps each file, and the files that
# share the executed parts, on one worker); TEST_WORKERS=0 runs them in one process
TEST_WORKERS ?= 2

.PHONY: help setup plan present test test-fast test-unit pdf html warm check check-matrix walk record bench info clean clean-slides lint-slides

help:
	@echo "make present   open the deck as a slideshow (JupyterLab + RISE on 127.0.0.1)"
	@echo "make plan      what make installs on this machine (CUDA, CPU-only or default wheels) and why; installs nothing"
	@echo "make test      run the tests (installs everything on first use)"
	@echo "make test-fast unit tests and count claims: no notebooks, browser or timing claims (under 5 minutes)"
	@echo "make test-unit the unit tier: one process, no measurement beyond a count, no notebook or browser (about 30 s)"
	@echo "make pdf       export every part to build/pdf/ (RESULTS=assets/results/<file>.json to draw a recorded run)"
	@echo "make html      offline reveal.js slides in build/html/"
	@echo "make warm      pre-compile every demo into .cache/ so no live cell stalls on a compile"
	@echo "make check     pre-lecture check: every demo's claims on this device, timings, environment (after make warm)"
	@echo "make check-matrix  make check as each kind of machine (native, avx2, one-thread, busy, no-simd): one table"
	@echo "make walk      the slideshow in headless chromium: seconds from Shift+Enter to figure on every live slide (after make warm)"
	@echo "make bench     python -m demos bench --quick"
	@echo "make record    python -m demos record (on a GPU machine: the reference run)"
	@echo "make info      what this machine has and which backends work"
	@echo "make clean-slides  store every slide notebook clean (no outputs); lint-slides: check docs/authoring.md rules"

setup: $(STAMP)

# the machine's torch and JAX builds first (make plan says which, and why), then the pins
$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m demos.engine.setup_plan --install
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

plan:
	@$(PYTHON) -m demos.engine.setup_plan

# Presenting and exporting (demos/deck/present.py, demos/deck/export.py).
PART    ?= 1
PORT    ?= 8888
RESULTS ?=
EXPORT_ARGS = $(if $(RESULTS),--results $(RESULTS),) $(if $(PARTS),--parts $(PARTS),) $(if $(PLACEHOLDERS),--placeholders,)
NPM_STAMP := node_modules/.package-lock.json

present: $(STAMP)
	$(PY) -m demos.deck.present --part $(PART) --port $(PORT)

warm: $(STAMP)
	$(PY) -m demos warm
	$(PY) -m demos.deck.present --mark-warm

$(NPM_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --ignore-scripts --silent

html: $(STAMP) $(NPM_STAMP)
	$(PY) -m demos export html $(EXPORT_ARGS)

pdf: $(STAMP) $(NPM_STAMP)
	$(PY) -m demos export pdf $(EXPORT_ARGS)

test: $(STAMP)
	$(PY) -m pytest -n $(TEST_WORKERS) --durations=25 $(PYTEST_ARGS)

# the unit tier: files whose tests compile little and measure nothing but counts (about 30 s, one process)
UNIT_TESTS := tests/test_peaks.py tests/test_graphs.py tests/test_firstcall.py tests/test_export.py tests/test_dynamo.py \
	tests/test_regimes.py tests/test_codegen.py tests/test_quotes.py tests/test_reuse.py tests/test_guide.py \
	tests/test_turns.py tests/test_results.py tests/test_check.py tests/test_deck.py tests/test_inputs.py tests/test_spoilers.py \
	tests/test_workloads.py tests/test_structure.py tests/test_precision.py tests/test_setup_plan.py tests/test_trace.py

test-unit: $(STAMP)
	$(PY) -m pytest -p no:xdist -m "not slow and not browser and not timing" $(PYTEST_ARGS) $(UNIT_TESTS)

test-fast: $(STAMP)
	$(PY) -m pytest -n $(TEST_WORKERS) -m "not slow and not browser and not timing" $(PYTEST_ARGS)

check: $(STAMP)
	$(PY) -m demos check

# every claim by kind of machine, each in a fresh process with its own caches (a benchmark: minutes a kind)
KINDS ?= native,avx2,one-thread,busy,no-simd
check-matrix: $(STAMP)
	$(PY) -m demos check-matrix --kinds $(KINDS)

walk: $(STAMP)
	$(PY) -m demos walk $(if $(PARTS),--parts $(PARTS),)

info: $(STAMP)
	$(PY) -m demos info --check

bench: $(STAMP)
	$(PY) -m demos bench --quick

record: $(STAMP)
	$(PY) -m demos record

clean-slides: $(STAMP)
	$(PY) -m demos.deck.nbtools clean

lint-slides: $(STAMP)
	$(PY) -m demos.deck.nbtools lint
	$(PY) -m demos spoilers

clean:
	rm -rf build .pytest_cache
