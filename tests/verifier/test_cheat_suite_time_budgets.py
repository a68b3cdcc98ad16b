"""The cheat suite's timing budgets. The judge cuts a timed batch to fit its budget (6 rounds
planned on CUDA), down to 2 calls; an attack that cheats only once 3 of its last 4 calls came back
to back then never cheats, and its entry misses on a slow host (docs/h200_runs.md, "Harness
2.9.1": batches of 2 at 2 s on the relu task, ~150 ms a call of every implementation). Such
entries carry a budget of their own (manifest `time_budget_s`) that keeps 3 calls a batch at up
to 330 ms a call of every implementation.

The candidates are parsed (ast), never imported: they are hostile code.
"""
import ast
from pathlib import Path

from verifier import gpu_campaign

from .cheat_suite_halves import ENTRIES

CANDIDATES = Path(__file__).resolve().parents[2] / "verifier" / "cheat_suite" / "candidates"
RHYTHM_BUDGET_S = 6.0  # 3 calls x 6 rounds x 330 ms


def cheats_on_the_rhythm(source: str) -> bool:
    """Whether the candidate keeps the rhythm detector's answer (``x = _RHYTHM.enter()``) to decide
    when to cheat; one that only calls it to keep the detector's state does not."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            func = node.value.func
            if isinstance(func, ast.Attribute) and func.attr == "enter" and \
                    isinstance(func.value, ast.Name) and func.value.id == "_RHYTHM":
                return True
    return False


def test_every_timed_attack_gated_on_the_rhythm_gets_a_budget_for_batches_of_three():
    gated = [e for e in ENTRIES if e.get("timing") and e["file"].endswith(".py")
             and cheats_on_the_rhythm((CANDIDATES / e["file"]).read_text())]
    assert len(gated) >= 3, [e["name"] for e in gated]
    for entry in gated:
        assert gpu_campaign.timed_budget(entry, 2.0) >= RHYTHM_BUDGET_S, entry["name"]


def test_the_detector_reads_the_answer_it_keeps_not_a_bare_call():
    assert cheats_on_the_rhythm("timed = _RHYTHM.enter()\n")
    assert not cheats_on_the_rhythm("_RHYTHM.enter()\n")
    assert not cheats_on_the_rhythm("timed = other.enter()\n")


def test_an_entry_is_timed_with_the_larger_of_its_budget_and_the_suites():
    assert gpu_campaign.timed_budget({"time_budget_s": 6}, 2.0) == 6.0
    assert gpu_campaign.timed_budget({"time_budget_s": 1}, 2.0) == 2.0
    assert gpu_campaign.timed_budget({}, 5.0) == 5.0
