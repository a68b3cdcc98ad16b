"""Every door of the archive that shows a kernel, closed for a submission no trusted run has
passed (kernels.selectors.published), to a visitor and to another user, and for its code (the
bundle, the GPU listing) to its submitter too; then open, every one, once a trusted verification
passed it with no blocking flag (docs/submissions.md, "Who sees what").

Real components throughout: the submission service (the import's kernel_ingest_batch and
screening, the evaluator's verification_request), the worker's profile store, the full
`build_index` and `build_map` (the real embedding model, the FAISS index, UMAP), and the pages
and API as a browser or a script reaches them."""
import json

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from evaluator.services import kernel_verification_state_refresh
from kernels.models import Claim, Profile, Verification
from kernels.services import profile_store
from search.models import KernelEmbedding, MapPoint
from submissions.services import submission_create
from tests.conftest import H200_FIXTURES
from tests.kernels.kernel_factories import NCU_PARSED, make_kernel

from .helpers import model_new

pytestmark = pytest.mark.django_db
TOKEN = "zebra_door_token"  # in the submission's code only: what a code search looks for
MISSING = 999_999


def finish(kernel, status="passed", flags=()):
    """What the worker's result store does: its trusted run finished; the kernel's state follows."""
    Verification.objects.filter(kernel=kernel).update(
        status=status, flags=list(flags), finished_at=timezone.now(), device="cpu", runtime_ms=0.5,
        eager_runtime_ms=1.0, speedup_eager=2.0)
    kernel_verification_state_refresh(kernel_id=kernel.id)
    kernel.refresh_from_db()


@pytest.fixture
def world(task, ada, bob):
    """A public kernel of the ReLU task, and ada's submission for it (queued, unpublished) with a
    GPU listing and an NCU profile as the worker stores them."""
    public = make_kernel(task, 0, name="public_relu")
    submission, _ = submission_create(user=ada, task=task, kind="model_new", code=model_new(TOKEN))
    kernel = submission.kernel
    listing = json.loads((H200_FIXTURES / "gpu_binary" / "listings_spill_and_model_new.json").read_text())
    profile_store(kernel_id=kernel.id, kind=Profile.Kind.GPU_BINARY, origin=Profile.Origin.WORKER, raw_text="",
                  parsed=listing["spill_accumulate_96"])
    for each in (kernel, public):
        profile_store(kernel_id=each.id, kind=Profile.Kind.NCU, origin=Profile.Origin.WORKER, raw_text="",
                      parsed=NCU_PARSED)
    return {"kernel": kernel, "public": public, "run": Verification.objects.get(kernel=kernel),
            "ada": ada, "bob": bob}


def clients(world):
    """(who, page client, API client): a visitor, another user, the submitter."""
    found = [("anonymous", Client(), APIClient())]
    for name in ("bob", "ada"):
        page, api = Client(), APIClient()
        page.force_login(world[name])
        api.force_authenticate(world[name])
        found.append((name, page, api))
    return found


def code_doors(client, world) -> dict:
    """The doors that answer for the kernel by its id, and their status codes."""
    kernel, run = world["kernel"], world["run"]
    urls = {
        "bundle page": f"/kernels/{kernel.id}/bundle/",
        "bundle api": f"/api/kernels/{kernel.id}/bundle/",
        "gpu binary text": f"/kernels/{kernel.id}/gpu-binary.txt",
        "verifications api": f"/api/kernels/{kernel.id}/verifications/",
        "verification api": f"/api/verifications/{run.id}/",
        "related api": f"/api/kernels/{kernel.id}/related/",
    }
    return {door: client.get(url).status_code for door, url in urls.items()}


def shown(client, world) -> dict:
    """Whether each list and page shows the kernel."""
    kernel, public = world["kernel"], world["public"]
    task_page = client.get("/tasks/1/19/").content.decode()
    sources = task_page.split('id="sources"')[1].split('id="versions"')[0]
    claims_api = client.get("/api/claims/").json()
    public_page = client.get(f"/kernels/{public.id}/").content.decode()
    export = client.get("/api/exports/", {"format": "jsonl"})
    return {
        "task claims table": f'data-kernel-id="{kernel.id}"' in sources,
        "task claims source menu": '<option value="submissions"' in sources,
        "claims page list": kernel.name in client.get("/claims/", {"outcome": "all"}).content.decode(),
        "claims api groups": "submissions" in [group["source"] for group in claims_api["groups"]],
        "claims api total": claims_api["totals"]["kernels"] == 2,
        "home newest verifications": kernel.name in client.get("/").content.decode(),
        "export": kernel.name in b"".join(export.streaming_content).decode(),
        "compare menu": f"(#{kernel.id})" in public_page,
        "compare by id": "There is no kernel" not in client.get(
            f"/kernels/{public.id}/", {"compare": kernel.id}).content.decode(),
        "ncu compare by id": "There is no kernel" not in client.get(
            f"/kernels/{public.id}/", {"ncu_with": kernel.id}).content.decode(),
    }


def searched(client, world) -> dict:
    """Whether each search, the related kernels and the map show the kernel."""
    kernel, public = world["kernel"], world["public"]

    def search(**params):
        body = client.get("/api/search/", params).json()
        assert body["state"] == "ready", body
        return kernel.id in [hit["kernel_id"] for hit in body["results"]]

    return {
        "meaning search (pasted code)": search(q=kernel.code, mode="meaning"),
        "code search exact": search(q=TOKEN, mode="exact"),
        "code search regex": search(q=r"zebra_door_\w+", mode="regex"),
        "search page": f'data-kernel-id="{kernel.id}"' in client.get("/search/", {"q": TOKEN}).content.decode(),
        "related of the public kernel": kernel.id in [
            hit["kernel_id"] for hit in client.get(f"/api/kernels/{public.id}/related/").json()["related"]],
        "map": kernel.id in client.get("/api/map/").json()["points"]["id"],
    }


HIDDEN_DOORS = {"bundle page": 404, "bundle api": 404, "gpu binary text": 404, "verifications api": 404,
                "verification api": 404, "related api": 404}


def test_an_unpublished_submission_shows_through_no_door_then_every_one_once_it_passed(world):
    """By id: 404 (the bundle and the GPU listing to its submitter too); in lists and pages: left
    out, while queued and after a failed run; then all open once a run passed it. Search and the
    map are the next test's (it needs the real embedding model)."""
    kernel = world["kernel"]
    assert kernel.source_archive == "submissions" and not kernel.verified
    assert Claim.objects.filter(kernel=kernel, source_archive="submissions").exists()  # the import wrote one
    everyone = clients(world)
    for who, page, _ in everyone:
        assert code_doors(page, world) == HIDDEN_DOORS, who  # its submitter too: the code is on their page
        assert not any(shown(page, world).values()), (who, shown(page, world))
    # The public kernel's doors stay open meanwhile (the filter hides one kernel, not the task).
    anonymous = everyone[0][1]
    assert anonymous.get(f"/kernels/{world['public'].id}/bundle/").status_code == 200
    assert anonymous.get(f"/api/kernels/{world['public'].id}/verifications/").status_code == 200

    finish(kernel, "failed", flags=[{"name": "wrong_output", "blocking": True, "evidence": "max abs error 3.2"}])
    assert not kernel.verified
    for who, page, _ in everyone[:2]:
        assert code_doors(page, world) == HIDDEN_DOORS, who
        assert not any(shown(page, world).values()), who

    Verification.objects.create(kernel=kernel, requested_by=world["ada"])  # re-verified: this time it passes
    finish(kernel, "passed")
    assert kernel.verified
    for who, page, _ in everyone:
        assert code_doors(page, world) == dict.fromkeys(HIDDEN_DOORS, 200), who
        assert all(shown(page, world).values()), (who, shown(page, world))


@pytest.mark.heavy  # the real embedding model (docs/testing.md)
def test_search_related_and_the_map_show_it_only_once_published_though_a_full_build_took_it_in(world):
    call_command("build_index", "--no-progress")  # a full build embeds every kernel, the submission too
    call_command("build_map", "--no-progress")
    kernel = world["kernel"]
    assert KernelEmbedding.objects.filter(kernel=kernel).exists() and MapPoint.objects.filter(kernel=kernel).exists()
    everyone = clients(world)
    for who, page, _ in everyone:
        assert not any(searched(page, world).values()), (who, searched(page, world))
    finish(kernel, "passed")
    for who, page, _ in everyone:
        assert all(searched(page, world).values()), (who, searched(page, world))


def test_re_verify_does_not_say_whether_the_id_exists_until_published(world):
    kernel = world["kernel"]
    (_, visitor, visitor_api), (_, bob, bob_api), _ = clients(world)
    queued = Verification.objects.count()
    for kernel_id in (kernel.id, MISSING):
        missing = kernel_id == MISSING
        assert visitor_api.post(f"/api/kernels/{kernel_id}/reverify/").status_code in (401, 403)
        answer = visitor.post(f"/kernels/{kernel_id}/reverify/")
        assert answer.status_code == 302 and answer["Location"].startswith("/accounts/")
        api = bob_api.post(f"/api/kernels/{kernel_id}/reverify/")
        assert api.status_code == 404, missing
        assert bob.post(f"/kernels/{kernel_id}/reverify/").status_code == 404, missing
    # The same answer, word for word, for the submission and for an id no kernel has.
    assert bob_api.post(f"/api/kernels/{kernel.id}/reverify/").json() == \
        bob_api.post(f"/api/kernels/{MISSING}/reverify/").json()
    assert Verification.objects.count() == queued  # nothing was queued for it

    finish(kernel, "passed")
    assert bob_api.post(f"/api/kernels/{kernel.id}/reverify/").status_code == 202
    assert bob.post(f"/kernels/{kernel.id}/reverify/").status_code == 302  # back to the kernel's page


def test_a_task_holding_only_an_unpublished_submission_is_listed_empty(client, task, ada):
    submission, _ = submission_create(user=ada, task=task, kind="model_new", code=model_new())
    rows = client.get("/api/leaderboard/").json()["results"]
    # Listed as a task with nothing in it, as a task no archive has a kernel for: not left out,
    # which would say something is there.
    assert [(row["task"]["task_number"], row["id"], row["task_holds"]["kernels"]) for row in rows] == [(19, None, 0)]
    assert rows[0]["task_holds"]["summary"] == "no kernel imported"
    finish(submission.kernel, "passed")
    rows = client.get("/api/leaderboard/").json()["results"]
    assert [row.get("id") for row in rows] == [submission.kernel.id], rows
