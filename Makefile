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
.PHONY: help setup jars run spark-submit test test-all fuzz bench bench-large lint signatures docs dist cluster-pack clean
.PHONY: airflow-env airflow-test

help: ## List the targets
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-12s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,bench]'
	touch $@

setup: $(STAMP) ## Create .venv in the repo and install chatgate with its test extras

$(JARS_STAMP):
	mkdir -p $(JARS_DIR)
	for artifact in $(DELTA_SPARK) $(DELTA_STORAGE); do \
	  mvn --batch-mode --quiet dependency:copy -Dartifact=$$artifact \
	    -DoutputDirectory=$(JARS_DIR) -Dmaven.repo.local=$(CURDIR)/.cache/m2 || exit 1; \
	done
	touch $@

# The JVM side of the Spark engine's proof (engines/spark/shapes.py), compiled against .venv's Spark.
SHAPE_SRC := lib/chatgate/engines/spark/jvm/ChatShape.java
SHAPE_JAR := $(JARS_DIR)/chatgate-shape.jar
SHAPE_CLASSES := .cache/shape-classes

$(SHAPE_JAR): $(SHAPE_SRC) $(STAMP)
	rm -rf $(SHAPE_CLASSES) && mkdir -p $(SHAPE_CLASSES) $(JARS_DIR)
	javac --release 17 -d $(SHAPE_CLASSES) -cp "$$($(PY) -c 'import pathlib, pyspark; print(pathlib.Path(pyspark.__file__).parent / "jars")')/*" $(SHAPE_SRC)
	jar cf $@ -C $(SHAPE_CLASSES) chatgate

jars: $(JARS_STAMP) $(SHAPE_JAR) ## Fetch Delta Lake's Spark jars from Maven Central into .cache/jars (once), build chatgate's own

run: setup ## Build a sample lakehouse, run the job on the embedded default, query the quarantine
	$(PY) -m chatgate.demo

SPARK_MASTER ?= local[2]
ARGS ?=

spark-submit: setup jars ## Run the job with .venv's spark-submit and Delta's jars: make spark-submit ARGS='--config conf/example.yaml'
	PYSPARK_PYTHON=$(CURDIR)/$(PY) PYSPARK_DRIVER_PYTHON=$(CURDIR)/$(PY) $(VENV)/bin/spark-submit \
	  --master '$(SPARK_MASTER)' --jars "$$(ls $(JARS_DIR)/*.jar | paste -sd, -)" \
	  jobs/validate_chat.py $(ARGS)

test: setup jars airflow-env ## Run the test suite (Spark tests included)
	$(PY) -m pytest $(PYTEST_ARGS)

test-all: setup jars airflow-env ## Run every test, the slow ones too
	$(PY) -m pytest -m '' $(PYTEST_ARGS)

fuzz: setup jars ## Fuzz the job on both engines: 100 drawn tables each (about 15 minutes; CHATGATE_FUZZ_EXAMPLES=N for more)
	CHATGATE_FUZZ_EXAMPLES=$${CHATGATE_FUZZ_EXAMPLES:-100} $(PY) -m pytest tests/test_job_fuzz.py $(PYTEST_ARGS)

bench: setup jars ## Benchmark the jobs against the baselines at 1M rows
	$(PY) -m bench.run --rows 1000000

bench-large: setup jars ## Benchmark at 5M rows (30% duplicates, one run: for scale and memory)
	$(PY) -m bench.run --rows 5000000 --dups 0.3 --repeats 1

# Apache Airflow in its own environment (its pins don't constrain .venv), with chatgate in it:
# tests/test_dag.py runs the example DAG in dags/ there.
AIRFLOW_VENV := .venv-airflow
AIRFLOW_STAMP := $(AIRFLOW_VENV)/.installed
AIRFLOW_CONSTRAINTS := tests/airflow-constraints.txt

$(AIRFLOW_STAMP): pyproject.toml $(AIRFLOW_CONSTRAINTS)
	$(PYTHON) -m venv $(AIRFLOW_VENV)
	$(AIRFLOW_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(AIRFLOW_VENV)/bin/python -m pip install --quiet -c $(AIRFLOW_CONSTRAINTS) \
	  apache-airflow==3.3.2 apache-airflow-providers-apache-spark==6.3.4 -e '.[duckdb]'
	touch $@

airflow-env: $(AIRFLOW_STAMP) ## Create .venv-airflow: Apache Airflow 3 with the Spark provider and chatgate (once)

airflow-test: setup airflow-env ## Test the example DAG (dags/chatgate_dag.py) in Airflow (part of make test)
	$(PY) -m pytest tests/test_dag.py $(PYTEST_ARGS)

LINT_STAMP := $(VENV)/.lint-installed

$(LINT_STAMP): $(STAMP)
	$(PY) -m pip install --quiet 'ruff>=0.8' 'mypy>=1.13' 'radon>=6' pandas-stubs types-PyYAML
	touch $@

define RADON_MAX_15
import json, sys
found = [f"{path}:{b['lineno']} {b['name']} {b['complexity']}" for path, blocks in json.load(sys.stdin).items()
         for b in blocks if isinstance(b, dict) and b.get('complexity', 0) > 15]
print(*found, sep="\n")
sys.exit(f"radon: {len(found)} functions above complexity 15" if found else 0)
endef
export RADON_MAX_15

lint: $(LINT_STAMP) ## Lint with ruff (style, complexity <= 15), radon (complexity <= 15, and/or counted) and mypy (strict on lib/)
	$(VENV)/bin/ruff check lib tests jobs bench dags
	$(VENV)/bin/radon cc -j lib | $(PY) -c "$$RADON_MAX_15"
	$(VENV)/bin/mypy

signatures: setup ## Write the public functions' and step methods' signatures out from the spec (tests/test_signatures.py checks them)
	$(PY) -m chatgate._gen_signatures

DOCS_STAMP := $(VENV)/.docs-installed

$(DOCS_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[docs]'
	touch $@

docs: $(DOCS_STAMP) ## Build the documentation site into site/ (mkdocs, warnings are errors; the performance table from its results file)
	$(PY) -m bench.perf_table --write docs/performance/index.md
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site
	@echo "site/index.html: the documentation site (mkdocs serve to browse it live)"

dist: setup ## Build chatgate's wheel and source distribution into dist/ (pip install dist/chatgate-*.whl)
	mkdir -p dist
	rm -f dist/chatgate-*.whl dist/chatgate-*.tar.gz
	$(PY) -m build --outdir dist .
	@echo "dist/: the chatgate wheel and sdist: pip install 'dist/<wheel>[duckdb]' (extras: duckdb, spark, polars, pandas)"

DIST_VENV := build/dist-venv

cluster-pack: dist jars ## Pack what a cluster's executors need into dist/: chatgate-env.tar.gz (--archives), the wheel, Delta's jars (--jars)
	rm -rf $(DIST_VENV)
	$(PYTHON) -m venv $(DIST_VENV)
	$(DIST_VENV)/bin/pip install --quiet --upgrade pip
	# The cluster brings Spark itself: pack chatgate and its compiled dependencies, not pyspark.
	$(DIST_VENV)/bin/pip install --quiet "$$(ls dist/chatgate-*.whl)[pandas]" venv-pack
	$(DIST_VENV)/bin/venv-pack -p $(DIST_VENV) -o dist/chatgate-env.tar.gz --force
	cp $(JARS_DIR)/*.jar dist/
	@echo "dist/: chatgate-env.tar.gz (pass with --archives), the chatgate wheel, Delta's jars (--jars)"

clean: ## Remove build outputs (keeps .venv and the jar cache)
	rm -rf dist build site bench/results/*.json bench/results/*.png sample_lakehouse
