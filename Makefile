# Two commands do everything on a fresh machine with Python 3.11 and pip:
#   make demo   - set up .venv if needed, then run the demo
#   make test   - set up .venv if needed, then lint, type-check and run the whole test suite
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: demo test lint typecheck pytest bench clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# constraints.txt pins torch==2.13.0 (CPU wheel); a bare torch pulls a multi-GB CUDA build
	$(PY) -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m shared_core.demo

test: $(STAMP) lint typecheck pytest

lint: $(STAMP)
	$(VENV)/bin/ruff check shared_core hindsight_langchain hindsight_llamaindex tests benchmarks
	$(VENV)/bin/ruff format --check shared_core hindsight_langchain hindsight_llamaindex tests benchmarks

typecheck: $(STAMP)
	$(VENV)/bin/mypy

pytest: $(STAMP)
	$(PY) -m pytest

bench: $(STAMP)
	$(PY) benchmarks/run_all.py --quick

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
