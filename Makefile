# The two commands of the README's quick start are `make run` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install run test lint bench clean

CHROMIUM := /usr/bin/chromium
TESSERACT := /usr/bin/tesseract
GIT := /usr/bin/git
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

install: $(STAMP) $(CHROMIUM) $(TESSERACT) $(GIT)

# The web page's browser tests drive Debian's chromium (Playwright never downloads a browser here).
$(CHROMIUM):
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null

# Scanned PDF pages are read by Debian's tesseract with its English data (rag_rlm/ingest/ocr.py).
$(TESSERACT):
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq tesseract-ocr tesseract-ocr-eng >/dev/null

# Git sources are read with Debian's git (rag_rlm/sources/git.py).
$(GIT):
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq git >/dev/null

# torch first, pinned: a CPU build of 2.13.0 lies on disk here; any other spec pulls CUDA wheels.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

# Ingest the bundled sample corpus into the embedded store, then serve HTTP.
run: $(STAMP)
	$(BIN)/ingest examples/sample --collection sample
	@echo "Open http://$(HOST):$(PORT)/ in a browser (the API is under /v1, docs at /schema/swagger)"
	RAG_RLM_COLLECTION=sample $(BIN)/rag-rlm serve --host $(HOST) --port $(PORT)

test: install
	$(BIN)/python -m pytest -q

lint: install
	$(BIN)/ruff check rag_rlm ingest tests bench

bench: install
	$(BIN)/python bench/bench_ingest.py
	$(BIN)/python bench/bench_search.py
	$(BIN)/python bench/bench_controller.py
	$(BIN)/python bench/bench_batching.py
	$(BIN)/python bench/bench_server.py
	$(BIN)/python bench/bench_cli.py
	$(BIN)/python bench/bench_formats.py
	$(BIN)/python bench/bench_ocr.py

clean:
	rm -rf $(VENV) .rag_rlm .pytest_cache
