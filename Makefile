# chatgate: every target sets up what it needs. `make help` lists them.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
JARS_DIR := .cache/jars
DELTA_SPARK := io.delta:delta-spark_4.1_2.13:4.1.0
DELTA_STORAGE := io.delta:delta-storage:4.1.0
JARS_STAMP := $(JARS_DIR)/.resolved
PYTEST_ARGS ?=

.DEFAULT_GOAL := help
.PHONY: help setup jars run test test-all bench bench-large lint dist clean

help: ## List the targets
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-12s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,bench,dist]'
	touch $@

setup: $(STAMP) ## Create .venv in the repo and install chatgate with its test extras

$(JARS_STAMP):
	mkdir -p $(JARS_DIR)
	for artifact in $(DELTA_SPARK) $(DELTA_STORAGE); do \
	  mvn --batch-mode --quiet dependency:copy -Dartifact=$$artifact \
	    -DoutputDirectory=$(JARS_DIR) -Dmaven.repo.local=$(CURDIR)/.cache/m2 || exit 1; \
	done
	touch $@

jars: $(JARS_STAMP) ## Fetch Delta Lake's Spark jars from Maven Central into .cache/jars (once)

run: setup ## Build a sample lakehouse, run the job on the embedded default, query the quarantine
	$(PY) -m chatgate.demo

test: setup jars ## Run the test suite (Spark tests included)
	$(PY) -m pytest $(PYTEST_ARGS)

test-all: setup jars ## Run every test, the slow ones too
	$(PY) -m pytest -m '' $(PYTEST_ARGS)

bench: setup jars ## Benchmark the jobs against the baselines at 1M rows
	$(PY) -m bench.run --rows 1000000

bench-large: setup jars ## Benchmark at 5M rows
	$(PY) -m bench.run --rows 5000000

lint: setup ## Lint with ruff
	$(PY) -m pip install --quiet ruff
	$(VENV)/bin/ruff check lib tests jobs bench

dist: setup ## Pack the virtual environment for a cluster's executors (dist/chatgate-env.tar.gz)
	mkdir -p dist
	$(VENV)/bin/venv-pack --python-prefix . -p $(VENV) -o dist/chatgate-env.tar.gz --force
	$(PY) -m pip wheel --quiet --no-deps -w dist .

clean: ## Remove build outputs (keeps .venv and the jar cache)
	rm -rf dist build bench/results/*.json bench/results/*.png sample_lakehouse
