# The two commands of the README: `make demo` and `make test`. Everything else is a step of theirs.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
SHARED_SAMPLE := ../shared/data/sakana_archive_subset.jsonl
DEMO_ARCHIVE := evaluator/demo_archive/demo_archive.jsonl
# The project's own H200 re-verifications, signed (docs/verification_records.md).
H200_RESULTS := evaluator/h200_results
# The shared sample when it is there, else the demo archive the repository ships.
SAMPLE ?= $(if $(wildcard $(SHARED_SAMPLE)),$(SHARED_SAMPLE),$(DEMO_ARCHIVE))
SAMPLE_HARDWARE ?= $(if $(wildcard $(SHARED_SAMPLE)),NVIDIA H100,)
HOST ?= 127.0.0.1
PORT ?= 8000
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/kernel_archive
TEST_REDIS_URL ?= redis://127.0.0.1:6379/15
PYTEST := $(PY) -m pytest

.PHONY: install browser demo test test-sqlite test-postgres migrate import index serve bench

install: $(VENV)/.installed

$(VENV)/.installed: requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

migrate: install
	$(PY) manage.py migrate --noinput

import: migrate
	@test -e "$(SAMPLE)" || { echo "no archive at $(SAMPLE): run make demo SAMPLE=path/to/archive.jsonl"; exit 2; }
	$(PY) manage.py import_archive "$(SAMPLE)" --hardware "$(SAMPLE_HARDWARE)"
	@# The demo archive too (its cheats and honest kernels, measured on an H200), then the shipped
	@# re-verifications of what was imported: a fresh demo shows claimed beside re-measured.
	test "$(SAMPLE)" = "$(DEMO_ARCHIVE)" || $(PY) manage.py import_archive "$(DEMO_ARCHIVE)"
	$(PY) manage.py import_verifications $(H200_RESULTS)/demo_archive_h200.jsonl
	test "$(SAMPLE)" != "$(SHARED_SAMPLE)" || $(PY) manage.py import_verifications $(H200_RESULTS)/sample_subset_h200.jsonl

index: import
	$(PY) manage.py build_index
	$(PY) manage.py build_map

demo: index
	$(PY) manage.py collectstatic --noinput -v0
	@echo "Serving http://$(HOST):$(PORT)/ with a worker; Ctrl-C stops both."
	DJANGO_DEBUG=$${DJANGO_DEBUG:-1} bash -c 'trap "kill 0" EXIT; $(PY) manage.py run_huey & $(PY) manage.py runserver $(HOST):$(PORT) --noreload'

test: install browser test-sqlite test-postgres

# Debian's Chromium for the browser tests (needs root or sudo; a no-op when present).
browser:
	bash scripts/install_chromium.sh

# Tests keep their queue, index and media files out of ./data.
test-sqlite:
	ARCHIVE_DATA_DIR=$$(mktemp -d) $(PYTEST) -m "not postgres" -q

# The scale-out path against the real servers on 127.0.0.1.
test-postgres:
	ARCHIVE_DATA_DIR=$$(mktemp -d) DATABASE_URL=$(TEST_DATABASE_URL) $(PYTEST) -q -m "not browser and not slow" tests/kernels tests/search tests/faults

bench: install
	$(PY) bench/run.py
