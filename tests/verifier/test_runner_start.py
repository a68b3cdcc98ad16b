"""How the judge starts its runner (verifier/core/runner_start.py): the judge keeps only its own
environment variables, then forks the runner with torch imported. A candidate that searches the
runner's memory for what the judge's caller had in its environment finds nothing."""
import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

from verifier.core import build as harness_build
from verifier.core import RENAMED_VARIABLES, environ_get, runner_start

from .memory_searcher import SEARCHER

ROOT = Path(__file__).resolve().parents[2]
RELU = ROOT / "verifier" / "cheat_suite" / "tasks" / "relu_cpu.py"


def test_the_judge_keeps_only_its_own_variables():
    given = {"PATH": "/bin", "HOME": "/h", "VERIFIER_BUILD_DIR": "/b", "JUDGE_STAGE_FILE": "/s",
             "TORCH_EXTENSIONS_DIR": "/t", "CUDA_VISIBLE_DEVICES": "0", "PYTHONPATH": "/p", "OMP_NUM_THREADS": "1",
             "DATABASE_URL": "postgres://u:p@h/db", "SECRET_KEY": "s", "AWS_SECRET_ACCESS_KEY": "a",
             "REDIS_URL": "redis://h", "DJANGO_SETTINGS_MODULE": "archive_site.settings", "HF_TOKEN": "t"}
    kept = runner_start.judge_environment(given)
    assert set(kept) == {"PATH", "HOME", "VERIFIER_BUILD_DIR", "JUDGE_STAGE_FILE", "TORCH_EXTENSIONS_DIR",
                         "CUDA_VISIBLE_DEVICES", "PYTHONPATH", "OMP_NUM_THREADS"}


def test_the_judge_keeps_the_verifiers_variables_under_both_names_and_no_lookalike():
    """Each variable of RENAMED_VARIABLES reaches the judge under its new name and, for one
    release, its old one; a name that only looks like one does not (the old names' prefixes aside),
    and none of them reaches the runner."""
    given = {name: "/x" for pair in RENAMED_VARIABLES.items() for name in pair}
    lookalikes = {"VERIFIER_SECRET": "s", "JUDGE_TOKEN": "t", "CHEAT_SUITE_JOBS_X": "j", "JUDGE_SERVER": "j"}
    kept = runner_start.judge_environment(dict(given, **lookalikes))
    assert set(kept) == set(given)
    assert not [name for name in given if name in runner_start._PASSED_VARIABLES
                or name.startswith(runner_start._PASSED_PREFIXES)]


def test_a_forked_runner_holds_nothing_of_the_judges_caller(tmp_path):
    token = "kb-test-secret-" + secrets.token_hex(16)
    candidate = tmp_path / "searcher.py"
    half = len(token) // 2
    candidate.write_text(SEARCHER % (token[:half].encode().hex(), token[half:].encode().hex()))
    env = dict(os.environ, SECRET_TOKEN=token, DATABASE_URL="postgres://u:%s@h/db" % token, PYTHONPATH=str(ROOT))
    build_dir = environ_get("VERIFIER_TEST_BUILD_DIR") or harness_build.default_build_dir()
    done = subprocess.run([sys.executable, "-m", "verifier.core.judge", "--reference", str(RELU), "--candidate",
                           str(candidate), "--device", "cpu", "--no-timing", "--seeds", "1,2", "--build-dir",
                           build_dir], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads(done.stdout)
    line = next(l for l in doc["log"].splitlines() if l.startswith("SEARCHED "))
    seen = json.loads(line[len("SEARCHED "):])
    # forked from the judge (its command line), not a new interpreter: torch came imported
    assert "verifier.core.judge" in seen["cmdline"] and "verifier.core.runner" not in seen["cmdline"], seen["cmdline"]
    assert seen["found"] == [], seen["found"]
    assert not {"DATABASE_URL", "SECRET_TOKEN"} & set(seen["environ"])
    set_by_the_judge = {"PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "TMPDIR", "TORCH_EXTENSIONS_DIR"}
    assert all(k in runner_start._PASSED_VARIABLES or k.startswith(runner_start._PASSED_PREFIXES)
               or k in set_by_the_judge for k in seen["environ"]), seen["environ"]
    # and the run itself went as it goes with a fresh runner: the searcher is a plain ReLU
    assert all(t["passed"] for t in doc["trials"])
