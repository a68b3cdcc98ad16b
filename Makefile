# The commands of the README: `make demo`, `make test`, and `make check` for the edit loop.
# Everything else is a step of theirs.
SHELL := /bin/bash
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
# pytest-xdist, one worker per core and one more: tests that wait (timeouts, restarts, polling a
# worker's database) leave their core idle, which the extra worker fills (a fresh clone on 2
# cores: the SQLite part 735 s with 2 workers, 591 s with 3, the same CPU time; docs/testing.md).
# --dist loadfile keeps a file's tests on one worker, so a module or session fixture (an
# imported archive, half the cheat suite) runs once per run.
# --no-loadscope-reorder hands out files in tests/conftest.py's order (the slowest first) instead
# of xdist's default (most tests first), which left one-test files of a minute each for the end.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 2) + 1 )))
XDIST := -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder
TEST_STARTED := $(shell date +%s)

# $(call timed,PART,COMMAND): runs one part of `make test` and says in CI's log how long it took,
# its CPU time (bash's `times`: user and system time of the processes it waited for) and the load
# average at its start and end: other work on the 2 cores slows every part.
define timed
	@start=$$(date +%s); load=$$(cut -d' ' -f1-3 /proc/loadavg); $(2); status=$$?; \
	cpu=$$(mktemp); times > $$cpu; \
	echo "[make test] $(1): $$(( $$(date +%s) - start )) s, CPU $$(tail -1 $$cpu | sed 's/ / user, /') system (load average $$load at the start, $$(cut -d' ' -f1-3 /proc/loadavg) at the end)"; \
	rm -f $$cpu; exit $$status
endef

.PHONY: install browser demo check test test-sqlite test-postgres migrate import index serve bench

install: $(VENV)/.installed

$(VENV)/.installed: requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	@# pip byte-compiles every file one at a time (about 70 of its 90 s here); compileall does it on
	@# every core. It still has to be done before the tests: the runner starts with -B and may not
	@# write site-packages, so a module without its .pyc would be compiled again in every runner.
	@# (compileall's status is 1 for the few files in packages that are not Python 3, as pip's is not.)
	$(PY) -m pip install --quiet --no-compile -r requirements.txt
	$(PY) -m compileall -q -j 0 $$($(PY) -c "import sysconfig; print(sysconfig.get_paths()['purelib'])") > /dev/null || true
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
	@# What the GPU ran for four demo kernels (SASS, PTX, registers, spills; the matmul's ncu hot spots).
	$(PY) manage.py import_gpu_listings evaluator/demo_archive/gpu_listings_h200.json
	test "$(SAMPLE)" != "$(SHARED_SAMPLE)" || $(PY) manage.py import_verifications $(H200_RESULTS)/sample_subset_h200.jsonl
	@# Later runs of the sample through the worker (harness 2.8.0: the judge's defaults, shared compile baseline).
	test "$(SAMPLE)" != "$(SHARED_SAMPLE)" || for records in $(wildcard $(H200_RESULTS)/sample_2_8_0/*.jsonl); do \
		$(PY) manage.py import_verifications "$$records" || exit 1; done
	@# CUDA-L1's subsets (one per GPU) when ../shared has them: their claims beside the sample's; after the
	@# records above, which name the tasks' references as the sample gave them.
	for dump in $(wildcard ../shared/data/cuda_l1/*_subset.jsonl); do $(PY) manage.py import_archive "$$dump" || exit 1; done
	@# CUDA-L1's four full dumps (rows without a kernel skipped and counted; about 30 s in all), then the
	@# signed records of the H200 campaign that re-verifies them, one file a call (docs/verification_records.md,
	@# "CUDA-L1 campaign"); only with the dumps, whose kernels the records are of. The a100 dump first, as the
	@# campaign's device database has it.
	for dump in $(wildcard $(addprefix ../shared/data/cuda_l1/,a100.json l40.json 3090.json h20.json)); do $(PY) manage.py import_archive "$$dump" --rows-without-kernel skip || exit 1; done
	test -z "$(wildcard $(addprefix ../shared/data/cuda_l1/,a100.json l40.json 3090.json h20.json))" || for records in $(wildcard $(H200_RESULTS)/cuda_l1/*.jsonl); do \
		$(PY) manage.py import_verifications "$$records" || exit 1; done

index: import
	$(PY) manage.py build_index
	$(PY) manage.py build_map

demo: index
	$(PY) manage.py collectstatic --noinput -v0
	@echo "Serving http://$(HOST):$(PORT)/ with a worker; Ctrl-C stops both."
	DJANGO_DEBUG=$${DJANGO_DEBUG:-1} bash -c 'trap "kill 0" EXIT; $(PY) manage.py run_huey & $(PY) manage.py runserver $(HOST):$(PORT) --noreload'

# The edit loop's tier, under 2 minutes on 2 cores (docs/testing.md): compile every module with
# warnings as errors, then on SQLite the architecture test and the tests that build no C++, start no
# judge or server, drive no browser and are not CPU-heavy (tests/conftest.py marks them).
CHECK_SOURCES := archive_site accounts kernels search evaluator web verifier tests bench scripts manage.py
CHECK_MARKERS := not slow and not judge and not heavy and not browser and not postgres and not faults and not postgres_and_redis
check: install
	$(PY) -W error -m compileall -q -f -j 0 $(CHECK_SOURCES) > /dev/null
	ARCHIVE_DATA_DIR=$$(mktemp -d) $(PYTEST) $(XDIST) -m "$(CHECK_MARKERS)" -q --durations=5

test:
	$(call timed,install,$(MAKE) --no-print-directory install)
	$(call timed,browser,$(MAKE) --no-print-directory browser)
	$(call timed,test-sqlite,$(MAKE) --no-print-directory test-sqlite)
	$(call timed,test-postgres,$(MAKE) --no-print-directory test-postgres)
	@echo "[make test] all: $$(( $$(date +%s) - $(TEST_STARTED) )) s on $$(nproc) cores"

# Debian's Chromium for the browser tests (needs root or sudo; a no-op when present).
browser:
	bash scripts/install_chromium.sh

# Everything, on SQLite. Tests keep their queue, index and media files out of ./data.
test-sqlite: install
	ARCHIVE_DATA_DIR=$$(mktemp -d) $(PYTEST) $(XDIST) -m "not postgres" -q --durations=15

# The scale-out path against the real servers on 127.0.0.1: of these folders, the tests that
# use the database (tests/conftest.py leaves out the others, which cannot differ).
test-postgres: install
	ARCHIVE_DATA_DIR=$$(mktemp -d) DATABASE_URL=$(TEST_DATABASE_URL) $(PYTEST) $(XDIST) -q -m "not browser and not slow" --durations=5 tests/kernels tests/search tests/faults

bench: install
	$(PY) bench/run.py
