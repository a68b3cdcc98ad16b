"""The claims page (/claims/) and its API twin (/api/claims/), issue #34: per source and claimed GPU,
split by the GPU of re-measurement, the counts, the failures by flag, the medians and the weak tasks.

The archive here is drawn at random (seeded) from a small spec per kernel; the expected figures
are recomputed from those specs in this file, never read back from the selector, so a wrong
grouping, a wrong trust rule or a wrong median fails. Every count's link is followed and must
list exactly the kernels the spec says it counts."""
import html
import json
import random
import re
import statistics
from dataclasses import dataclass, field
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from evaluator.services import kernel_verification_state_refresh
from kernels.claims_selectors import claims_overview
from kernels.models import Claim, Kernel, TaskVersion, Verification
from tests.kernels.kernel_factories import make_kernel, make_task

pytestmark = pytest.mark.django_db

CLAIM_SOURCES = [("CUDA-L1", "NVIDIA A100"), ("CUDA-L1", "NVIDIA L40"), ("sakana", "NVIDIA H100"), ("demo", "")]
BLOCKING = ["stale_memory", "incorrect_output", "library_call_replaces_kernel"]
REMEASURED_GPUS = ["NVIDIA H200", "NVIDIA H100"]
WORKER, IMPORTED = Verification.Origin.WORKER, Verification.Origin.IMPORTED
CONTRIBUTED, UNSIGNED = Verification.Origin.CONTRIBUTED, Verification.Origin.UNSIGNED


@dataclass
class Spec:
    """What the test made for one kernel, and so what the page must count it as."""
    kernel: Kernel
    claims: list  # [(source, gpu, claimed speedup vs eager or None)]
    outcome: str = ""  # the latest trusted run: "", passed, failed or error
    flags: list = field(default_factory=list)  # its blocking flags
    remeasured: float | None = None
    gpu: str | None = None  # where the trusted run ran
    suspected: bool = False


def run(kernel, *, status, origin=WORKER, flags=(), speedup=None, gpu="NVIDIA H200", minutes_ago=10):
    """A finished verification, stored as the worker or an import stores one, then the kernel refreshed."""
    made = Verification.objects.create(
        kernel=kernel, status=status, origin=origin, flags=list(flags), gpu_name=gpu, speedup_eager=speedup,
        finished_at=timezone.now() - timedelta(minutes=minutes_ago), verifier_name="someone")
    kernel_verification_state_refresh(kernel_id=kernel.id)
    return made


def blocking(names):
    return [{"name": name, "blocking": True, "evidence": f"seen: {name}"} for name in names]


def make_random_archive(count=40, seed=34) -> list[Spec]:
    rng = random.Random(seed)
    tasks = [make_task(1, number) for number in (1, 2, 3)]
    versions = {task.id: TaskVersion.objects.create(task=task, number=1, reference_sha256=f"{task.id:064d}",
                                                    label="test") for task in tasks}
    specs = []
    for index in range(count):
        task = rng.choice(tasks)
        suspected = rng.random() < 0.3
        if rng.random() < 0.2:  # no Claim row: counted under the kernel's own source and GPU
            own = round(rng.uniform(0.2, 6), 3) if rng.random() < 0.8 else 0.0
            gpu = rng.choice(["NVIDIA A100", ""])
            kernel = make_kernel(task, index, source_archive="legacy", hardware=gpu, speedup=own, suspected=suspected)
            claims = [("legacy", gpu, own or None)]
        else:
            kernel = make_kernel(task, index, suspected=suspected)  # its own fields say "test": never a group
            claims = []
            for source, gpu in rng.sample(CLAIM_SOURCES, rng.randint(1, 3)):
                speedup = round(rng.uniform(0.2, 8), 3) if rng.random() < 0.85 else None
                Claim.objects.create(kernel=kernel, task_version=versions[task.id], source_archive=source,
                                     hardware=gpu, name=kernel.name, speedup_eager=speedup)
                claims.append((source, gpu, speedup))
        spec = Spec(kernel, claims, suspected=suspected)
        kind = rng.choice(["none", "passed", "passed", "failed", "failed", "error", "contributed", "unsigned",
                           "failed_then_contributed"])
        gpu = rng.choice(REMEASURED_GPUS)
        if kind == "passed":
            speedup = round(rng.uniform(0.1, 4), 3) if rng.random() < 0.9 else None
            run(kernel, status="passed", speedup=speedup, gpu=gpu,
                flags=[{"name": "weak_task_pass", "blocking": False, "evidence": "advisory"}] if rng.random() < 0.3 else [])
            spec.outcome, spec.remeasured, spec.gpu = "passed", speedup, gpu
        elif kind in ("failed", "failed_then_contributed"):
            names = rng.sample(BLOCKING, rng.randint(0, 2))
            run(kernel, status="failed", flags=blocking(names), gpu=gpu)
            spec.outcome, spec.flags, spec.gpu = "failed", names, gpu
            if kind == "failed_then_contributed":  # a newer contribution says "passed, 41.7x": it must not count
                run(kernel, status="passed", origin=CONTRIBUTED, speedup=41.7, gpu="NVIDIA H200", minutes_ago=1)
        elif kind == "error":
            run(kernel, status="error", gpu=gpu)
            spec.outcome, spec.gpu = "error", gpu
        elif kind in ("contributed", "unsigned"):
            run(kernel, status="passed", origin=CONTRIBUTED if kind == "contributed" else UNSIGNED, speedup=9.9)
        specs.append(spec)
    # Two cases the draw may miss, made for sure: a pass whose claim on one GPU has no speedup (it is
    # left out of that row's medians only), and a pass the harness did not time.
    made_for_sure = (([("sakana", "NVIDIA H100", None), ("CUDA-L1", "NVIDIA A100", 3.0)], 1.25),
                     ([("sakana", "NVIDIA H100", 2.0)], None))
    for index, (claims, speedup) in enumerate(made_for_sure):
        kernel = make_kernel(tasks[0], count + index)
        for source, gpu, claimed in claims:
            Claim.objects.create(kernel=kernel, task_version=versions[tasks[0].id], source_archive=source,
                                 hardware=gpu, name=kernel.name, speedup_eager=claimed)
        run(kernel, status="passed", speedup=speedup, gpu="NVIDIA H200")
        specs.append(Spec(kernel, claims, outcome="passed", remeasured=speedup, gpu="NVIDIA H200"))
    return specs


def expected_rows(specs):
    """(spec, source, claimed gpu, claimed speedup) per claim, as the page must count them."""
    return [(spec, source, gpu, speedup) for spec in specs for source, gpu, speedup in spec.claims]


def counts(rows) -> dict:
    specs = [row[0] for row in rows]
    failed = [s for s in specs if s.outcome == "failed"]
    by_flag = {}
    for spec in failed:
        for name in spec.flags:
            by_flag[name] = by_flag.get(name, 0) + 1
    return {"kernels": len(specs), "unverified": sum(not s.outcome for s in specs),
            "unverified_suspected": sum(not s.outcome and s.suspected for s in specs),
            "remeasured": sum(bool(s.outcome) for s in specs), "passed": sum(s.outcome == "passed" for s in specs),
            "failed": len(failed), "errors": sum(s.outcome == "error" for s in specs),
            "by_flag": by_flag, "unflagged": sum(not s.flags for s in failed)}


def medians(rows) -> dict:
    both = [(claimed, spec.remeasured) for spec, _, _, claimed in rows
            if spec.outcome == "passed" and spec.remeasured and claimed]
    return {"with_both": len(both),
            "median_claimed": statistics.median([c for c, _ in both]) if both else None,
            "median_remeasured": statistics.median([r for _, r in both]) if both else None,
            "median_ratio": statistics.median([r / c for c, r in both]) if both else None}


def figures_of(entry) -> dict:
    flags = {flag["name"]: flag["kernels"] for flag in entry["failed_by_flag"] if flag["name"]}
    unflagged = sum(flag["kernels"] for flag in entry["failed_by_flag"] if flag["name"] is None)
    return {**{key: entry[key] for key in ("kernels", "unverified", "unverified_suspected", "remeasured", "passed",
                                          "failed", "errors")}, "by_flag": flags, "unflagged": unflagged}


def listed_ids(client, url) -> set[int]:
    response = client.get(url)
    assert response.status_code == 200, url
    body = response.content.decode()
    section = body.split('id="claims-kernel-list"', 1)[1].split("</table>", 1)[0]
    return {int(i) for i in re.findall(r'data-kernel-id="(\d+)"', section)}


@pytest.fixture
def archive():
    return make_random_archive()


def test_counts_flags_and_medians_per_source_gpu_and_remeasurement_gpu(archive):
    rows = expected_rows(archive)
    overview = claims_overview()
    groups = {}
    for spec, source, gpu, claimed in rows:
        groups.setdefault((source, gpu), []).append((spec, source, gpu, claimed))
    assert [(g["source"], g["claimed_gpu"]) for g in overview["groups"]] == sorted(groups)
    assert "test" not in {g["source"] for g in overview["groups"]}  # a kernel with claims counts by its claims
    for group in overview["groups"]:
        mine = groups[(group["source"], group["claimed_gpu"])]
        assert figures_of(group) == counts(mine), group["source"]
        by_gpu = {}
        for row in mine:
            if row[0].outcome:
                by_gpu.setdefault(row[0].gpu, []).append(row)
        shown = group["by_remeasured_gpu"]
        if not by_gpu:
            assert [entry["remeasured_gpu"] for entry in shown] == [None] and shown[0]["remeasured"] == 0
            continue
        assert [entry["remeasured_gpu"] for entry in shown] == sorted(by_gpu)
        for entry in shown:
            assert figures_of(entry) == counts(by_gpu[entry["remeasured_gpu"]])
            expected = medians(by_gpu[entry["remeasured_gpu"]])
            assert entry["with_both"] == expected["with_both"]
            for key in ("median_claimed", "median_remeasured", "median_ratio"):
                if expected[key] is None:
                    assert entry[key] is None, key
                else:
                    assert entry[key] == pytest.approx(expected[key]), key
    # Totals count each kernel once, whatever its number of claims.
    one_each = [(spec, "", "", None) for spec in archive]
    assert figures_of(overview["totals"]) == counts(one_each)
    # The fixture drew every case at least once, so each assertion above was exercised.
    assert {s.outcome for s in archive} == {"", "passed", "failed", "error"}
    assert any(s.outcome == "failed" and not s.flags for s in archive)
    assert any(len(s.claims) > 1 for s in archive) and any(s.claims[0][0] == "legacy" for s in archive)
    assert any(s.outcome == "passed" and s.remeasured and None in [c for _, _, c in s.claims] for s in archive)
    assert any(s.outcome == "passed" and s.remeasured is None for s in archive)


def test_only_trusted_finished_runs_count(archive):
    """Contributions and unsigned records never count, even a newer one, and even if a kernel's
    row were made to point at one (the page applies the trust rule itself)."""
    task = make_task(2, 7)
    contributed_only = make_kernel(task, 0, source_archive="only-contributed", hardware="NVIDIA A100")
    run(contributed_only, status="passed", origin=CONTRIBUTED, speedup=41.7)
    forged = make_kernel(task, 1, source_archive="only-contributed", hardware="NVIDIA A100")
    contribution = run(forged, status="passed", origin=CONTRIBUTED, speedup=41.7)
    Kernel.objects.filter(id=forged.id).update(latest_verification=contribution, verdict="passed", verified=True,
                                               remeasured_speedup_eager=41.7, remeasured_gpu="NVIDIA H200")
    queued = make_kernel(task, 2, source_archive="only-contributed", hardware="NVIDIA A100")
    Verification.objects.create(kernel=queued, status=Verification.Status.QUEUED, origin=WORKER)
    group = next(g for g in claims_overview()["groups"] if g["source"] == "only-contributed")
    assert (group["kernels"], group["unverified"], group["remeasured"], group["passed"]) == (3, 3, 0, 0)
    assert group["by_remeasured_gpu"][0]["remeasured_gpu"] is None
    assert not any(point["remeasured"] == 41.7 for point in claims_overview()["points"])
    failed_then_contributed = [s for s in archive if s.outcome == "failed" and Verification.objects.filter(
        kernel=s.kernel, origin=CONTRIBUTED).exists()]
    assert failed_then_contributed  # drawn by the fixture: its failure stands
    for spec in failed_then_contributed:
        assert spec.kernel.id not in {p["kernel_id"] for p in claims_overview()["points"]}


def test_every_count_links_to_exactly_its_kernels(client, archive):
    rows = expected_rows(archive)
    overview = client.get("/api/claims/").json()
    checked = 0
    for group in overview["groups"]:
        mine = [r for r in rows if (r[1], r[2]) == (group["source"], group["claimed_gpu"])]
        expected = {"kernels": mine, "unverified": [r for r in mine if not r[0].outcome],
                    "unverified_suspected": [r for r in mine if not r[0].outcome and r[0].suspected]}
        for key, want in expected.items():
            assert listed_ids(client, group["links"][key]) == {r[0].kernel.id for r in want}, (group["source"], key)
            checked += 1
        for entry in group["by_remeasured_gpu"]:
            if entry["remeasured_gpu"] is None:
                continue
            on_gpu = [r for r in mine if r[0].outcome and r[0].gpu == entry["remeasured_gpu"]]
            want = {"remeasured": on_gpu, "passed": [r for r in on_gpu if r[0].outcome == "passed"],
                    "failed": [r for r in on_gpu if r[0].outcome == "failed"],
                    "errors": [r for r in on_gpu if r[0].outcome == "error"],
                    "with_both": [r for r in on_gpu if r[0].outcome == "passed" and r[0].remeasured and r[3]]}
            for key, kernels in want.items():
                assert listed_ids(client, entry["links"][key]) == {r[0].kernel.id for r in kernels}, key
                checked += 1
            for flag in entry["failed_by_flag"]:
                want = {r[0].kernel.id for r in on_gpu if r[0].outcome == "failed"
                        and (flag["name"] in r[0].flags if flag["name"] else not r[0].flags)}
                assert listed_ids(client, flag["url"]) == want and len(want) == flag["kernels"], flag
                checked += 1
    assert checked > 40


def test_the_list_shows_the_scopes_claim_and_the_page_links_each_flag(client, archive):
    spec = next(s for s in archive if s.outcome == "failed" and s.flags and s.claims[0][0] != "legacy")
    source, gpu, claimed = spec.claims[0]
    flag = spec.flags[0]
    page = client.get("/claims/").content.decode()
    link = re.search(r'<a class="flag-count" data-flag="%s" href="([^"]+)"' % flag, page)
    assert link, flag
    listing = client.get("/claims/", {"outcome": "failed", "flag": flag, "source": source, "claimed_gpu": gpu})
    body = listing.content.decode()
    row = body.split(f'data-kernel-id="{spec.kernel.id}"', 1)[1].split("</tr>", 1)[0]
    assert f'href="/kernels/{spec.kernel.id}/"' in row and f">{flag}<" in row
    assert (f"{claimed:.2f}×" if claimed else "–") in row and html.escape(source) in row


def test_weak_tasks_from_task_flags_and_trusted_weak_passes():
    flagged = make_task(1, 40, flags=[{"name": "near_zero_output", "blocking": False,
                                       "evidence": "reference output |y| < 0.01 everywhere"}])
    weak_pass_task, plain = make_task(1, 41), make_task(1, 42)
    weak = [{"name": "weak_task_pass", "blocking": False, "evidence": "passed, but the task's check is weak"}]
    passed_weak = make_kernel(weak_pass_task, 0)
    run(passed_weak, status="passed", speedup=1.1, flags=weak)
    run(make_kernel(plain, 0), status="passed", origin=CONTRIBUTED, speedup=1.1, flags=weak)  # not trusted
    run(make_kernel(plain, 1), status="passed", speedup=1.1)  # trusted, no weak flag
    forged = make_kernel(plain, 2)  # its row made to point at a contribution: still not trusted
    contribution = run(forged, status="passed", origin=UNSIGNED, speedup=1.1, flags=weak)
    Kernel.objects.filter(id=forged.id).update(latest_verification=contribution, verdict="passed", verified=True)
    make_kernel(flagged, 0)
    found = {(t["level"], t["task_number"]): t for t in claims_overview()["weak_tasks"]}
    assert set(found) == {(1, 40), (1, 41)}
    assert [f["name"] for f in found[(1, 40)]["findings"]] == ["near_zero_output"]
    assert found[(1, 40)]["weak_passes"] == []
    assert [p["kernel_id"] for p in found[(1, 41)]["weak_passes"]] == [passed_weak.id]
    assert found[(1, 41)]["url"] == "/tasks/1/41/"


def test_archive_text_is_escaped_on_the_page_in_the_chart_and_in_the_api(client):
    task = make_task(1, 50, op_name="<svg onload=alert(3)>")
    name, source, gpu = "<script>alert(1)</script>", "<img src=x onerror=alert(2)>", "<b>GPU</b>"
    kernel = make_kernel(task, 0, name=name, source_archive=source, hardware=gpu, speedup=2.0)
    run(kernel, status="passed", speedup=1.5, gpu="<i>H200</i>")
    failing = make_kernel(task, 1, name=name + "2", source_archive=source, hardware=gpu)
    run(failing, status="failed", flags=blocking(["stale_memory"]))
    for url in ("/claims/", f"/claims/?outcome=all&source={source}&claimed_gpu={gpu}"):
        body = client.get(url).content.decode()
        assert "<script>alert" not in body and "<img src=x" not in body and "<svg onload" not in body
        assert "<b>GPU" not in body and "<i>H200" not in body
        assert html.escape(source) in body
    body = client.get("/claims/").content.decode()
    figure = json.loads(re.search(r'<script id="chart-claims-scatter" type="application/json">(.*?)</script>',
                                  body, re.S).group(1))
    points = [trace for trace in figure["data"] if trace["mode"] == "markers"]
    assert len(points) == 1 and "&lt;script&gt;" in points[0]["hovertext"][0] and "<script" not in points[0]["hovertext"][0]
    assert "&lt;img" in points[0]["name"] and points[0]["customdata"] == [f"/kernels/{kernel.id}/"]
    assert figure["layout"]["xaxis"]["type"] == figure["layout"]["yaxis"]["type"] == "log"
    api = client.get("/api/claims/")
    assert b"<" not in api.content and b">" not in api.content
    assert api.json()["points"][0]["name"] == name  # the API's escapes decode to the text itself


def test_bad_parameters_are_400_and_a_page_past_the_last_is_404(client, archive):
    assert client.get("/claims/?outcome=fastest").status_code == 400
    assert "outcome must be one of" in client.get("/claims/?outcome=fastest").content.decode()
    assert client.get("/claims/?outcome=passed&flag=stale_memory").status_code == 400
    assert client.get("/claims/?outcome=failed&flag=<x>").status_code == 400
    assert client.get("/claims/?outcome=all&page=0").status_code == 400
    assert client.get("/claims/?outcome=all&page=99").status_code == 404
    assert client.get("/claims/?outcome=all&page=1").status_code == 200


def test_the_api_twin_carries_the_page_figures_and_is_in_the_schema(client, archive):
    api = client.get("/api/claims/").json()
    assert set(api) == {"baseline", "totals", "groups", "points", "points_total", "weak_tasks"}
    assert api["baseline"]["name"] == "PyTorch eager"
    page = client.get("/claims/").content.decode()
    for group in api["groups"]:
        for entry in group["by_remeasured_gpu"]:
            if entry["with_both"]:
                assert f'{entry["median_claimed"]:.2f}×' in page and f'{entry["median_remeasured"]:.2f}×' in page
    both = [(spec, claimed) for spec, _, _, claimed in expected_rows(archive)
            if spec.outcome == "passed" and spec.remeasured and claimed]
    assert len(api["points"]) == api["points_total"] == len(both) > 0
    assert {p["kernel_id"] for p in api["points"]} == {spec.kernel.id for spec, _ in both}
    schema = client.get("/api/schema/?format=json").json()
    assert "/api/claims/" in schema["paths"]


def test_a_fixed_number_of_queries_whatever_the_archive_size():
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            claims_overview()
        return len(captured)

    make_random_archive(count=5, seed=1)
    small = queries()
    task = make_task(3, 99)
    for index in range(30):
        run(make_kernel(task, index), status="failed", flags=blocking(["stale_memory"]))
    assert queries() == small
