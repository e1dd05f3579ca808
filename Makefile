# Sluice: every target installs what it needs (uv, the environment) first.
SHELL := /bin/bash
UV ?= $(shell command -v uv 2>/dev/null || echo $(HOME)/.local/bin/uv)
export PYTHONPATH := $(CURDIR)/libs:$(CURDIR)/services
export UV_LINK_MODE := copy

.PHONY: setup run migrate test lint bench browser fmt

$(UV):
	@command -v uv >/dev/null 2>&1 || python3 -m pip install --user --quiet uv || pip install --quiet uv

setup: $(UV)
	@$(UV) sync --frozen --quiet

run: setup
	@$(UV) run --frozen python -m sluice run

migrate: setup
	@$(UV) run --frozen python -m sluice migrate

browser:
	@command -v chromium >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null)

test: setup browser
	@$(UV) run --frozen pytest

lint: setup
	@$(UV) run --frozen ruff check libs services tests
	@$(UV) run --frozen ruff format --check libs services tests
	@$(UV) run --frozen mypy

fmt: setup
	@$(UV) run --frozen ruff format libs services tests
	@$(UV) run --frozen ruff check --fix libs services tests

bench: setup
	@$(UV) run --frozen python -m sluice bench
