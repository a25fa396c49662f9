# Two commands do all set-up on a fresh machine: `make up` and `make test`.
PYTHON ?= $(shell .ci/find-python)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: up test lint format venv clean bench

# uv installs in seconds where pip takes minutes (a fresh `make up`: ~20 s against ~145 s here).
# Without uv on PATH, pip puts uv into the venv first (one wheel); if even that fails (offline,
# no wheel for the platform), pip installs everything as before.
UV ?= $(shell command -v uv 2>/dev/null)
UV_BIN := $(if $(strip $(UV)),$(UV),$(BIN)/uv)
# `make up` needs only the services; `make test` (and lint, bench) the whole dev set.
SERVICES_STAMP := $(VENV)/.installed-services

# --compile-bytecode: uv leaves bytecode to first import, and where PYTHONDONTWRITEBYTECODE is set
# (these machines) every process then compiles its dependencies again: about 1.8 s of CPU for
# each resolver or proxy a test or the benchmark starts (pip compiles at install already).
define install
	test -x $(UV_BIN) || $(BIN)/python -m pip install --quiet uv || true
	if test -x $(UV_BIN); then $(UV_BIN) pip install --quiet --compile-bytecode --python $(BIN)/python -e "$(1)"; \
	else $(BIN)/python -m pip install --quiet -e "$(1)"; fi
endef

$(BIN)/python:
	@test -n "$(PYTHON)" || { echo "no Python >= 3.12 found (see .ci/find-python)"; exit 1; }
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(call install,.[dev])
	@touch $(STAMP) $(SERVICES_STAMP)

$(SERVICES_STAMP): pyproject.toml | $(BIN)/python
	$(call install,.[services])
	@touch $(SERVICES_STAMP)

venv: $(STAMP)

# Flags for `groundhog up`: make up ARGS='--upstream-ca corp.pem --proxy-port 9080'
up: $(SERVICES_STAMP)
	$(BIN)/groundhog up $(ARGS)

# Tests run in worker processes, one test file per worker at a time (its module-scoped servers
# stay in one process): 2 workers take the suite from ~16 to ~9 minutes on the 2-core CI machine.
# TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 2

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .venv-trl .venv-trl.lock .groundhog
