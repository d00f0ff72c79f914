# torchscope — `make demo` and `make test` set everything up on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
VENV_PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup demo test test-python bench lint clean

# torch first, pinned: the package's unpinned torch would resolve to the newest build. Which
# build pip takes is pip's configuration (the CPU wheel where pip is set to find it, as on the
# machines this is built on); elsewhere PyPI's Linux torch is the multi-GB CUDA build, and
# TORCH_PIP_ARGS='--index-url https://download.pytorch.org/whl/cpu' takes the CPU one.
TORCH_PIP_ARGS ?=
$(STAMP): pyproject.toml
	test -x $(VENV_PY) || $(PYTHON) -m venv $(VENV)
	$(VENV_PY) -m pip install -q --upgrade pip
	$(VENV_PY) -c "import torch" 2>/dev/null || $(VENV_PY) -m pip install -q $(TORCH_PIP_ARGS) torch==2.13.0
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
	$(VENV)/bin/ruff format --check -q python_helper tests bench scripts setup.py
	$(VENV)/bin/pyright

clean:
	rm -rf out build dist python_helper/*.egg-info
