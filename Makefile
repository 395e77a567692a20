# The README's two commands:  `make notebooks`  and  `make test`.  Both install what they need first.
# On a GPU machine use `make install EXTRA=gpu` (vLLM for CUDA) before running anything.

SHELL  := /bin/bash
PYTHON ?= python3
VENV   ?= .venv
EXTRA  ?= cpu
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(EXTRA)
OUT    ?= build/notebooks
PYTEST_ARGS ?=
# Test files run on this many processes at once (pytest-xdist, whole files per process); 0 runs them in this one.
TEST_WORKERS ?= 2

# vLLM's CPU build sizes its KV cache from NUMA node 0 and must never reach the HF hub here.
export VLLM_CPU_KVCACHE_SPACE ?= 1
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false

.PHONY: install notebooks test test-sdk-floor lint hygiene env clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip 2>&1 | grep -v "is ignored: it is neither" || true
	@# Not --no-compile: where PYTHONDONTWRITEBYTECODE is set (as here) every process would compile on import.
	set -o pipefail; $(BIN)/python -m pip install -q -e ".[$(EXTRA),notebooks,sagemaker,dev]" 2>&1 \
	    | { grep -v "is ignored: it is neither" || true; }
	@# PyPI's CUDA builds of these, pulled in beside vLLM's CPU torch, break `import transformers`.
	$(BIN)/python -m pip uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	@# Debian's headless Chromium for notebook 07's browser test (never `playwright install`).
	command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq chromium >/dev/null; } || echo "chromium not installed (needs root): browser test skipped"
	touch $(STAMP)

notebooks: install
	$(BIN)/peagle-nb run-notebooks --smoke --out $(OUT)

# --durations: every CI log lists its slowest tests, where the time budget goes. Files are queued heaviest first
# (tests/conftest.py), so xdist must not reorder them by test count.
test: install
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=40 $(PYTEST_ARGS)

# The SageMaker tests again, against the oldest SDK the `sagemaker` extra admits, in a venv of its own (no vLLM).
test-sdk-floor: install
	$(BIN)/python tests/sagemaker/sdk_floor.py --stack $(VENV) $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .

hygiene: install
	$(BIN)/python -m pytest tests/test_notebook_hygiene.py

env: install
	$(BIN)/peagle-nb env

clean:
	rm -rf $(VENV) build
