# Two commands for a fresh machine:  make lab   and   make test
# Both create .venv when it is missing; a second run installs nothing new.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# The CPU build of torch. Elsewhere, point pip at a CPU index first, e.g.
#   make test PIP_TORCH_ARGS="--index-url https://download.pytorch.org/whl/cpu"
TORCH_SPEC     ?= torch==2.13.0
PIP_TORCH_ARGS ?=
STAMP  := $(VENV)/.installed
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)
PYTEST_ARGS ?=
# Extra flags for JupyterLab (tests pass --no-browser and a port).
LAB_ARGS ?=

.PHONY: env lab test notebooks lint clean help

help:
	@echo "make lab        create .venv if needed, open JupyterLab (127.0.0.1, token) at lesson 00"
	@echo "make test       create .venv if needed, run every test and every notebook (strict nbval)"
	@echo "make notebooks  re-execute the lessons in place (fresh kernel each) so outputs match the code"
	@echo "make lint       ruff over src/ tests/ tools/"

env: $(STAMP)

# torch goes first so that the package's 'torch>=...' resolves against the
# CPU build already installed instead of pulling a multi-GB CUDA build.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(PIP_TORCH_ARGS) "$(TORCH_SPEC)"
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $(STAMP)

lab: $(STAMP)
	$(BIN)/jupyter lab notebooks/00_start_here.ipynb --ip=127.0.0.1 \
	    --ServerApp.root_dir="$(CURDIR)" $(ROOT_FLAG) $(LAB_ARGS)

test: $(STAMP)
	$(BIN)/ruff check src tests tools benchmarks
	$(BIN)/python -m pytest tests notebooks --nbval \
	    --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout=120 $(PYTEST_ARGS)

notebooks: $(STAMP)
	$(BIN)/python tools/execute_notebooks.py

lint: $(STAMP)
	$(BIN)/ruff check src tests tools benchmarks

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .ruff_cache
