"""KernelBench's leaderboard folder and evaluation run folder, and archives read by hub id."""
import json
import shutil
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from kernels.ingest.errors import IngestError
from kernels.models import Claim, Kernel, Task
from kernels.services import archive_import_file

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "archive_formats"
LEADERBOARD = FIXTURES / "kernelbench_leaderboard"
RUN = FIXTURES / "kernelbench_run" / "fixture_run"
BASELINE = FIXTURES / "kernelbench_run" / "baseline_time_torch.json"
PROBLEMS = FIXTURES / "kernelbench_problems"


def test_the_leaderboard_imports_each_listed_solution_with_its_model_as_experiment():
    summary = archive_import_file(path=LEADERBOARD)
    data = json.loads((LEADERBOARD / "data.json").read_text())
    assert (summary.schema, summary.source_archive, summary.rows_read) == (
        "kernelbench_leaderboard", "KernelBench leaderboard", sum(map(len, data.values())))
    # The third ReLU entry names a solution file the folder does not hold: skipped, reported.
    assert [(e.file, e.row, e.field) for e in summary.skipped] == [
        ("kernelbench_leaderboard", "data.json 'Level 1: 19_ReLU' entry 3", "file")]
    assert summary.kernels_added == 3
    for key, entries in data.items():
        for entry in entries[:2]:
            solution = LEADERBOARD / "solutions" / f"{entry['file']}.py"
            if not solution.exists():
                continue
            claim = Claim.objects.get(kernel__code=solution.read_text())
            assert (claim.experiment, claim.speedup_eager, claim.hardware) == (
                entry["display_name"], entry["torch_speedup"], "NVIDIA L40S")
            assert claim.task_version.reference_code == (LEADERBOARD / "problems" / "l1_p{}.py".format(
                key.split(": ")[1].split("_")[0])).read_text()
    # raw_data.json adds the compile speedup and runtimes of the solutions it lists.
    top = Kernel.objects.get(claims__experiment="model-a", task__task_number=19)
    assert (top.claimed_speedup_compile, top.claimed_runtime_ms, top.claimed_native_runtime_ms) == (2.5, 0.02, 0.025)
    assert Task.objects.get(task_number=20).op_name == "20_LeakyReLU"


def test_a_leaderboard_file_name_that_is_a_path_is_refused(tmp_path):
    folder = tmp_path / "assets"
    shutil.copytree(LEADERBOARD, folder)
    data = json.loads((folder / "data.json").read_text())
    data["Level 1: 19_ReLU"][0]["file"] = "../../../etc/passwd"
    (folder / "data.json").write_text(json.dumps(data))
    with pytest.raises(IngestError, match=r"entry 1, field 'file': is not a file name"):
        archive_import_file(path=folder)
    assert Kernel.objects.count() == 0


def test_a_run_imports_every_result_with_speedups_from_the_baseline_file():
    summary = archive_import_file(path=RUN, problems=PROBLEMS, baseline=BASELINE)
    assert (summary.schema, summary.source_archive) == ("kernelbench_run", "KernelBench run fixture_run")
    assert [(e.row, e.field) for e in summary.skipped] == [("eval_results.json problem 19 result 2", "(kernel file)")]
    assert summary.kernels_added == 3
    fast = Claim.objects.get(name="fixture_run_l1_p19_s0")
    assert fast.claimed_correct and fast.runtime_ms == 0.02 and fast.eager_runtime_ms == 0.03
    assert fast.speedup_eager == pytest.approx(0.03 / 0.02)
    assert fast.hardware == "NVIDIA H100 80GB HBM3"  # named by the baseline file
    assert fast.experiment == "fixture_run"
    wrong = Kernel.objects.get(name="fixture_run_l1_p19_s1")
    assert not wrong.claimed_correct and wrong.claimed_speedup_native is None
    assert "Output mismatch" in wrong.error_text
    assert fast.task_version.reference_code == (PROBLEMS / "level1" / "19_ReLU.py").read_text()


def test_a_run_needs_the_problem_set_it_was_evaluated_with():
    with pytest.raises(ValueError, match="pass --problems"):
        archive_import_file(path=RUN)
    with pytest.raises(CommandError, match="pass --problems"):
        call_command("import_archive", str(RUN / "eval_results.json"), "--no-progress")


def test_the_results_format_before_october_2025_one_result_per_problem(tmp_path):
    run = tmp_path / "old_run"
    shutil.copytree(RUN, run)
    results = json.loads((run / "eval_results.json").read_text())
    (run / "eval_results.json").write_text(json.dumps({problem: entries[0] for problem, entries in results.items()}))
    summary = archive_import_file(path=run, problems=PROBLEMS, baseline=BASELINE)
    assert summary.kernels_added == 2 and not summary.skipped


def test_a_hub_id_offline_is_a_clear_error_and_writes_nothing(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(CommandError) as caught:
        call_command("import_archive", "SakanaAI/AI-CUDA-Engineer-Archive-not-cached", "--no-progress")
    message = str(caught.value)
    assert "cannot load this dataset from the HuggingFace hub" in message and "HF_HUB_OFFLINE is set" in message
    assert Kernel.objects.count() == 0


def test_the_hub_reader_reads_what_load_dataset_returns(tmp_path, archive_rows):
    # load_dataset also takes a folder of data files: the same call the hub path makes, offline.
    from kernels.ingest.hub import load_hub_dataset

    folder = tmp_path / "owner"
    folder.mkdir()
    (folder / "train.jsonl").write_text("".join(json.dumps(row) + "\n" for row in archive_rows[:3]))
    splits = load_hub_dataset(str(folder))
    assert [name for name, _ in splits] == ["train"] and len(splits[0][1]) == 3
