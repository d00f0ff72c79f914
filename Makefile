# torchscope — `make demo` and `make test` set everything up on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
VENV_PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup demo test test-python bench lint clean

# torch first, pinned: an unpinned torch would pull a multi-GB CUDA build.
$(STAMP): pyproject.toml
	test -x $(VENV_PY) || $(PYTHON) -m venv $(VENV)
	$(VENV_PY) -m pip install -q --upgrade pip
	$(VENV_PY) -c "import torch" 2>/dev/null || $(VENV_PY) -m pip install -q torch==2.13.0
	$(VENV_PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

-include make/*.mk

demo: setup $(DEMO_DEPS)
	$(VENV_PY) scripts/demo.py

test: test-python $(TEST_DEPS)

test-python: setup
	$(VENV_PY) -m pytest

bench: setup
	$(VENV_PY) -m pip install -q -e '.[bench]'
	$(VENV_PY) bench/run.py

lint: setup $(LINT_DEPS)
	$(VENV)/bin/ruff check python_helper tests bench scripts setup.py
	$(VENV)/bin/pyright

clean:
	rm -rf out build dist python_helper/*.egg-info
