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

.PHONY: env lab test test-pythons notebooks lint clean help

help:
	@echo "make lab        create .venv if needed, open JupyterLab (127.0.0.1, token) at lesson 00"
	@echo "make test       create .venv if needed, run every test and every notebook (strict nbval)"
	@echo "make notebooks  re-execute the lessons in place (fresh kernel each) so outputs match the code"
	@echo "make lint       ruff over src/ tests/ tools/"
	@echo "make test-pythons  make test on each of PYTHONS, one venv each under .venvs/"

env: $(STAMP)

# torch goes first so that the package's 'torch>=...' resolves against the
# build already installed instead of pulling a multi-GB CUDA build; the
# script prefers a CPU build on a machine without an NVIDIA GPU (its docstring
# says how it decides, and prints a one-line note when it had to choose).
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python tools/install_torch.py "$(TORCH_SPEC)" $(PIP_TORCH_ARGS)
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

# The whole suite on several Pythons, each in its own venv under .venvs/ (by hand, not in CI):
#   make test-pythons PYTHONS="python3.10 python3.13"
PYTHONS ?= python3.10 python3.11 python3.12 python3.13
test-pythons:
	@for py in $(PYTHONS); do \
	    echo "== $$py"; \
	    $(MAKE) --no-print-directory test PYTHON=$$py VENV=.venvs/$$py || exit 1; \
	done

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .ruff_cache
