"""The task page across sources: claims per source, GPU and baseline, filtered, ranked within a
version; versions with their diff; the leaderboard's best per task version."""
import json
import re
from pathlib import Path

import pytest

from kernels.models import Claim, Task
from kernels.services import archive_import_file

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "archive_formats"


@pytest.fixture
def two_sources_two_versions(tmp_path):
    """CUDA-L1 on two GPUs, the KernelBench leaderboard, and a run on another version of task 20."""
    archive_import_file(path=FIXTURES / "cuda_l1" / "h100_tiny.jsonl")
    archive_import_file(path=FIXTURES / "cuda_l1" / "a100_tiny.jsonl")
    archive_import_file(path=FIXTURES / "kernelbench_leaderboard")
    row = json.loads((FIXTURES / "cuda_l1" / "a100_tiny.jsonl").read_text().splitlines()[1])
    pairs = {"level_id": 1, "task_id": 20, "ref_code": row["ref_code"].replace("dim = 1024", "dim = 4096"),
             "custom_code": row["custom_code"].replace("0.01f", "0.02f"), "kernel_name": "leaky_big",
             "correct": True, "speedup": 9.0, "hardware": "NVIDIA H100"}
    path = tmp_path / "bigger.jsonl"
    path.write_text(json.dumps(pairs) + "\n")
    archive_import_file(path=path, source_archive="bigger-inputs")
    return Task.objects.get(level=1, task_number=20)


def claim_rows(html: str, version: int) -> list[str]:
    table = re.search(rf'<table class="data claims" id="claims-v{version}">(.*?)</table>', html, re.S)
    return re.findall(r'<td class="name"><a href="[^"]+">([^<]+)</a>', table.group(1)) if table else []


def test_every_source_and_gpu_side_by_side_ranked_within_each_version(client, two_sources_two_versions):
    task = two_sources_two_versions
    versions = {v.label: v.number for v in task.versions.all()}
    first, added = versions["first seen in CUDA-L1"], versions["first seen in bigger-inputs"]
    html = client.get("/tasks/1/20/").content.decode()
    # Version 1 of the fixture: CUDA-L1 on both GPUs and the leaderboard, best first by eager speedup.
    assert claim_rows(html, first) == ["cuda_l1_h100_20_LeakyReLU", "cuda_l1_a100_20_LeakyReLU",
                                       "model-a_5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"]
    # The 9x claim on bigger inputs is another version: its own table, never ranked with those.
    assert claim_rows(html, added) == ["leaky_big"]
    assert "first seen in bigger-inputs" in html and "dim = 4096" in html  # the version diff
    # Ranked by another baseline, the order follows it (cuDNN: 3.5 on H100, 2.5 on A100, none).
    by_cudnn = client.get("/tasks/1/20/?baseline=cudnn").content.decode()
    assert claim_rows(by_cudnn, first)[:2] == ["cuda_l1_h100_20_LeakyReLU", "cuda_l1_a100_20_LeakyReLU"]
    by_graph = client.get("/tasks/1/20/?baseline=cuda_graph").content.decode()
    assert claim_rows(by_graph, first)[0] == "cuda_l1_a100_20_LeakyReLU"  # 1.75 on A100, none on H100
    assert Claim.objects.filter(kernel__task=task, source_archive="CUDA-L1").count() == 2


def test_filters_by_source_gpu_and_version(client, two_sources_two_versions):
    task = two_sources_two_versions
    added = task.versions.get(label="first seen in bigger-inputs").number
    a100 = client.get("/tasks/1/20/?gpu=NVIDIA+A100").content.decode()
    assert [name for v in range(1, added + 1) for name in claim_rows(a100, v)] == ["cuda_l1_a100_20_LeakyReLU"]
    board = client.get("/tasks/1/20/?source=KernelBench+leaderboard").content.decode()
    assert [name for v in range(1, added + 1) for name in claim_rows(board, v)] == [
        "model-a_5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"]
    only_added = client.get(f"/tasks/1/20/?version={added}").content.decode()
    assert [name for v in range(1, added + 1) for name in claim_rows(only_added, v)] == ["leaky_big"]
    for bad in ("version=two", "baseline=fastest", "gpu=" + "x" * 300):
        assert client.get(f"/tasks/1/20/?{bad}").status_code == 400


def test_the_leaderboard_has_a_row_per_task_version_and_says_what_it_ranks_by(client, two_sources_two_versions):
    response = client.get("/leaderboard/?level=1")
    rows = [k for k in response.context["page"].object_list if k.task.task_number == 20]
    assert sorted(k.version_number for k in rows) == sorted(
        two_sources_two_versions.versions.filter(kernels__isnull=False).distinct().values_list("number", flat=True))
    assert len(rows) == 2
    assert 'id="ranked-claim"' in response.content.decode()
