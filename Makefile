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

.PHONY: env lab test test-pythons notebooks slides lint clean help course-release course-collect course-zip-collect \
	course-autograde course-feedback course-export course-check

help:
	@echo "make lab        create .venv if needed, open JupyterLab (127.0.0.1, token) at lesson 00"
	@echo "make lab-instructor  the same, with nbgrader's Formgrader, menu and Create Assignment panel"
	@echo "make test       create .venv if needed, run every test and every notebook (strict nbval)"
	@echo "make notebooks  re-execute the lessons in place (fresh kernel each) so outputs match the code"
	@echo "make slides     one offline HTML slide deck per lesson in build/slides/ (needs npm once)"
	@echo "make lint       ruff over src/ tests/ tools/"
	@echo "make book       the lessons and exercise sets as an offline web book in book/_build/html"
	@echo "make course-release    student notebooks from course/source (notebooks/exercises/, gradebook)"
	@echo "make course-collect SUBMISSIONS=DIR   copy DIR/<student>/<assignment>/ into course/submitted"
	@echo "make course-zip-collect ZIPS=DIR ASSIGNMENT=exNN_topic LMS=Canvas|Moodle|Blackboard"
	@echo "make course-autograde  grade every submission into course/gradebook.db"
	@echo "make course-feedback   feedback HTML in course/feedback/ (hidden tests cleared)"
	@echo "make course-export     grades to course/grades.csv (GRADES_CSV=path to change)"
	@echo "make test-pythons  make test on each of PYTHONS, one venv each under .venvs/"
	@echo "make bench     time the series, attention paths, tiled memory, widgets; report in benchmarks/results/"

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

# The printed URL opens lesson 00 (default_url). tools/learner-lab/ turns nbgrader's menus and
# server extensions off and the "Jupyter news?" prompt with its request (its README says how);
# `make lab-instructor` is the same server with nbgrader's Formgrader and menus. Both serve
# classroom/notebook-outputs.css as custom.css (tools/learner-lab/outputs_css.py): outputs wrap
# between words, where JupyterLab's own CSS breaks a check's message inside words.
LESSON_00    := /lab/tree/notebooks/00_start_here.ipynb
LAB_COMMON    = $(BIN)/jupyter lab --ip=127.0.0.1 --ServerApp.root_dir="$(CURDIR)" \
	    --LabApp.default_url=$(LESSON_00) --LabApp.news_url=None --LabApp.custom_css=True $(ROOT_FLAG)
LEARNER_LAB  := $(CURDIR)/tools/learner-lab

.PHONY: lab-instructor
lab: $(STAMP)
	$(BIN)/python tools/learner-lab/outputs_css.py
	$(LAB_COMMON) --config="$(LEARNER_LAB)/jupyter_server_config.json" \
	    --LabApp.app_settings_dir="$(LEARNER_LAB)/settings" $(LAB_ARGS)

lab-instructor: $(STAMP)
	$(BIN)/python tools/learner-lab/outputs_css.py
	$(LAB_COMMON) $(LAB_ARGS)

test: $(STAMP)
	$(BIN)/ruff check src tests tools benchmarks
	$(BIN)/python -m pytest tests notebooks --nbval \
	    --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout=120 $(PYTEST_ARGS)

# -- The classroom flow: an nbgrader course in course/ (docs/TEACHING.md) -----
# nbgrader runs from course/ (its nbgrader_config.py) with the venv's bin on PATH,
# because it shells out to `alembic`. The gradebook is course/gradebook.db (SQLite).
COURSE      ?= course
SUBMISSIONS ?=
ZIPS        ?=
ASSIGNMENT  ?=
LMS         ?= Canvas
GRADES_CSV  ?= $(COURSE)/grades.csv
EXERCISES   ?= notebooks/exercises
NBGRADER     = cd $(COURSE) && PATH="$(abspath $(BIN)):$$PATH" "$(abspath $(BIN))/nbgrader"

course-release: $(STAMP)
	$(BIN)/python tools/generate_exercises.py --course "$(COURSE)" --exercises "$(EXERCISES)"

course-check: $(STAMP)
	$(BIN)/python tools/generate_exercises.py --check --course "$(COURSE)" --exercises "$(EXERCISES)"

course-collect: $(STAMP)
	@test -n "$(SUBMISSIONS)" || { echo "usage: make course-collect SUBMISSIONS=DIR   (DIR/<student>/<assignment>/<assignment>.ipynb)"; exit 2; }
	$(BIN)/python tools/course_collect.py "$(COURSE)" "$(SUBMISSIONS)"

course-zip-collect: $(STAMP)
	@test -n "$(ZIPS)" && test -n "$(ASSIGNMENT)" || { echo "usage: make course-zip-collect ZIPS=DIR ASSIGNMENT=exNN_topic LMS=Canvas|Moodle|Blackboard"; exit 2; }
	mkdir -p $(COURSE)/downloaded/$(ASSIGNMENT)/archive
	cp "$(ZIPS)"/* $(COURSE)/downloaded/$(ASSIGNMENT)/archive/
	$(NBGRADER) zip_collect $(ASSIGNMENT) --force --strict --collector=lms_collectors.$(LMS)Collector

# One nbgrader for the class, started again after a submission that kills it (that one gets
# 0 points and a review flag): tools/course_autograde.py.
course-autograde: $(STAMP)
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python tools/course_autograde.py "$(COURSE)"

course-feedback: $(STAMP)
	$(NBGRADER) generate_feedback "*" --force

course-export: $(STAMP)
	$(NBGRADER) export --to="$(abspath $(GRADES_CSV))"

notebooks: $(STAMP)
	$(BIN)/python tools/execute_notebooks.py

# Static reveal.js decks, one per lesson, in build/slides/ (offline: reveal.js and MathJax are
# fetched once with npm into build/slides-npm/; build/slides/vendor/ gets only the files the decks
# load). Open build/slides/*.html. What a deck shows: tools/slides.py's docstring.
slides: $(STAMP)
	$(BIN)/python tools/slides.py --export build/slides

lint: $(STAMP)
	$(BIN)/ruff check src tests tools benchmarks

# The series as an offline static book (book/): Sphinx renders the committed notebooks with
# their stored outputs (nothing runs); npm ci in book/ fetches MathJax (served by the site)
# and axe-core (tests/test_book.py). Open book/_build/html/index.html, from file:// or
#   python3 -m http.server -d book/_build/html -b 127.0.0.1 8000
.PHONY: book
book: $(STAMP)
	$(BIN)/python book/build.py

# Benchmarks (issue 11, benchmarks/run.py): under 10 minutes on a 2-core machine; writes
# benchmarks/results/<UTC date>.md with .json and figures beside it, and prints which
# budgets hold. BENCH_ARGS="--check" exits non-zero when one does not.
BENCH_ARGS ?=
.PHONY: bench
bench: $(STAMP)
	$(BIN)/python benchmarks/run.py $(BENCH_ARGS)

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

# -- A class on JupyterHub (classroom/README.md): as root, one Unix user per person --------
# make class-env                          the hub's environment in CLASS_PREFIX (cached)
# make class-accounts ROSTER=roster.csv   the accounts, passwords in CLASS_STATE/passwords.csv
# make class-start / make class-stop      the hub on http://127.0.0.1:CLASS_PORT/
# make class-autograde ASSIGNMENT=ex04_masks   autograde every submission of a set
# make class-remove-accounts              remove the roster's accounts (homes included)
CLASS_PREFIX   ?= /opt/mha-classroom
CLASS_ENV       = $(CLASS_PREFIX)/env
CLASS_PYTHON   ?= /usr/bin/python3
CLASS_STATE    ?= /srv/mha-classroom
CLASS_EXCHANGE ?= /srv/nbgrader/exchange
CLASS_PORT     ?= 8000
CLASS_HUB_PORT ?= 8081
CLASS_API_PORT ?= 8001
ROSTER         ?= $(CLASS_STATE)/roster.csv
CLASS_AS_ROOT   = @test "$$(id -u)" = 0 || { echo "$@: run as root (the hub starts each person's server as their Unix user)"; exit 2; }

.PHONY: class-env class-accounts class-remove-accounts class-start class-stop class-autograde

class-env:
	$(CLASS_AS_ROOT)
	$(CLASS_PYTHON) classroom/class_env.py --prefix "$(CLASS_PREFIX)" --python "$(CLASS_PYTHON)" \
	    --torch-args "$(PIP_TORCH_ARGS)"

class-accounts:
	$(CLASS_AS_ROOT)
	install -d -m 0700 "$(CLASS_STATE)"
	$(CLASS_PYTHON) classroom/accounts.py create "$(ROSTER)" --passwords "$(CLASS_STATE)/passwords.csv"
	test "$(abspath $(ROSTER))" = "$(abspath $(CLASS_STATE)/roster.csv)" || \
	    install -m 0600 "$(ROSTER)" "$(CLASS_STATE)/roster.csv"

class-remove-accounts:
	$(CLASS_AS_ROOT)
	$(CLASS_PYTHON) classroom/accounts.py remove "$(ROSTER)" --passwords "$(CLASS_STATE)/passwords.csv" \
	    --exchange "$(CLASS_EXCHANGE)" --state "$(CLASS_STATE)" --env "$(CLASS_ENV)"

class-start: class-env
	$(CLASS_AS_ROOT)
	install -d -m 0700 "$(CLASS_STATE)"
	install -d -m 0755 "$(dir $(abspath $(CLASS_EXCHANGE)))"
	install -d -m 1777 "$(CLASS_EXCHANGE)"
	$(CLASS_PYTHON) classroom/wait_for_hub.py --idle "$(CLASS_STATE)/jupyterhub.pid"
	test ! -f "$(CLASS_STATE)/roster.csv" || \
	    $(CLASS_PYTHON) classroom/accounts.py refresh "$(CLASS_STATE)/roster.csv"
	cd "$(CLASS_STATE)" && MHA_CLASS_ROSTER="$(abspath $(CLASS_STATE)/roster.csv)" \
	    MHA_CLASS_STATE="$(abspath $(CLASS_STATE))" MHA_CLASS_EXCHANGE="$(abspath $(CLASS_EXCHANGE))" \
	    MHA_CLASS_PORT=$(CLASS_PORT) MHA_CLASS_HUB_PORT=$(CLASS_HUB_PORT) MHA_CLASS_API_PORT=$(CLASS_API_PORT) \
	    nohup "$(CLASS_ENV)/bin/jupyterhub" -f "$(abspath classroom/jupyterhub_config.py)" \
	    >> hub.log 2>&1 < /dev/null &
	$(CLASS_PYTHON) classroom/wait_for_hub.py "http://127.0.0.1:$(CLASS_HUB_PORT)/hub/health" \
	    "$(CLASS_STATE)/hub.log" "$(CLASS_STATE)/jupyterhub.pid" \
	    --open "$(if $(filter 1,$(MHA_CLASS_PUBLIC)),https://<this host>:$(CLASS_PORT)/,http://127.0.0.1:$(CLASS_PORT)/)"

# Every submission of one set in one action (the Formgrader's page grades one per click).
class-autograde:
	$(CLASS_AS_ROOT)
	@test -n "$(ASSIGNMENT)" || { echo "usage: make class-autograde ASSIGNMENT=exNN_topic"; exit 2; }
	$(CLASS_PYTHON) classroom/autograde_all.py "$(ROSTER)" "$(ASSIGNMENT)" --env "$(CLASS_ENV)"

class-stop:
	$(CLASS_AS_ROOT)
	$(CLASS_PYTHON) classroom/wait_for_hub.py --stop "$(CLASS_STATE)/jupyterhub.pid"
