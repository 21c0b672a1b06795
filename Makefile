# Two entry points (see README): `make bench` and `make test`. Both create .venv if absent.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# a bare `torch` requirement pulls the CUDA build (several GB) on Linux x86: the CPU build comes from
# TORCH_INDEX first (README, "The truth about torch"); the default index only where that fails, said so
TORCH  ?= torch==2.13.0
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: bench test test-core lint install install-dev nightly clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip

# torch's CPU build first (pip then keeps it), then the core with the extras the demo comparison uses:
# dense (with chunking, for configs/demo-chunked.yaml) and rerank; `pip install .` alone is the light
# core (docs/install.md). Where the CPU index cannot be reached, the default index, and a line saying so.
$(VENV)/.installed: $(BIN)/python pyproject.toml
	@echo "== $(TORCH) from torch's CPU index ($(TORCH_INDEX))"
	@$(BIN)/pip install --index-url "$(TORCH_INDEX)" --retries 1 --timeout 30 "$(TORCH)" || { \
	  echo "make: torch's CPU index ($(TORCH_INDEX)) could not be reached or has no $(TORCH):" \
	    "installing it from the default index instead, which on Linux x86 is the CUDA build (several GB;" \
	    "docs/install.md; make TORCH_INDEX=URL picks another CPU index)" >&2; \
	  $(BIN)/pip install "$(TORCH)"; }
	$(BIN)/pip install -e ".[dense,rerank]"
	touch $@

# every extra and the test tools: the whole suite runs every part
$(VENV)/.installed-dev: $(VENV)/.installed pyproject.toml
	$(BIN)/pip install -e ".[dev]"
	touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

# the core install alone, in a fresh venv of its own: the tests marked `core` (CI runs it after `make test`)
test-core:
	PYTHON="$(PYTHON)" .ci/core_tests.sh

# the chunking comparison first, the demo comparison after it, and last the screen a newcomer came for:
# the demo's table, its power sentences and the path of its report.html (`harness report --brief`)
bench: BENCH_OUT := results/$(shell date +%Y%m%d-%H%M%S)-demo
bench: $(VENV)/.installed
	@echo "== the same retrievers over two chunkings of the demo (rows retriever[chunking]; docs/chunking.md)"
	$(BIN)/harness run --config configs/demo-chunked.yaml --out results/demo-chunked-$$(date +%Y%m%d-%H%M%S)
	@echo "== the demo comparison (bare \`harness run\`)"
	$(BIN)/harness run --out $(BENCH_OUT)
	@echo "== the demo comparison in brief (all of it above and in $(BENCH_OUT))"
	@$(BIN)/harness report $(BENCH_OUT) --brief

test: $(VENV)/.installed-dev
	$(BIN)/ruff check harness retrievers tests benchmarks examples
	$(BIN)/lint-imports
	@# no test asserts a wall-clock figure (benchmarks/ measure those), so one run on every core
	$(BIN)/python -m pytest -n auto

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check harness retrievers tests benchmarks examples
	$(BIN)/lint-imports

# run the nightly config, then check it against the committed baseline (docs/nightly.md); a failed
# retriever does not stop the run step: `harness check` reports it and exits 1.
# Exit status: 0 ok, 1 a regression, 2 bad input. GNU make turns any failed recipe into its own 2, so
# `make nightly` runs in make's question mode (-q), where make exits 1 when a '+' recipe line fails
# with 1 and 2 when it fails otherwise: a CI job can tell a regression from a broken setup.
ifeq ($(MAKECMDGOALS),nightly)
MAKEFLAGS += -q
endif
nightly: NIGHTLY_CONFIG ?= configs/nightly.yaml
nightly: NIGHTLY_BASELINE ?= results/baselines/demo/nightly.json
nightly: NIGHTLY_OUT ?= results/nightly
nightly: NIGHTLY_HISTORY ?=
nightly:
	+@env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL $(MAKE) --no-print-directory install PYTHON="$(PYTHON)" VENV="$(VENV)" TORCH="$(TORCH)" TORCH_INDEX="$(TORCH_INDEX)" || exit 2
	+@# a crashed run must not leave last night's results to be checked: clear the old results folder
	+@if [ -f $(NIGHTLY_OUT)/results.json ]; then rm -rf $(NIGHTLY_OUT); fi
	+@$(BIN)/harness run --config $(NIGHTLY_CONFIG) --out $(NIGHTLY_OUT) --no-progress || true
	+@$(BIN)/harness check --baseline $(NIGHTLY_BASELINE) --current $(NIGHTLY_OUT) \
	  $(if $(wildcard $(NIGHTLY_BASELINE:.json=.tolerances.yaml)),--tolerances $(NIGHTLY_BASELINE:.json=.tolerances.yaml)) \
	  --summary $(NIGHTLY_OUT)/check.md --junit $(NIGHTLY_OUT)/check.xml \
	  $(if $(NIGHTLY_HISTORY),--history $(NIGHTLY_HISTORY))

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
