# papervault: `make demo` and `make test` work on a fresh machine with Python 3.11+, git and make.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PAPERS ?=
SHARED ?= $(abspath ../shared)
# Use the small local embedding model when ../shared is beside the checkout (offline); otherwise
# fastembed downloads the configured model on first use.
ifneq ($(wildcard $(SHARED)/models/all-MiniLM-L6-v2-onnx/model.onnx),)
export PAPERVAULT_EMBED_MODEL_PATH ?= $(SHARED)/models/all-MiniLM-L6-v2-onnx
export PAPERVAULT_EMBED_MODEL ?= sentence-transformers/all-MiniLM-L6-v2
endif

.PHONY: demo test install install-test bench clean-demo help

help:
	@echo "make demo [PAPERS=DIR]   build a vault, index, survey and site (synthetic papers by default)"
	@echo "make test                run the whole test suite"
	@echo "make bench               run the benchmarks on ../shared/corpus"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	@touch $@

$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed
	$(BIN)/pip install -q -e '.[test]'
	@touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

demo: $(VENV)/.installed
	$(BIN)/papervault demo $(if $(PAPERS),--papers $(PAPERS))

test: $(VENV)/.installed-test
	$(BIN)/python -m pytest -q

bench: $(VENV)/.installed-test
	$(BIN)/python bench/run_all.py

clean-demo:
	rm -rf demo-workspace
