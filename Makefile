# Two commands do all set-up on a fresh machine: `make up` and `make test`.
PYTHON ?= $(shell .ci/find-python)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: up test lint format venv clean bench

$(STAMP): pyproject.toml
	@test -n "$(PYTHON)" || { echo "no Python >= 3.12 found (see .ci/find-python)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	@touch $(STAMP)

venv: $(STAMP)

up: $(STAMP)
	$(BIN)/groundhog up

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
