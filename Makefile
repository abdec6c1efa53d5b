# Two commands on a fresh machine (Python 3.11 and make): `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
CORE   := $(VENV)/.installed-core
STAMP  := $(VENV)/.installed
AB     := $(VENV)/bin/arrivalbench

## installs with uv when it installs from the registry here (seconds instead of minutes), else pip;
## either way every module is compiled to bytecode at install time, this package's too: where
## PYTHONDONTWRITEBYTECODE is set (it is on this machine) Python never writes a .pyc, and uv writes
## none unless asked, so every process (each replay worker, each CLI call) compiled every module it
## imported from source, ~3 s per process
define install
	$(PY) -m pip install --quiet --disable-pip-version-check uv >/dev/null 2>&1 \
	  && $(VENV)/bin/uv pip install --quiet --compile-bytecode --python $(PY) $(1) \
	  || $(PY) -m pip install --quiet --disable-pip-version-check $(1)
	$(PY) -m compileall -q -j 0 src >/dev/null
endef
WITH_DBT := '.[dev,dbt]'

.PHONY: install demo test check lint clean chromium postgresql

## the demo needs only the core (grading, statistics, report): no Ray, Inspect AI, scipy or pytest
$(CORE): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(call install,-e .)
	touch $(CORE)

## tests and lint need the dev extras (pytest, hypothesis, ruff, Ray, Inspect AI, scipy, statsmodels)
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(call install,-e '.[dev]')
	touch $(CORE) $(STAMP)

install: $(STAMP)

## the dbt extra (arrivalbench check --dbt-project): the tests run real dbt; the demo needs none
DBT_STAMP := $(VENV)/.installed-dbt
$(DBT_STAMP): $(STAMP)
	$(call install,-e $(WITH_DBT))
	touch $(DBT_STAMP)

## demo: gate the built-in suite at one seed (every gold, negative control and naive baseline;
## make test gates at three), build the reference corpus as a run, generate the recorded replies of
## one frontier LLM (examples/recorded/: three prompt arms, k=1) as a second run, grade both and
## write their report (runs/demo/report/report.html); the last rates printed are the model's.
## Verdicts go through the verdict cache (~/.cache/arrivalbench): the corpus reuses the gate's, and
## a second demo executes nothing.
RECORDED := replay:examples/recorded/frontier-llm-{arm}.json
demo: $(CORE)
	$(AB) gate --seeds 1
	rm -rf runs/demo
	$(AB) make-corpus --out runs/demo/corpus
	$(AB) generate --model '$(RECORDED)' --arm unhinted --arm hint --arm arch -k 1 --out runs/demo/recorded
	$(AB) grade-run runs/demo/corpus
	$(AB) grade-run runs/demo/recorded
	$(AB) report runs/demo/corpus runs/demo/recorded --out runs/demo/report

## chromium: the headless browser the report test renders the HTML page in (installed when missing)
chromium:
	command -v chromium >/dev/null || (apt-get update && apt-get install -y --no-install-recommends chromium)

## postgresql: the server the PostgreSQL engine's tests start in a temporary folder (installed when missing)
postgresql:
	command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || (apt-get update && apt-get install -y --no-install-recommends postgresql)

## test: lint, the whole test suite, fast and slow lanes, one pytest-xdist worker per core and
## nothing else on the machine (its timeouts and memory caps are measured without other load;
## pytest's "no tests collected", exit 5, is a failure here; the CPU its processes used is
## printed, as each lane's is); then the suite itself, one lane at a time, each on every core
## (tools/lanes.sh prints a lane's log whole, with its wall and CPU time, as it ends; every lane
## runs even after one failed): the audit of every task's second oracle, then the gate at its
## three seeds on SQLite, on DuckDB and on PostgreSQL (a private server the harness starts).
## One at a time is faster than side by side on 2 cores: 749 s against 897 s (docs/decisions.md).
## Every gate executes everything (--no-cache). pytest sends each test file whole to one worker
## (--dist loadfile): with work stealing, a module's expensive fixture (explain's shrunk shapes,
## ~45 s) was built again in the worker that stole one of its tests; run back to back, the whole
## suite took 696 s and 1,345 CPU seconds against 819 s and 1,589 (benchmarks/results/pytest_dist.md).
TEST_WORKERS ?= auto
test: lint chromium postgresql $(DBT_STAMP)
	@ARRIVALBENCH_REQUIRE_CHROMIUM=1 $(PY) -m pytest -m 'slow or not slow' -n $(TEST_WORKERS) --dist loadfile --durations=15; rc=$$?; \
	cpu=$$(mktemp); times >"$$cpu"; sed -n '2s/^/pytest: cpu (user, system) /p' "$$cpu"; rm -f "$$cpu"; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing on purpose"; exit 1; fi; \
	exit $$rc
	@rc=0; \
	tools/lanes.sh audit "$(AB) audit" || rc=1; \
	tools/lanes.sh gate-sqlite "$(AB) gate --no-cache --engine sqlite" || rc=1; \
	tools/lanes.sh gate-duckdb "$(AB) gate --no-cache" || rc=1; \
	tools/lanes.sh gate-postgres "$(AB) gate --no-cache --engine postgres" || rc=1; \
	exit $$rc

## check: the fast lane, what a bare `pytest` runs (no test marked slow), on every core: minutes, for every change
check: $(STAMP)
	$(PY) -m pytest -n $(TEST_WORKERS) --dist worksteal

## lint: exactly the checks `make test` runs first
lint: $(STAMP)
	$(PY) -m ruff check src tests benchmarks
	$(PY) -m ruff format --check src tests benchmarks

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache .ruff_cache .hypothesis
