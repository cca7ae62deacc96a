# Everything installs itself into .venv on first use; only python3 (3.11+) is needed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LAB_OVERRIDES := $(VENV)/share/jupyter/lab/settings/overrides.json

.PHONY: demo test test-fast lint format bench lab lock clean

UV_VERSION := 0.13.9

# The environment is installed from uv.lock, exactly (`make lock` updates it): the same versions
# on every machine and in CI. uv itself is pinned. --inexact leaves uv in the environment;
# --compile-bytecode: a fresh environment starts like a warm one (a first `workbench` command,
# and the tests' subprocesses, do not compile every library they import on the way).
$(STAMP): pyproject.toml uv.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet uv==$(UV_VERSION)
	$(BIN)/uv sync --quiet --locked --inexact --extra dev --compile-bytecode --python $(BIN)/python
	touch $(STAMP)

lock: $(STAMP)  ## update uv.lock to the newest versions pyproject.toml allows (then commit it)
	$(BIN)/uv lock --upgrade

demo: $(STAMP) $(LAB_OVERRIDES)  ## the main job: sandbox -> tokens -> every list -> printed
	$(BIN)/workbench demo

# Two workers: much of the suite waits on sandboxes, kernels and browsers (about half the time of one).
test: $(STAMP)  ## the whole suite, slow tests included (what CI runs)
	$(BIN)/python -m pytest -n 2

test-fast: $(STAMP)
	$(BIN)/python -m pytest -n 2 -m "not slow"

lint: $(STAMP)  ## ruff (lint and format) and mypy: what CI runs before the tests
	$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/mypy workbench

format: $(STAMP)
	$(BIN)/ruff format . && $(BIN)/ruff check --fix .

# The bench extra adds dlt, bench/pull.py's second baseline (installed here only: heavy).
bench: $(STAMP)
	$(BIN)/uv sync --quiet --locked --inexact --extra dev --extra bench --python $(BIN)/python
	for f in bench/*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

# Kernels start in notebooks/: WORKBENCH_HOME makes workbench.toml and data/ the project's. News,
# update checks and the extension manager's PyPI lookups are off (nothing leaves the machine):
# the server's options stop the fetching, and the environment's settings overrides stop the
# front end asking about news (a user's own settings still win).
$(LAB_OVERRIDES): $(STAMP)
	mkdir -p $(dir $@)
	printf '%s\n' '{"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": false}}' > $@

lab: $(STAMP) $(LAB_OVERRIDES)  ## JupyterLab on the notebooks (make lab PORT=8899 for a port)
	WORKBENCH_HOME="$${WORKBENCH_HOME:-$(CURDIR)}" $(BIN)/jupyter lab $(if $(PORT),--port=$(PORT)) \
	  --notebook-dir=notebooks --LabApp.news_url=None --LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate \
	  --LabApp.extension_manager=readonly \
	  --Scheduler.execution_manager_class=workbench.report.scheduled.ReportJobs $$( [ "$$(id -u)" = 0 ] && echo --allow-root )

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
