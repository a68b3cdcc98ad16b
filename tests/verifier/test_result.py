"""verifier/core/result.py owns the document: the keys every producer writes and every reader reads."""
import json

import pytest

from verifier.core import result


def test_failure_document_has_every_key_of_a_document():
    doc = result.failure_document("failed", "the runner died of SIGSEGV", "segfault", log="x" * 50000)
    assert set(result.new_document()) <= set(doc)
    assert doc["verdict"] == "failed" and doc["error"] is None and doc["result_version"] == result.RESULT_VERSION
    assert doc["flags"] == [{"name": "segfault", "blocking": True, "evidence": "the runner died of SIGSEGV",
                             "source": "judge"}]
    assert len(doc["log"]) == result.MAX_LOG_CHARS
    assert result.failure_document("error", "no GPU")["error"] == "no GPU"


def test_decide_passes_only_clean_complete_runs():
    doc = result.new_document()
    assert result.decide(doc) == "failed"  # no trial ran
    doc["trials"] = [{"passed": True}, {"passed": True}]
    assert result.decide(doc) == "passed"
    result.add_flag(doc["flags"], result.flag("threads_spawned", False, "advisory"))
    assert result.decide(doc) == "passed"
    result.add_flag(doc["flags"], result.flag("threads_spawned", True, "now blocking"))
    assert doc["flags"][0]["occurrences"] == 2 and doc["flags"][0]["blocking"]
    assert result.decide(doc) == "failed"


def test_dumps_is_strict_json_and_loads_refuses_what_is_not_a_document():
    doc = result.new_document()
    doc.update(verdict="passed", timings={"candidate": {"median_ms": float("nan")}})
    text = result.dumps(doc)
    assert json.loads(text)["timings"]["candidate"]["median_ms"] is None
    assert result.loads(text)["verdict"] == "passed"
    for bad in ('[]', '{"verdict": "great"}', '{"verdict": "passed", "flags": {}}'):
        with pytest.raises(ValueError):
            result.loads(bad)


def test_readers():
    doc = {"timings": {"candidate": {"median_ms": 2.0}, "compile": {"skipped": "off"}}, "speedup": {"vs_eager": 3},
           "trials": [{"max_abs_err": 1e-3}, {"max_abs_err": 2e-3}, {"max_abs_err": True}],
           "flags": [{"name": "a"}], "task_flags": [{"name": "b"}]}
    assert result.median_ms(doc, "candidate") == 2.0 and result.median_ms(doc, "compile") is None
    assert result.speedup(doc, "vs_eager") == 3.0 and result.speedup(doc, "vs_compile") is None
    assert result.max_over_trials(doc, "max_abs_err") == 2e-3
    assert result.all_flags(doc) == [{"name": "a"}, {"name": "b", "task_flag": True}]
