# Two commands on a fresh machine (Python 3.11 and make): `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
CORE   := $(VENV)/.installed-core
STAMP  := $(VENV)/.installed

.PHONY: install demo test lint clean chromium postgresql

## the demo needs only the core (grading, statistics, report): no Ray, Inspect AI, scipy or pytest
$(CORE): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e .
	touch $(CORE)

## tests and lint need the dev extras (pytest, hypothesis, ruff, Ray, Inspect AI, scipy, statsmodels)
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(CORE) $(STAMP)

install: $(STAMP)

## the dbt extra (arrivalbench check --dbt-project): the tests run real dbt; the demo needs none
DBT_STAMP := $(VENV)/.installed-dbt
$(DBT_STAMP): $(STAMP)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev,dbt]'
	touch $(DBT_STAMP)

## demo: gate the built-in suite (grading every gold, negative control and naive baseline),
## then build the reference corpus as a run directory, grade it, print the per-arm rates and write
## its report (runs/demo/report/report.html). Verdicts go through the verdict cache
## (~/.cache/arrivalbench), so the sweep reuses the gate's and a second demo executes nothing.
demo: $(CORE)
	$(VENV)/bin/arrivalbench tasks
	$(VENV)/bin/arrivalbench gate
	rm -rf runs/demo
	$(VENV)/bin/arrivalbench make-corpus --out runs/demo
	$(VENV)/bin/arrivalbench grade-run runs/demo
	$(VENV)/bin/arrivalbench report runs/demo --out runs/demo/report

## chromium: the headless browser the report test renders the HTML page in (installed when missing)
chromium:
	command -v chromium >/dev/null || (apt-get update && apt-get install -y --no-install-recommends chromium)

## postgresql: the server the PostgreSQL engine's tests start in a temporary folder (installed when missing)
postgresql:
	command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || (apt-get update && apt-get install -y --no-install-recommends postgresql)

## test: lint, the whole test suite (pytest's "no tests collected", exit 5, is a failure here),
## then the suite itself: the gate at its three seeds on each engine (DuckDB, SQLite, and
## PostgreSQL on a private server the harness starts), executing everything (--no-cache), and
## the audit of every task's second oracle
test: lint chromium postgresql $(DBT_STAMP)
	@ARRIVALBENCH_REQUIRE_CHROMIUM=1 $(PY) -m pytest; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing on purpose"; exit 1; fi; \
	exit $$rc
	$(VENV)/bin/arrivalbench gate --no-cache
	$(VENV)/bin/arrivalbench gate --no-cache --engine sqlite
	$(VENV)/bin/arrivalbench gate --no-cache --engine postgres
	$(VENV)/bin/arrivalbench audit

## lint: exactly the checks `make test` runs first
lint: $(STAMP)
	$(PY) -m ruff check src tests benchmarks
	$(PY) -m ruff format --check src tests benchmarks

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache .ruff_cache .hypothesis
