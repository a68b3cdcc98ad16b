"""Issue #35, one truth on every page: ranked figures are re-measured ones, a claim is labelled a
claim with its GPU, failed and suspected kernels feed no aggregate, every task has a leaderboard
row saying what it holds, and the task page ranks one way. The home page's figures are held to
tests/kernels/remeasured_expectations.py, which recomputes them from the Verification rows."""
import io
import json
import re
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.utils import timezone

from evaluator.services import kernel_verification_state_refresh
from kernels import selectors
from kernels.models import Claim, Kernel, Task, TaskVersion, Verification
from kernels.ranking import excluded_reason
from tests.conftest import CUDA_L1_SUBSETS

from .kernel_factories import make_kernel, make_task
from .remeasured_expectations import as_shown, expected_remeasured, passed_runs

pytestmark = pytest.mark.django_db

SUSPECTED = [{"name": "suspected_tampering", "blocking": False, "evidence": "writes to torch.cuda.Event"}]
CUDA_L1_A100 = CUDA_L1_SUBSETS / "a100.json"


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()


def verify(kernel, *, gpu="NVIDIA H200", status="passed", speedup=1.2, origin="worker", flags=(), ago_s=0):
    Verification.objects.create(kernel=kernel, status=status, origin=origin, gpu_name=gpu, speedup_eager=speedup,
                                speedup_compile=speedup * 0.9, runtime_ms=0.2, eager_runtime_ms=0.2 * speedup,
                                flags=list(flags), verifier_name="" if origin == "worker" else "someone",
                                finished_at=timezone.now() - timedelta(seconds=ago_s))
    kernel_verification_state_refresh(kernel_id=kernel.id)
    kernel.refresh_from_db()
    return kernel


@pytest.fixture
def mixed():
    """Six tasks over three levels: re-measurements on two GPUs, a claim-only kernel with a huge
    claim, a kernel whose pass a later failure undid, a contributed "pass" (never counted), three
    suspects, a suspect a verification cleared, a task with no kernel, a task with only a failure."""
    matmul, cheated, suspects = make_task(1, 1), make_task(1, 2), make_task(1, 3)
    fused, empty, broken = make_task(2, 4), make_task(2, 5), make_task(3, 6)
    kernels = {
        "fast": verify(make_kernel(matmul, 0, speedup=2.0), speedup=2.4),
        "on_h100": verify(make_kernel(matmul, 1, speedup=1.5), gpu="NVIDIA H100", speedup=1.1),
        "claim_only": make_kernel(matmul, 2, speedup=9.0),
        "undone": make_kernel(cheated, 0, speedup=30.0),
        "contributed": verify(make_kernel(cheated, 1, speedup=41.7), speedup=41.7, origin="contributed"),
        "fused": verify(make_kernel(fused, 0, speedup=1.0), speedup=0.8),
        "cleared": verify(make_kernel(fused, 1, speedup=1.4, suspected=True, screening_flags=SUSPECTED), speedup=1.6),
        "broken": verify(make_kernel(broken, 0, speedup=5.0), status="failed",
                         flags=[{"name": "incorrect_output", "blocking": True, "evidence": "max diff 3.1"}]),
    }
    for index in range(3):
        kernels[f"suspect_{index}"] = make_kernel(suspects, index, speedup=20.0 + index, suspected=True,
                                                  screening_flags=SUSPECTED)
    verify(kernels["undone"], speedup=3.0, ago_s=3600)  # passed an hour ago ...
    verify(kernels["undone"], status="failed", flags=[{"name": "stale_memory", "blocking": True,
                                                       "evidence": "run first on poisoned memory: NaN"}])
    assert kernels["undone"].verdict == "failed" and not kernels["contributed"].verified
    assert Task.objects.get(pk=empty.pk).kernels.count() == 0
    return kernels


def text_of(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def table(html: str, table_id: str) -> str:
    match = re.search(rf'<table class="[^"]*" id="{table_id}">(.*?)</table>', html, re.S)
    assert match, table_id
    return match.group(1)


def rows_of(html: str, table_id: str) -> list[str]:
    return re.findall(r"<tr[ >].*?</tr>", table(html, table_id).split("<tbody>", 1)[1], re.S)


# 1. One rule for every number -------------------------------------------------------------------


def test_home_fast_p_and_geomeans_are_remeasured_per_gpu_and_say_how_many_tasks_have_none(client, mixed):
    expected = expected_remeasured()
    # Recomputed from the Verification rows: the H100 re-measurement is its own row, the undone
    # pass, the contribution and every claim count for nothing, level 3 has none at all.
    assert set(expected) == {(1, "NVIDIA H200"), (1, "NVIDIA H100"), (2, "NVIDIA H200"), (3, "")}
    response = client.get("/")
    shown = {(row["level"], row["gpu"]): row for row in response.context["overview"]["remeasured"]}
    assert set(shown) == set(expected)
    for key, want in expected.items():
        got = shown[key]
        assert (got["tasks_remeasured"], got["tasks_without"]) == (want["tasks_remeasured"], want["tasks_without"]), key
        assert [cell["share"] for cell in got["fast_p"]] == pytest.approx(want["fast_p"]), key
        for name in ("geomean_eager", "geomean_compile", "geomean_best_eager"):
            assert got[name] == (pytest.approx(want[name]) if want[name] is not None else None), (key, name)
    # The page prints the same figures, a row per level and GPU.
    html = response.content.decode()
    for row in rows_of(html, "fast-p"):
        level, gpu = re.search(r'data-level="(\d+)" data-gpu="([^"]*)"', row).groups()
        want = expected[(int(level), gpu)]
        assert re.search(r'class="tasks-without">(\d+)<', row).group(1) == str(want["tasks_without"])
        cells = re.findall(r'<td class="fast-p" data-p="[^"]+">([^<]*)</td>', row)
        assert cells == [as_shown(share, "share") for share in want["fast_p"]]
        if gpu:
            assert re.search(r'class="geomean-eager">([^<]*)<', row).group(1) == as_shown(want["geomean_eager"], "x")
        else:
            assert "all 1 task have none" in text_of(row)


def test_claims_and_failed_or_suspected_kernels_feed_no_aggregate(client, mixed):
    before = client.get("/").context["overview"]["remeasured"]
    # Inflate every claim and add a failed kernel's "speed": nothing the home page aggregates moves.
    Kernel.objects.update(claimed_speedup_native=1000.0, claimed_speedup_compile=1000.0)
    verify(make_kernel(Task.objects.get(level=2, task_number=5), 0, speedup=99.0), status="failed", speedup=99.0,
           flags=[{"name": "cached_output", "blocking": True, "evidence": "same output for new inputs"}])
    cache.clear()
    after = client.get("/").context["overview"]
    assert [{k: v for k, v in row.items() if k != "tasks_without"} for row in after["remeasured"]] == [
        {k: v for k, v in row.items() if k != "tasks_without"} for row in before]
    # The claims' histogram leaves failed and suspected kernels out and names each claim's GPU.
    charted = sum(bar["kernels"] for bar in after["histogram"])
    admitted = [k for k in Kernel.objects.all() if k.claimed_correct and (k.claimed_speedup_native or 0) > 0
                and not excluded_reason(k)]
    assert charted == len(admitted) < Kernel.objects.filter(claimed_correct=True).count()
    figure = json.loads(re.search(r'<script id="chart-speedups" type="application/json">(.*?)</script>',
                                  client.get("/").content.decode(), re.S).group(1))
    assert figure["data"] and all("claimed on NVIDIA H100" in trace["name"] for trace in figure["data"])


def test_top_kernels_are_ranked_by_remeasurement_only(client, mixed):
    top = list(selectors.top_kernels())
    assert {k.name for k in top} == {k.name for k in Kernel.objects.filter(verified=True)}
    assert [k.remeasured_speedup_eager for k in top] == sorted((k.remeasured_speedup_eager for k in top), reverse=True)
    assert mixed["claim_only"].name not in table(client.get("/").content.decode(), "top-kernels")


def test_the_tasks_api_carries_the_best_remeasured_speedup_beside_the_claim(client, mixed):
    best_run = {}
    for run in passed_runs():
        key = (run["kernel__task__level"], Task.objects.get(pk=run["kernel__task_id"]).task_number)
        if key not in best_run or run["speedup_eager"] > best_run[key]["speedup_eager"]:
            best_run[key] = run
    tasks = client.get("/api/tasks/").json()["results"]
    assert len(tasks) == Task.objects.count()
    for task in tasks:
        run = best_run.get((task["level"], task["task_number"]))
        assert task["best_remeasured_speedup_eager"] == (run["speedup_eager"] if run else None), task["task_number"]
        assert task["best_remeasured_gpu"] == (run["gpu_name"] if run else None)
    # The undone pass (3.0x) and the contribution (41.7x) are not task 2's best: it has none.
    assert next(t for t in tasks if t["task_number"] == 2)["best_remeasured_speedup_eager"] is None


def test_every_runtime_says_claimed_or_remeasured_and_its_gpu(client, mixed):
    def check(rows, by_id):
        assert rows
        for row in rows:
            kernel = by_id[int(re.search(r'data-kernel-id="(\d+)"', row).group(1))]
            runtime = text_of(re.search(r'<td class="[^"]*runtime[^"]*"[^>]*>(.*?)</td>', row, re.S).group(1))
            if kernel.verified:
                assert f"re-measured, {kernel.remeasured_gpu}" in runtime, kernel.name
            elif kernel.claimed_runtime_ms is not None:
                assert f"claimed, {kernel.hardware}" in runtime, kernel.name
    by_id = {k.id: k for k in Kernel.objects.all()}
    check(rows_of(client.get("/leaderboard/?show_kernels=1&include=all").content.decode(), "leaderboard"), by_id)
    check(rows_of(client.get("/tasks/1/1/").content.decode(), "task-kernels"), by_id)
    search = client.get("/search/?q=__shared__&mode=exact").content.decode()
    hits = re.findall(r'<tr data-kernel-id="\d+">.*?</tr>', search, re.S)
    assert len(hits) == Kernel.objects.filter(code__contains="__shared__").count()
    check(hits, by_id)


# 2. Every task on the leaderboard ----------------------------------------------------------------


def test_every_task_has_a_leaderboard_row_that_says_what_it_holds(client, mixed):
    html = client.get("/leaderboard/").content.decode()
    tasks = set(Task.objects.values_list("level", "task_number"))
    listed = {(int(level), int(number)) for level, number in
              re.findall(r'<td class="task"><a href="/tasks/(\d+)/(\d+)/">', table(html, "leaderboard"))}
    assert listed == tasks
    assert f"{len(tasks)} tasks match" in text_of(html)
    holdings = {tuple(map(int, key.split("-"))): text_of(row) for key, row in
                re.findall(r'<tr class="task-holdings" data-task="([\d-]+)"[^>]*>(.*?)</tr>', html, re.S)}
    assert "3 kernels, all suspected; none verified yet" in holdings[(1, 3)]
    assert "no kernel imported" in holdings[(2, 5)]
    assert "1 kernel, failed re-verification" in holdings[(3, 6)]
    assert 'href="/tasks/1/3/#sources"' in html  # a link to see them
    # The ranked rows say what their task holds too.
    assert "3 kernels: 2 verified, 1 not re-measured yet" in text_of(html)


def test_the_leaderboard_api_has_a_row_and_a_holdings_field_per_task(client, mixed):
    rows = client.get("/api/leaderboard/").json()["results"]
    assert {(row["task"]["level"], row["task"]["task_number"]) for row in rows} == set(
        Task.objects.values_list("level", "task_number"))
    for row in rows:
        holds = row["task_holds"]
        task = Task.objects.get(level=row["task"]["level"], task_number=row["task"]["task_number"])
        assert holds["kernels"] == task.kernels.count() and holds["summary"]
        assert holds["task_url"] == f"/tasks/{task.level}/{task.task_number}/"
        assert holds["has_ranked_kernel"] == (row["id"] is not None)
        if row["id"] is None:
            assert row["ranked"] is False and row["name"] is None
            assert all(excluded_reason(k) for k in task.kernels.all())  # every one failed or suspected
    suspects = next(row for row in rows if row["task"]["task_number"] == 3)
    assert suspects["task_holds"]["suspected"] == 3 and suspects["task_holds"]["verified"] == 0
    # Filters on kernels list only the tasks some of whose kernels match.
    assert client.get("/api/leaderboard/?hardware=NVIDIA+A100").json()["results"] == []


def test_rank_numbers_are_remeasured_ranks_and_a_claim_is_not_numbered(client, mixed):
    html = client.get("/leaderboard/").content.decode()
    ranks = {}
    for row in rows_of(html, "leaderboard"):
        kernel_id = re.search(r'data-kernel-id="(\d+)"', row)
        if kernel_id:
            ranks[int(kernel_id.group(1))] = text_of(re.search(r'<td class="rank">(.*?)</td>', row, re.S).group(1)).strip()
    verified = [kernel_id for kernel_id in ranks if Kernel.objects.get(pk=kernel_id).verified]
    assert verified and [ranks[kernel_id] for kernel_id in verified] == [str(n) for n in range(1, len(verified) + 1)]
    assert all(rank == "–" for kernel_id, rank in ranks.items() if kernel_id not in verified)


def test_the_full_cuda_l1_a100_dump_lists_every_task_it_covers(client):
    if not CUDA_L1_A100.exists():
        pytest.skip(f"{CUDA_L1_A100} is not there (../shared)")
    rows = [json.loads(line) for line in CUDA_L1_A100.read_text().splitlines() if line.strip()]
    with_kernel = [row for row in rows if row["custom_code"] not in (None, "None") and "class ModelNew" in row["custom_code"]]
    out = io.StringIO()
    call_command("import_archive", str(CUDA_L1_A100), no_progress=True, stdout=out)
    assert f"rows skipped (no kernel): {len(rows) - len(with_kernel)}" in out.getvalue()
    covered = {(row["level_id"], row["task_id"]) for row in with_kernel}
    versions = Kernel.objects.values_list("task_id", "task_version_id").distinct().count()

    listed, summaries, url = [], {}, "/api/leaderboard/?page_size=200"
    while url:
        page = client.get(url).json()
        listed += page["results"]
        url = page["next"]
    assert len(listed) == versions and {(r["task"]["level"], r["task"]["task_number"]) for r in listed} == covered
    for row in listed:
        holds = row["task_holds"]
        key = (row["task"]["level"], row["task"]["task_number"])
        assert holds["kernels"] == Kernel.objects.filter(task__level=key[0], task__task_number=key[1]).count() >= 1
        summaries[key] = holds["summary"]
        if not holds["has_ranked_kernel"]:
            assert holds["suspected"] + holds["failed"] == holds["kernels"], key
            assert "suspected" in holds["summary"] or "failed" in holds["summary"]
    # The page says the same, over its pages: every task, with what it has.
    seen = set()
    for number in (1, 2):
        html = client.get(f"/leaderboard/?page_size=200&page={number}").content.decode()
        assert f"{len(covered)} tasks match" in text_of(html)
        for level, task_number in re.findall(r'<td class="task"><a href="/tasks/(\d+)/(\d+)/">', html):
            seen.add((int(level), int(task_number)))
    assert seen == covered


# 3. The task page ranks one way ------------------------------------------------------------------


def claim(kernel, *, gpu="NVIDIA H100", speedup=None):
    version, _ = TaskVersion.objects.get_or_create(task=kernel.task, number=1,
                                                   defaults={"reference_sha256": "x" * 64, "label": "test"})
    Kernel.objects.filter(pk=kernel.pk).update(task_version=version)
    return Claim.objects.create(kernel=kernel, task_version=version, source_archive="test", hardware=gpu,
                                name=kernel.name, claimed_correct=True,
                                speedup_eager=speedup if speedup is not None else kernel.claimed_speedup_native)


def test_the_task_page_ranks_remeasured_kernels_and_lists_claims_unnumbered_and_badged(client, mixed):
    for name in ("fast", "on_h100", "claim_only"):
        claim(mixed[name])
    response = client.get("/tasks/1/1/")
    html = response.content.decode()
    verified = sorted(Kernel.objects.filter(task__task_number=1, verified=True),
                      key=lambda k: -k.remeasured_speedup_eager)
    assert [k.name for k in response.context["ranked"]] == [k.name for k in verified]
    ranked_ids = [int(i) for i in re.findall(r'data-kernel-id="(\d+)"', table(html, "task-kernels"))]
    assert ranked_ids == [k.id for k in verified]  # the claim-only kernel is not in the ranking
    claims = table(html, "claims-v1")
    assert len(re.findall(r"<tr data-kernel-id", claims)) == 3
    assert not re.search(r"<td>\s*\d+\s*</td>", claims.split("<tbody>")[1])  # claims carry no rank number
    assert 'class="table-scroll"><table class="data claims" id="claims-v1">' in html
    assert 'class="table-scroll"><table class="data versions"' in html

    for name in ("suspect_0", "suspect_1", "suspect_2"):
        claim(mixed[name])
    suspects = client.get("/tasks/1/3/").content.decode()
    assert "none is ranked" in text_of(table(suspects, "task-kernels"))
    rows = re.findall(r"<tr data-kernel-id=\"\d+\"[^>]*>.*?</tr>", table(suspects, "claims-v1"), re.S)
    assert len(rows) == 3
    for row in rows:
        assert 'class="not-ranked"' in row and "verdict-suspected" in row
        assert not re.search(r"<td>\s*\d+\s*</td>", row)
    assert "Best claim:" in text_of(suspects) or "No kernel of this task passed" in text_of(suspects)


def test_include_all_cannot_rank_a_kernel_without_a_remeasurement(client, mixed):
    default, everything = client.get("/tasks/1/2/"), client.get("/tasks/1/2/?include=all")
    assert [k.name for k in everything.context["ranked"]] == [k.name for k in default.context["ranked"]] == []
    assert mixed["undone"].name in {k.name for k in everything.context["not_ranked"]}
    not_ranked = table(everything.content.decode(), "task-kernels-not-ranked")
    assert not re.search(r'<td class="rank">\s*\d', not_ranked)


# 4. Mobile: the verification history scrolls in its own box -------------------------------------


def test_the_verification_history_and_evidence_are_wrapped(client, mixed):
    html = client.get(f"/kernels/{mixed['undone'].id}/").content.decode()
    assert '<div class="table-scroll"><table class="data verification-history" id="verification-history">' in html
    assert 'class="evidence-text">Evidence: run first on poisoned memory' in html
