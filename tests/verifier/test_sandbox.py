"""The sandbox turns crashes, hangs and memory hogs into recorded results and never
takes the caller down."""
import sys
from pathlib import Path

import pytest

from verifier.core import build as harness_build
from verifier.core import environ_names, judge_server
from verifier.core.sandbox import run_harness_isolated

ROOT = Path(__file__).resolve().parents[2]
RELU = ROOT / "verifier" / "cheat_suite" / "tasks" / "relu.py"


@pytest.fixture(autouse=True)
def new_interpreters(monkeypatch):
    """These tests cover the sandbox starting the judge itself (a worker with no judge server);
    tests/verifier/test_judge_server.py covers judges forked by a server."""
    for name in environ_names(judge_server.SOCKET_VARIABLE):
        monkeypatch.delenv(name, raising=False)


def harness_argv(candidate, *extra):
    return [sys.executable, "-m", "verifier.core.judge", "--reference", RELU, "--candidate", candidate,
            "--kind", "model_new", "--device", "cpu", "--no-timing", "--seeds", "1,2",
            "--build-dir", harness_build.default_build_dir(), *extra]


def write(tmp_path, name, body):
    path = tmp_path / name
    path.write_text("import torch\nimport torch.nn as nn\n" + body +
                    "\nclass ModelNew(nn.Module):\n    def forward(self, x):\n" + "        " +
                    "\n        ".join(body_forward_lines(name)) + "\n")
    return path


def body_forward_lines(name):
    return {
        "segv.py": ["import ctypes", "ctypes.string_at(0)", "return x"],
        "hang.py": ["return x"],
        "hog.py": ["t = torch.empty(64 << 30, dtype=torch.uint8)", "t.fill_(1)", "return x"],
    }[name]


def test_segfault_becomes_a_failed_verdict(tmp_path):
    """The runner dies; the judge, which never ran the candidate, records how."""
    doc = run_harness_isolated(harness_argv(write(tmp_path, "segv.py", "")), cwd=ROOT, timeout_s=600,
                               memory_limit_bytes=None)
    assert doc["verdict"] == "failed" and doc["sandbox"]["returncode"] == 0
    segv = next(f for f in doc["flags"] if f["name"] == "segfault")
    assert segv["blocking"] and "SIGSEGV" in segv["evidence"] and segv["source"] == "judge"


@pytest.mark.slow
def test_hang_is_killed_at_the_timeout(tmp_path):
    cand = write(tmp_path, "hang.py", "import time\ntime.sleep(3600)\n")  # hangs while loading
    # The timeout only has to outlast the judge's start-up to the candidate's load (seconds, more
    # on a busy machine); every second of it is a second this test waits.
    doc = run_harness_isolated(harness_argv(cand), cwd=ROOT, timeout_s=30, memory_limit_bytes=None)
    assert doc["verdict"] == "failed" and doc["sandbox"]["timed_out"]
    assert doc["flags"][0]["name"] == "timeout" and doc["sandbox"]["stage"] == "candidate_load"
    assert doc["sandbox"]["wall_s"] < 60


def test_memory_hog_is_a_recorded_out_of_memory_failure(tmp_path):
    doc = run_harness_isolated(harness_argv(write(tmp_path, "hog.py", "")), cwd=ROOT, timeout_s=600,
                               memory_limit_bytes=8 << 30)
    assert doc["verdict"] == "failed"
    assert any(f["name"] == "out_of_memory" for f in doc["flags"]), doc["flags"]


def test_resident_memory_watchdog_kills_a_group_that_grows_past_the_limit():
    argv = [sys.executable, "-c", "import time\nx = bytearray(1 << 30)\ntime.sleep(60)"]
    doc = run_harness_isolated(argv, timeout_s=60, memory_limit_bytes=256 << 20)
    assert doc["verdict"] == "error"  # no candidate stage was reached: not the candidate's fault
    assert doc["sandbox"]["memory_killed"] and doc["flags"][0]["name"] == "out_of_memory"


def test_a_harness_document_comes_back_with_sandbox_info(tmp_path):
    doc = run_harness_isolated(harness_argv(ROOT / "verifier" / "cheat_suite" / "candidates" /
                                            "cheat_alias_input.py"), cwd=ROOT, timeout_s=600,
                               memory_limit_bytes=None)
    assert doc["verdict"] == "failed" and doc["sandbox"]["returncode"] == 0
    assert any(f["name"] == "output_aliases_input" for f in doc["flags"])
