"""Finished lints are kept by everything that goes into them (verifier/clang_tidy_run.py): the same
lint again is read back without running clang-tidy; a change to the source, the binary or the kind
misses; a lint that timed out is never kept; the worker keeps its lints in its own folder."""
import json
import subprocess
import sys
import time

import pytest

from verifier import clang_tidy_run

SOURCE = "int f(long x) { int y = x; return y; }\n"


def _fake_clang_tidy(tmp_path, name="clang-tidy", body="print('kernel.cpp:1:25: warning: narrowing')"):
    fake = tmp_path / name
    fake.write_text("#!%s\nimport sys\n%s\n" % (sys.executable, body))
    fake.chmod(0o755)
    return fake


def _counting_run(monkeypatch):
    calls = []
    real = subprocess.run

    def run(command, **kwargs):
        calls.append(command)
        return real(command, **kwargs)

    monkeypatch.setattr(clang_tidy_run.subprocess, "run", run)
    return calls


def test_the_same_lint_is_read_back_and_any_change_misses(tmp_path, monkeypatch):
    fake = _fake_clang_tidy(tmp_path)
    monkeypatch.setattr(clang_tidy_run, "clang_tidy_binary", lambda: str(fake))
    calls = _counting_run(monkeypatch)
    cache = tmp_path / "lints"
    first = clang_tidy_run.run_clang_tidy(SOURCE, kind="cuda_forward", cuda_home=None, cache_dir=cache)
    again = clang_tidy_run.run_clang_tidy(SOURCE, kind="cuda_forward", cuda_home=None, cache_dir=cache)
    assert first == again == {"stdout": "kernel.cpp:1:25: warning: narrowing\n", "stderr": "", "errored": False}
    assert len(calls) == 1 and len(list(cache.rglob("*.json"))) == 1
    clang_tidy_run.run_clang_tidy(SOURCE + "\n", kind="cuda_forward", cuda_home=None, cache_dir=cache)
    assert len(calls) == 2  # another source
    other = _fake_clang_tidy(tmp_path, "clang-tidy-2", "print('other version')")
    monkeypatch.setattr(clang_tidy_run, "clang_tidy_binary", lambda: str(other))
    assert clang_tidy_run.run_clang_tidy(SOURCE, kind="cuda_forward", cuda_home=None,
                                         cache_dir=cache)["stdout"] == "other version\n"
    assert len(calls) == 3  # another binary
    clang_tidy_run.run_clang_tidy(SOURCE, kind="cuda_forward", cuda_home=None, cache_dir=None)
    assert len(calls) == 4  # no cache asked for


def test_a_lint_that_timed_out_is_not_kept_and_a_damaged_entry_is_ignored(tmp_path, monkeypatch):
    slow = _fake_clang_tidy(tmp_path, body="import time; time.sleep(30)")
    monkeypatch.setattr(clang_tidy_run, "clang_tidy_binary", lambda: str(slow))
    cache = tmp_path / "lints"
    out = clang_tidy_run.run_clang_tidy(SOURCE, kind="cuda_forward", cuda_home=None, cache_dir=cache, timeout_s=1)
    assert out["errored"] and "did not finish" in out["stderr"] and not list(cache.rglob("*.json"))
    fast = _fake_clang_tidy(tmp_path, "clang-tidy-fast")
    monkeypatch.setattr(clang_tidy_run, "clang_tidy_binary", lambda: str(fast))
    clang_tidy_run.run_clang_tidy(SOURCE, kind="cuda_forward", cuda_home=None, cache_dir=cache)
    [entry] = cache.rglob("*.json")
    entry.write_text(json.dumps({"stdout": "forged"}))  # not a lint's shape: linted again
    calls = _counting_run(monkeypatch)
    out = clang_tidy_run.run_clang_tidy(SOURCE, kind="cuda_forward", cuda_home=None, cache_dir=cache)
    assert len(calls) == 1 and out["stdout"].startswith("kernel.cpp:1:25")


def test_the_lint_is_limited_by_its_cpu_time_not_by_waiting_for_a_core(tmp_path, monkeypatch):
    """On a loaded GPU host a niced lint mostly waits for a core: its limit is CPU seconds. A lint
    that spins past them is stopped, said so, and not kept; one that waits longer is not stopped."""
    spinning = _fake_clang_tidy(tmp_path, body="while True: pass")
    monkeypatch.setattr(clang_tidy_run, "clang_tidy_binary", lambda: str(spinning))
    cache = tmp_path / "lints"
    started = time.monotonic()
    out = clang_tidy_run.run_clang_tidy(SOURCE, kind="cuda_forward", cuda_home=None, cache_dir=cache,
                                        cpu_limit_s=1, timeout_s=120)
    assert out["errored"] and "used more than 1 s of CPU" in out["stderr"], out
    assert time.monotonic() - started < 60 and not list(cache.rglob("*.json"))
    waiting = _fake_clang_tidy(tmp_path, "clang-tidy-waits", "import time; time.sleep(3); print('kernel.cpp:1:1: warning: late')")
    monkeypatch.setattr(clang_tidy_run, "clang_tidy_binary", lambda: str(waiting))
    out = clang_tidy_run.run_clang_tidy(SOURCE, kind="cuda_forward", cuda_home=None, cache_dir=cache,
                                        cpu_limit_s=1, timeout_s=120)
    assert out == {"stdout": "kernel.cpp:1:1: warning: late\n", "stderr": "", "errored": False}
    killed = _fake_clang_tidy(tmp_path, "clang-tidy-killed", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    monkeypatch.setattr(clang_tidy_run, "clang_tidy_binary", lambda: str(killed))
    out = clang_tidy_run.run_clang_tidy(SOURCE + " ", kind="cuda_forward", cuda_home=None, cache_dir=cache)
    assert out["errored"] and "was killed (SIGKILL" in out["stderr"]  # not claimed to be the CPU limit
    assert len(list(cache.rglob("*.json"))) == 1  # only the finished lint was kept


@pytest.mark.django_db
def test_the_environment_names_the_cache_and_the_worker_uses_its_own_folder(tmp_path, monkeypatch, settings):
    from evaluator.worker_profiles import profile_refresh_clang_tidy
    from tests.kernels.kernel_factories import make_kernel, make_task

    fake = _fake_clang_tidy(tmp_path)
    monkeypatch.setattr(clang_tidy_run, "clang_tidy_binary", lambda: str(fake))
    monkeypatch.setenv(clang_tidy_run.LINT_CACHE_VARIABLE, str(tmp_path / "from-env"))
    clang_tidy_run.run_clang_tidy(SOURCE, kind="cuda_forward", cuda_home=None)
    assert len(list((tmp_path / "from-env").rglob("*.json"))) == 1
    settings.LINT_CACHE_DIR = tmp_path / "worker-lints"
    kernel = make_kernel(make_task(level=1, number=1), 0)
    profile = profile_refresh_clang_tidy(kernel_id=kernel.id)
    assert profile.parsed["errored"] in (True, False)
    assert len(list((tmp_path / "worker-lints").rglob("*.json"))) == 1
    assert str(settings.LINT_CACHE_DIR) != str(settings.BUILD_CACHE_DIR)


def test_the_worker_never_caches_lints_where_a_confined_runner_may_write(tmp_path, settings):
    from evaluator.worker_profiles import lint_cache_dir

    settings.BUILD_CACHE_DIR = tmp_path / "builds"
    settings.LINT_CACHE_DIR = tmp_path / "builds" / "lints"
    assert lint_cache_dir() is None
    settings.LINT_CACHE_DIR = tmp_path / "builds"
    assert lint_cache_dir() is None
    settings.LINT_CACHE_DIR = tmp_path / "lints"
    assert lint_cache_dir() == (tmp_path / "lints").resolve()
