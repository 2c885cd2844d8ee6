# Two commands on a fresh machine: `make demo` installs and runs memfiles on the bundled memory/;
# `make test` runs the tests. Both create .venv on first use.
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
# CPU PyTorch must come first: an unpinned torch pulls a multi-GB CUDA build.
TORCH ?= torch==2.13.0

.PHONY: install demo deps test test-fast lint bench clean

# --no-cache-dir: the wheels are not copied into ~/.cache/pip as well (torch alone is hundreds of MB; a
# CI run once ran out of disk space there, mid-install).
PIP := $(PY) -m pip install -q --no-cache-dir

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) --upgrade pip
	$(PIP) $(TORCH)
	$(PIP) -e '.[index,lsp,mcp,dev]'
	touch $@

install: $(VENV)/.installed

demo: install
	$(BIN)/memfiles check
	$(BIN)/memfiles fmt --check
	$(BIN)/memfiles refs --dangling
	$(BIN)/memfiles audit --stale-days 36500  # the sample's open todos age; the demo must not fail on a date
	$(BIN)/memfiles list
	$(BIN)/memfiles backfill
	$(BIN)/memfiles distil --all
	MEMFILES_SEARCH_WATCH=0 $(BIN)/memsearch "what did we learn about crashes in the middle of a write?" -k 3
	MEMFILES_SEARCH_WATCH=0 $(BIN)/memsearch "why does hold fail after placement?" -k 2
	MEMFILES_SEARCH_WATCH=0 $(BIN)/memsearch -k 1 -- --request-id
	$(BIN)/memfiles status

# Every package the code imports must be declared in pyproject.toml (CI runs this through `make test`).
deps: install
	$(BIN)/deptry src tests scripts

test: install deps
	$(PY) -m pytest

# The fast tier: units and light integration, no test marked slow (tests/reliability/ is, whole): about
# 4.7 minutes on this 2-core machine (1,407 tests, 2026-12-06). CI runs `make test`, everything.
test-fast: install deps
	$(PY) -m pytest -m "not slow and not heavy" -q

lint: install deps
	$(BIN)/ruff check src tests scripts
	$(BIN)/ruff format --check src tests scripts

bench: install
	$(PY) scripts/bench_write.py
	$(PY) scripts/bench_index.py
	$(PY) scripts/eval_retrieval.py loco --passages --all-modes
	$(PY) scripts/calibrate_dedupe.py --notebook notebooks/dedupe_threshold.ipynb
	$(PY) scripts/eval_distil.py
	$(PY) scripts/bench_dupes.py
	$(PY) scripts/bench_filter.py
	$(PY) scripts/bench_watch.py

clean:
	rm -rf $(VENV) .memsearch .memfiles .pytest_cache .ruff_cache .hypothesis
