# Two entry points (see README): `make bench` and `make test`. Both create .venv if absent.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# the CPU build of torch lies on these machines; a bare `torch` requirement pulls a CUDA build
TORCH  ?= torch==2.13.0
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: bench test lint install install-dev nightly clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/pip install "$(TORCH)"
	$(BIN)/pip install -e .
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed pyproject.toml
	$(BIN)/pip install -e ".[dev]"
	touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

bench: $(VENV)/.installed
	$(BIN)/harness run

test: $(VENV)/.installed-dev
	$(BIN)/ruff check harness retrievers tests benchmarks examples
	$(BIN)/python -m pytest

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check harness retrievers tests benchmarks examples

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
