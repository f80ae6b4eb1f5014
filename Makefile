# Two commands set everything up: `make run` and `make test`.
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
export HF_HUB_OFFLINE := 1
export OPENBLAS_NUM_THREADS := 1

.PHONY: run serve test index lint bench clean

$(PY):
	python3 -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(VENV)/.installed: requirements.txt | $(PY)
	$(PIP) install -r requirements.txt
	touch $@

$(VENV)/.installed-dev: requirements-dev.txt $(VENV)/.installed
	$(PIP) install -r requirements-dev.txt
	touch $@

index: $(VENV)/.installed  ## build or update the sample book's index (no-op when fresh)
	$(PY) -m rag ingest

run: index  ## install, index the sample book if needed, start the app
	$(VENV)/bin/streamlit run app.py

serve: index  ## the HTTP API on http://127.0.0.1:8000 (docs at /docs); keys in RAG_API_KEYS
	$(PY) -m rag serve

test: $(VENV)/.installed-dev  ## install test dependencies and run the whole suite
	$(PY) -m pytest

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .

bench: index $(VENV)/.installed-dev  ## benches reuse the tests' builders
	$(PY) bench/retrieval.py
	$(PY) bench/answer.py
	$(PY) bench/quality.py
	$(PY) bench/phrasing.py
	$(PY) bench/follow_ups.py
	$(PY) bench/navigation.py
	$(PY) bench/audit.py
	$(PY) bench/tuning.py
	$(PY) bench/ingest.py
	$(PY) bench/writers.py --seconds 60
	$(PY) bench/load.py --seconds 60

clean:
	rm -rf data/index data/audit.duckdb data/audit.duckdb.wal data/audit data/audit.spool tests/app/artifacts
