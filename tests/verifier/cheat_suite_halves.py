"""The CPU cheat suite in two halves, one per test file (test_cheat_suite.py and
test_cheat_suite_other_half.py), so that pytest-xdist (`--dist loadfile`, a file to a worker)
runs them on both workers at once instead of the whole suite on one: every CPU entry is in
exactly one half (test_cheat_suite.py checks it), so none runs twice.

The halves alternate through the entries that build C++ (most of the suite's cost on a fresh
clone), then through those that do not, then through the timed ones, so each half gets about as
many builds, judges and timing runs. The half that starts with builds builds the precompiled
header; the other starts with Python candidates while it does."""
import concurrent.futures as cf
import json
import os
from pathlib import Path

from verifier import gpu_campaign
from verifier.core import build as harness_build
from verifier.core import environ_get

ROOT = Path(__file__).resolve().parents[2]
ENTRIES = gpu_campaign.load_manifest()
CPU_ENTRIES = [e for e in ENTRIES if "cpu" in e["devices"]]


def _builds_cpp(entry):
    return entry["kind"] == "cuda_forward" or entry["file"].endswith(".cpp")


def halves():
    """Two lists of CPU entries, each in the order its fixture runs them (untimed, then timed)."""
    out = ([], [])
    untimed = [e for e in CPU_ENTRIES if not e.get("timing")]
    groups = ([e for e in untimed if _builds_cpp(e)], [e for e in untimed if not _builds_cpp(e)],
              [e for e in CPU_ENTRIES if e.get("timing")])
    for group in groups:
        for i, entry in enumerate(group):
            out[i % 2].append(entry)
    # the second half starts on Python candidates while the first builds the precompiled header
    first_python = [e for e in out[1] if not e.get("timing") and not _builds_cpp(e)]
    rest = [e for e in out[1] if e not in first_python]
    return out[0], first_python + rest


def run_half(entries):
    """Every entry once, sharing one extension build cache: the untimed ones first
    (CHEAT_SUITE_JOBS at a time, default one: the other half runs on the other worker), then
    the timed ones one at a time (as gpu_campaign's phase B does), so a judge's clock check is not
    measuring another judge of this half."""
    build_dir = environ_get("VERIFIER_TEST_BUILD_DIR") or harness_build.default_build_dir()
    env = dict(os.environ, PYTHONPATH=str(ROOT), MAX_JOBS="1")

    def run(entry):
        ref, cand, fn = gpu_campaign.entry_paths(entry, "cpu")
        argv = gpu_campaign.harness_argv(ref, cand, entry["kind"], "cpu", build_dir, fn, bool(entry.get("timing")),
                                         ["--no-compile", "--time-budget", str(gpu_campaign.timed_budget(entry, 2))])
        return entry["name"], gpu_campaign.run_one(argv, 900, env)

    untimed = [e for e in entries if not e.get("timing")]
    with cf.ThreadPoolExecutor(max_workers=int(environ_get("CHEAT_SUITE_JOBS", "1"))) as pool:
        docs = dict(pool.map(run, untimed))
    docs.update(run(e) for e in entries if e.get("timing"))
    return docs


def check_entry(entry, doc):
    """Every cheat and attack failed with its expected flag; every honest kernel passed cleanly."""
    result = gpu_campaign.judge(entry, doc)
    detail = json.dumps({"verdict": doc.get("verdict"), "error": doc.get("error"),
                         "flags": [(f["name"], f["blocking"], f["evidence"][:300]) for f in doc.get("flags", [])]},
                        indent=1)
    assert result["ok"], detail
    for f in doc["flags"]:
        assert f["evidence"], f
    if entry.get("honest"):
        assert all(t["passed"] for t in doc["trials"])
    else:
        assert doc["verdict"] == "failed", detail
        expected = entry.get("expect", []) + entry.get("expect_any", [])
        assert any(f["blocking"] for f in doc["flags"] if f["name"] in expected), detail
