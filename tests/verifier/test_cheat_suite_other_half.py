"""The second half of the CPU cheat suite (tests/verifier/cheat_suite_halves.py says why it is
split; test_cheat_suite.py runs the first half and checks that the halves cover every entry once)."""
import pytest

from .cheat_suite_halves import check_entry, halves, run_half

HALF = halves()[1]


@pytest.fixture(scope="module")
def cpu_suite_docs(judge_server):
    return run_half(HALF)


@pytest.mark.slow
@pytest.mark.parametrize("entry", HALF, ids=[e["name"] for e in HALF])
def test_cpu_entry_behaves_as_expected(entry, cpu_suite_docs):
    check_entry(entry, cpu_suite_docs[entry["name"]])
