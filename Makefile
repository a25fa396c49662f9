# Two commands do all set-up on a fresh machine: `make up` and `make test`.
PYTHON ?= $(shell .ci/find-python)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: up test lint format venv clean bench

# uv installs in seconds where pip takes minutes: used when it is on PATH (`uv venv --seed`, so the
# venv still has pip), else the venv's own pip.
UV ?= $(shell command -v uv 2>/dev/null)
ifeq ($(strip $(UV)),)
MAKE_VENV = $(PYTHON) -m venv $(VENV)
INSTALL = $(BIN)/python -m pip install --quiet
else
MAKE_VENV = $(UV) venv --quiet --seed --python $(PYTHON) $(VENV)
INSTALL = $(UV) pip install --quiet --python $(BIN)/python
endif
# `make up` needs only the services; `make test` (and lint, bench) the whole dev set.
SERVICES_STAMP := $(VENV)/.installed-services

$(BIN)/python:
	@test -n "$(PYTHON)" || { echo "no Python >= 3.12 found (see .ci/find-python)"; exit 1; }
	$(MAKE_VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(INSTALL) -e ".[dev]"
	@touch $(STAMP) $(SERVICES_STAMP)

$(SERVICES_STAMP): pyproject.toml | $(BIN)/python
	$(INSTALL) -e ".[services]"
	@touch $(SERVICES_STAMP)

venv: $(STAMP)

# Flags for `groundhog up`: make up ARGS='--upstream-ca corp.pem --proxy-port 9080'
up: $(SERVICES_STAMP)
	$(BIN)/groundhog up $(ARGS)

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -q

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
	rm -rf $(VENV) .groundhog
