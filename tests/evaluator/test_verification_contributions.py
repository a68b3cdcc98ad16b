"""Anyone signed in can contribute a verification: register a key, run a downloaded bundle,
sign the result with evaluator.sign_result, upload it. It shows as "verified by <owner> on
<GPU>" beside the site's own results, in its own GPU's group, and never moves rankings."""
import json
from pathlib import Path

import pytest
from django.contrib.auth.models import User

from evaluator.kernel_bundles import bundle_for_kernel
from evaluator.sign_result import signed_record
from evaluator.verification_import import verification_import_file
from evaluator.verification_records import new_private_key, private_key_pem, public_key_text
from kernels.models import Kernel, Verification
from kernels.services import archive_import_file

from .contributor import register_key

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "evaluator" / "h200_results" / "demo_archive_h200.jsonl"

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo():
    archive_import_file(path=REPO / "evaluator" / "demo_archive" / "demo_archive.jsonl")
    verification_import_file(path=SHIPPED)
    return {kernel.name: kernel for kernel in Kernel.objects.select_related("task")}


def _my_run(tmp_path, kernel, *, gpu="NVIDIA GeForce RTX 4090", key=None, name="Alice Example"):
    """What a contributor does: download the bundle, run it (its shipped H200 document stands in
    for the run, on another GPU), sign the result."""
    bundle = tmp_path / "bundle.zip"
    bundle.write_bytes(bundle_for_kernel(kernel))
    shipped = next(json.loads(line) for line in SHIPPED.read_text().splitlines()
                   if json.loads(line)["kernel"]["name"] == kernel.name)
    result = shipped["result"]
    result["versions"] = {**result["versions"], "gpu": gpu, "driver": "575.0"}
    (tmp_path / "result.json").write_text(json.dumps(result))
    key_file = tmp_path / "my_key.pem"
    key_file.write_bytes(private_key_pem(key))
    record = signed_record(key_path=key_file, bundle=bundle, result_path=tmp_path / "result.json", name=name,
                           verified_at="2026-12-01T10:00:00Z")
    records = tmp_path / "results.jsonl"
    records.write_text(json.dumps(record) + "\n")
    return records


def test_a_signed_in_user_contributes_a_result_from_their_own_gpu(demo, tmp_path, client):
    alice = User.objects.create_user("alice", password="pw")
    key = new_private_key()
    kernel = demo["relu_float4_grid_stride"]
    before = (kernel.verdict, kernel.remeasured_speedup_eager, kernel.remeasured_gpu)
    records = _my_run(tmp_path, kernel, key=key)
    assert client.post("/api/verifier-keys/", {"public_key": public_key_text(key.public_key())}).status_code in (401, 403)
    client.force_login(alice)
    response = register_key(client, key, "Alice Example")
    assert response.status_code == 201, response.content
    with records.open("rb") as handle:
        response = client.post("/api/verifications/contribute/", {"file": handle})
    assert response.status_code == 200, response.content
    assert response.json()["by_origin"] == {"contributed": 1}
    run = Verification.objects.get(origin="contributed")
    assert (run.kernel_id, run.verifier_name, run.gpu_name, run.requested_by) == (
        kernel.id, "Alice Example", "NVIDIA GeForce RTX 4090", alice)
    assert len(run.bundle_sha256) == 64
    kernel.refresh_from_db()
    assert (kernel.verdict, kernel.remeasured_speedup_eager, kernel.remeasured_gpu) == before  # not ranked on
    html = client.get(f"/kernels/{kernel.id}/").content.decode()
    assert "verified by Alice Example" in html and "contribution" in html
    assert '<h3 class="gpu-group">NVIDIA GeForce RTX 4090</h3>' in html and '<h3 class="gpu-group">NVIDIA H200</h3>' in html


def test_a_record_signed_with_someone_elses_key_is_refused(demo, tmp_path, client):
    alice, mallory = User.objects.create_user("alice"), User.objects.create_user("mallory")
    key = new_private_key()
    client.force_login(alice)
    assert register_key(client, key).status_code == 201
    records = _my_run(tmp_path, demo["relu_float4_grid_stride"], key=key, name="Mallory")
    client.force_login(mallory)
    with records.open("rb") as handle:
        response = client.post("/api/verifications/contribute/", {"file": handle})
    assert response.status_code == 400
    assert "does not know" in response.json()["errors"][0]["message"]
    assert not Verification.objects.filter(origin="contributed").exists()


def test_the_sites_trusted_key_cannot_be_registered_and_bad_keys_say_why(demo, client):
    client.force_login(User.objects.create_user("bob"))
    trusted = json.loads((REPO / "evaluator" / "trusted_keys.json").read_text())["keys"][0]["public_key"]
    unproven = {"challenge": "none", "signature": "none"}  # refused before the proof is looked at
    response = client.post("/api/verifier-keys/", {"public_key": trusted, **unproven})
    assert response.status_code == 400 and "trusted keys" in response.json()["detail"]
    response = client.post("/api/verifier-keys/", {"public_key": "not a key", **unproven})
    assert response.status_code == 400 and "public_key" in response.json()["detail"]


def test_the_contribute_page_uploads_and_shows_problems(demo, tmp_path, client):
    client.force_login(User.objects.create_user("carol"))
    assert client.get("/verifications/contribute/").status_code == 200
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    with bad.open("rb") as handle:
        response = client.post("/verifications/contribute/upload/", {"file": handle}, follow=True)
    html = response.content.decode()
    assert "Refused: nothing was imported." in html and "malformed JSON" in html
