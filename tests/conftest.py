"""Fixtures every test may use. The suite needs nothing outside the repository: the test
archive is tests/archive_fixture.py's (the demo archive plus rows written for the tests), the
H200 profiler outputs are under tests/fixtures/h200/.

The shared sample (../shared beside the clone; CI has it) adds its own tests: those that use
the `sample_path` or `sample_rows` fixtures. Where it is not there they are deselected, and
the run says so once, instead of skipping each."""
import json
import os
from collections import Counter
from pathlib import Path

import pytest

# One OpenMP thread a process, for the tests and every judge, runner and worker they start
# (before torch is imported here). The suite runs several torch processes on 2 cores; with a
# thread per core each, OpenMP's spin-waiting threads starve the others' wake-ups: it cost the
# CPU cheat suite about a third of its CPU time and made an honest kernel's clock check see
# 17 ms a call that no kernel spent. Nothing the tests check depends on intra-op threads.
os.environ.setdefault("OMP_NUM_THREADS", "1")

from tests import archive_fixture

REPO_ROOT = Path(__file__).resolve().parent.parent
SAMPLE_ARCHIVE = REPO_ROOT.parent / "shared" / "data" / "sakana_archive_subset.jsonl"
H200_FIXTURES = REPO_ROOT / "tests" / "fixtures" / "h200"
CUDA_L1_SUBSETS = REPO_ROOT.parent / "shared" / "data" / "cuda_l1"
KERNELBENCH_PROBLEMS = REPO_ROOT.parent / "shared" / "data" / "kernelbench"
SHARED_SAMPLE_FIXTURES = {"sample_path", "sample_rows", "cuda_l1_sample_paths", "kernelbench_problems_path"}


DATABASE_FIXTURES = {"db", "transactional_db", "live_server", "django_db_reset_sequences",
                     "django_db_serialized_rollback"}


def _uses_the_database(item) -> bool:
    return item.get_closest_marker("django_db") is not None or bool(DATABASE_FIXTURES & set(item.fixturenames))


def _on_postgresql() -> bool:
    from django.db import connection

    return connection.vendor == "postgresql"


# `make check`, the edit loop's tier, leaves out tests marked `judge` or `heavy` (docs/testing.md)
# so it stays under 2 minutes on 2 cores; `make test` runs them all. Marked here by file or by
# test id prefix, so a new test in a listed file is marked too. A new test that builds C++ or
# starts a judge, runner, worker, linter or server goes in a `judge` file or carries the mark.
JUDGE_FILES = (
    "tests/verifier/test_build_cuda.py", "tests/verifier/test_build_pch.py", "tests/verifier/test_bundle.py",
    "tests/verifier/test_checks.py", "tests/verifier/test_cheat_suite.py",
    "tests/verifier/test_cheat_suite_other_half.py", "tests/verifier/test_confine.py",
    "tests/verifier/test_judge_budget.py", "tests/verifier/test_judge_cli.py",
    "tests/verifier/test_judge_shared_baseline.py", "tests/verifier/test_judge_compile_pool.py",
    "tests/verifier/test_judge_server.py", "tests/verifier/test_kernel_time.py", "tests/verifier/test_no_django.py",
    "tests/verifier/test_profile_driver_pinning.py", "tests/verifier/test_runner_failures.py",
    "tests/verifier/test_runner_start.py", "tests/verifier/test_sandbox.py", "tests/verifier/test_timing_clocks.py",
    "tests/evaluator/test_clang_tidy.py", "tests/evaluator/test_demo_archive.py", "tests/evaluator/test_lint_cache.py",
    "tests/evaluator/test_worker.py", "tests/evaluator/test_worker_cpu_by_process.py",
    "tests/evaluator/test_worker_overlap.py", "tests/evaluator/test_worker_phases.py",
    "tests/evaluator/test_worker_priority.py",
    "tests/search/test_warmup.py", "tests/kernels/test_deploy_settings.py",
)
# By test id prefix: the claims of worker_judge_threads_2026_12_01.json, which keep the tier their
# own file had until issue #36 merged it into the module below, though they only read that fixture.
GPU_HOST_WORKER_RUNS = "tests/evaluator/test_worker_runs_on_gpu_hosts.py::"
JUDGE_TESTS = tuple(GPU_HOST_WORKER_RUNS + name for name in (
    "test_a_compile_pool_failed_every_honest_kernel_and_compiling_in_the_judge_passes_them",
    "test_one_thread_a_judge_takes_less_than_half_the_cpu",
    "test_all_42_finished_with_cold_builds_and_408_an_hour_after_the_cold_start",
    "test_the_builds_are_now_half_the_hosts_cpu_and_the_judges_a_twentieth",
    "test_every_verdict_on_2_4_1_equals_the_rows_earlier_one_but_an_old_false_failure",
))
JUDGE_FIXTURES = {"judge_server", "live_server"}
# In-process but CPU-heavy: the real embedding model, password hashing (test_accounts.py hashes
# in nearly every test), fuzzing, upload bombs, archives imported at several sizes.
HEAVY_TESTS = (
    "tests/accounts/test_accounts.py", "tests/kernels/test_query_counts.py",
    # the worker's full documents of the sample's rows (files of their own until issue #36):
    # imports of the sample, signature checks
    *(GPU_HOST_WORKER_RUNS + name for name in (
        "test_the_full_documents_", "test_after_the_import_", "test_86_rows_finished_with_harness_2_4_0",
        "test_the_2_4_0_documents_left_out", "test_the_86_are_every_shipped_2_4_0_record",
        "test_the_42_rows_queued_finished", "test_verdicts_and_flags_are_the_rows_earlier_runs",
        "test_the_60_rows_queued_finished", "test_verdicts_and_flags_against_each_rows_previous_latest_run",
        "test_the_two_2_4_1_calls_signed_a_record")),
    "tests/search/test_views.py::test_build_index_and_build_map_commands", "tests/search/test_search.py",
    "tests/search/test_embedding.py::test_the_real_model_loads_offline", "tests/faults/",
    "tests/accounts/test_account_security.py::test_one_user_name_is_locked",
    "tests/accounts/test_account_security.py::test_admin_sign_in_is_locked_after_30",
    "tests/accounts/test_accounts.py::test_sign_in_stops_trying_passwords_after_30",
    "tests/evaluator/test_upload_security.py", "tests/kernels/test_fuzz_ingest.py",
    "tests/kernels/test_access.py::test_security_headers_and_csp_on_pages_and_api[/search/",
    "tests/kernels/test_access.py::test_security_headers_and_csp_on_pages_and_api[/api/search/",
    "tests/kernels/test_screening_scan.py::test_fast_scan_is_the_harness_scan",
    "tests/kernels/test_ingest.py::test_a_bad_row_after_many_good_batches",
)


def _mark_the_check_tier(items):
    for item in items:
        if (item.nodeid.split("::")[0] in JUDGE_FILES or item.nodeid.startswith(JUDGE_TESTS)
                or JUDGE_FIXTURES & set(getattr(item, "fixturenames", ()))):
            item.add_marker(pytest.mark.judge)
        if item.nodeid.startswith(HEAVY_TESTS):
            item.add_marker(pytest.mark.heavy)


@pytest.hookimpl(tryfirst=True)  # before -m selects by the marks added here
def pytest_collection_modifyitems(config, items):
    _mark_the_check_tier(items)
    # Slow tests first, from the files with the most of them (the cheat suite, the worker): under
    # pytest-xdist (make test) a long file started last leaves the other workers idle at the end.
    # The sort is stable: the order is otherwise the collection's.
    slow = Counter(item.path for item in items if item.get_closest_marker("slow"))
    items.sort(key=lambda item: (item.get_closest_marker("slow") is None, -slow[item.path]))
    leave_out = []
    if not SAMPLE_ARCHIVE.exists():
        leave_out += [item for item in items if SHARED_SAMPLE_FIXTURES & set(getattr(item, "fixturenames", ()))]
    if _on_postgresql():
        # The PostgreSQL pass (make test-postgres) is for what can differ there: queries, storage
        # limits, transactions. A test that never touches the database ran in the SQLite pass.
        leave_out += [item for item in items if not _uses_the_database(item)]
    if leave_out:
        config.hook.pytest_deselected(items=leave_out)
        items[:] = [item for item in items if item not in set(leave_out)]


def pytest_terminal_summary(terminalreporter):
    if SAMPLE_ARCHIVE.exists():
        terminalreporter.write_line(f"shared-sample tests: ran, on {SAMPLE_ARCHIVE}")
    else:
        terminalreporter.write_line(f"shared-sample tests (fixtures sample_path, sample_rows): deselected, "
                                    f"{SAMPLE_ARCHIVE} is not there")
    if _on_postgresql():
        terminalreporter.write_line("PostgreSQL pass: tests that use no database were left out (the SQLite pass ran them)")


@pytest.fixture(autouse=True)
def _expensive_limits_out_of_the_way(settings):
    """The cost budget and the per-process cap on expensive requests (archive_site/security.py) count
    across tests in one process, so the many requests of the suite's one test client would be refused
    depending on the order tests run in. They are lifted here; tests/kernels/test_expensive_limits.py
    sets them back and checks them."""
    settings.EXPENSIVE_UNITS_PER_MINUTE_ANON = settings.EXPENSIVE_UNITS_PER_MINUTE_USER = 10**9
    settings.EXPENSIVE_CONCURRENCY = 0


@pytest.fixture(scope="session", autouse=True)
def harness_build_dir() -> str:
    """One C++ extension build cache for every test and every process they start (the judge, the
    worker, bundles told so): builds are keyed by code hash, flags and torch version, so each
    extension is built once, and a cache left by an earlier run is reused safely. Set
    VERIFIER_BUILD_DIR (or VERIFIER_TEST_BUILD_DIR) to a fresh folder for a cold run."""
    from verifier.core import build, environ_get

    path = environ_get("VERIFIER_TEST_BUILD_DIR") or build.default_build_dir()
    os.environ["VERIFIER_TEST_BUILD_DIR"] = os.environ["VERIFIER_BUILD_DIR"] = path
    # One precompiled torch/extension.h for the tests that build into folders of their own too
    # (verifier/core/build_pch.py): it is what makes a CPU build take seconds instead of half a minute.
    if environ_get("VERIFIER_PCH_DIR") is None:
        os.environ["VERIFIER_PCH_DIR"] = path.rstrip(os.sep) + "-pch"
    # Lints too, by everything that goes into them (verifier/clang_tidy_run.py): a source linted
    # by several tests (the demo builder's, the candidates') parses torch's headers once.
    if environ_get("VERIFIER_LINT_CACHE_DIR") is None:
        os.environ["VERIFIER_LINT_CACHE_DIR"] = path.rstrip(os.sep) + "-lint"
    return path


@pytest.fixture(scope="session")
def judge_server(harness_build_dir):
    """A judge server for this test process (verifier/core/judge_server.py): the sandboxed judges the
    tests start from this repository then skip their own torch import (about 2.4 CPU seconds each).
    test_sandbox.py keeps starting a new interpreter, the path without a server."""
    from verifier.core import environ_names
    from verifier.core import judge_server as server

    proc = server.serve_in_background()
    yield os.environ[server.SOCKET_VARIABLE]
    for name in environ_names(server.SOCKET_VARIABLE):
        os.environ.pop(name, None)
    proc.kill()
    proc.wait()


@pytest.fixture(scope="session")
def archive_rows() -> list[dict]:
    """The test archive's rows (do not mutate: copy a row with dict(row, ...))."""
    return archive_fixture.archive_rows()


@pytest.fixture(scope="session")
def archive_path(archive_rows, tmp_path_factory) -> Path:
    """The test archive as one JSONL file in the published archive's schema."""
    return archive_fixture.write_jsonl(tmp_path_factory.mktemp("archive") / "test_archive.jsonl", archive_rows)


@pytest.fixture(scope="session")
def sample_path() -> Path:
    """The shared sample: 102 real rows of the AI CUDA Engineer Archive (only where ../shared is)."""
    return SAMPLE_ARCHIVE


@pytest.fixture(scope="session")
def sample_rows(sample_path) -> list[dict]:
    return [json.loads(line) for line in sample_path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="session")
def cuda_l1_sample_paths() -> dict[str, Path]:
    """CUDA-L1's published kernels, 24 rows for each of three GPUs (only where ../shared is)."""
    return {gpu: CUDA_L1_SUBSETS / f"{gpu}_subset.jsonl" for gpu in ("h100", "a100", "l40")}


@pytest.fixture(scope="session")
def kernelbench_problems_path() -> Path:
    """Today's KernelBench problem set, level1/ level2/ level3/ (only where ../shared is)."""
    return KERNELBENCH_PROBLEMS


@pytest.fixture(autouse=True)
def _data_dir(tmp_path, settings):
    # Derived files (index, map, media) of a test go to its own folder.
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir()
