"""Judges forked by a judge server (verifier/core/judge_server.py) are what the sandbox would have
started: the same document, their own session and limits, killed at the timeout, and nothing of
the caller's environment in the judge or in the runner it forks."""
import json
import secrets
import sys
from pathlib import Path

from verifier.core import build as harness_build
from verifier.core import judge_server as server
from verifier.core.sandbox import run_harness_isolated

from .memory_searcher import SEARCHER

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "verifier" / "cheat_suite"
RELU = SUITE / "tasks" / "relu_cpu.py"


def judge_argv(candidate, *extra):
    return [sys.executable, "-m", "verifier.core.judge", "--reference", str(RELU), "--candidate", str(candidate),
            "--device", "cpu", "--no-timing", "--seeds", "1,2", "--build-dir", harness_build.default_build_dir(),
            *extra]


def test_a_served_judge_gives_the_document_a_new_one_gives(judge_server):
    argv = judge_argv(SUITE / "candidates" / "cheat_alias_input.py")
    assert judge_server and server.serves(argv, str(ROOT))
    served = run_harness_isolated(argv, cwd=ROOT, timeout_s=300)
    assert served["sandbox"]["returncode"] == 0 and served["verdict"] == "failed"
    assert {"output_aliases_input", "input_mutation"} <= {f["name"] for f in served["flags"]}
    assert all(v is True or not str(v).startswith("not enforced") for v in served["checks"]["confinement"].values())


def test_a_bundles_own_verifier_is_never_served(tmp_path):
    (tmp_path / "verifier").mkdir()
    assert not server.serves(judge_argv("x.py"), str(tmp_path))
    assert server.serves(judge_argv("x.py"), str(ROOT)) and not server.serves(["python", "x.py"], None)


def test_a_served_judge_is_killed_at_the_timeout(judge_server, tmp_path):
    hang = tmp_path / "hang.py"
    hang.write_text("import time\nimport torch.nn as nn\ntime.sleep(600)\n"
                    "class ModelNew(nn.Module):\n    def forward(self, x):\n        return x\n")
    doc = run_harness_isolated(judge_argv(hang), cwd=ROOT, timeout_s=15)
    assert doc["sandbox"]["timed_out"] and doc["flags"][0]["name"] == "timeout"
    assert doc["sandbox"]["returncode"] == -9 and doc["sandbox"]["wall_s"] < 30


def test_nothing_of_the_callers_environment_reaches_a_served_judge_or_its_runner(judge_server, tmp_path,
                                                                                   monkeypatch):
    token = "kb-test-secret-" + secrets.token_hex(16)
    half = len(token) // 2
    candidate = tmp_path / "searcher.py"
    candidate.write_text(SEARCHER % (token[:half].encode().hex(), token[half:].encode().hex()))
    monkeypatch.setenv("SECRET_TOKEN", token)
    monkeypatch.setenv("DATABASE_URL", "postgres://u:%s@h/db" % token)
    doc = run_harness_isolated(judge_argv(candidate), cwd=ROOT, timeout_s=300)
    line = next(l for l in doc["log"].splitlines() if l.startswith("SEARCHED "))
    seen = json.loads(line[len("SEARCHED "):])
    assert seen["found"] == [] and not {"SECRET_TOKEN", "DATABASE_URL"} & set(seen["environ"])
    assert "verifier.core.judge_server" in seen["cmdline"]  # forked from the server, through the served judge
    assert all(t["passed"] for t in doc["trials"])
