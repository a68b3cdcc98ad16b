"""The CUDA-L1 campaign's records: built from a worker-shaped SQLite database, imported elsewhere.

Real components throughout: CUDA-L1's A100 rows (the shared subset, 24 rows, 21 with a kernel)
imported with import_archive's service; Verification rows as the worker leaves them, whose
documents are real judge documents of harness 2.4.1 from the worker's H200 call
(tests/fixtures/h200/sample_worker_2_4_1.json: a passed one and a failed one, of sample kernels:
here they stand for runs of CUDA-L1 kernels); the test database written into a file (its SQL
dump, schema and rows) and packed as results.tgz (data/archive.sqlite3), as
scripts/gpu_worker_throughput_h200.sh brings it back; a real Ed25519 key; the records imported
with `import_verifications` into an archive made afresh from the same rows (other kernel ids).
"""
import json
import sqlite3
import tarfile
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.utils import timezone

from evaluator.h200_results import build_campaign_records, campaign_status
from evaluator.verification_records import key_id_of, load_trusted_keys, new_private_key, private_key_pem
from evaluator.verification_results import fields_from_result
from kernels.import_services import archive_import_file
from kernels.models import Kernel, Task, Verification

REPO = Path(__file__).resolve().parents[2]
DEMO_ARCHIVE = REPO / "evaluator" / "demo_archive" / "demo_archive.jsonl"
WORKER_DOCUMENTS = REPO / "tests" / "fixtures" / "h200" / "sample_worker_2_4_1.json"

pytestmark = pytest.mark.django_db


def _documents():
    rows = json.loads(WORKER_DOCUMENTS.read_text())["rows"]
    passed = next(r["document"] for r in rows if r["document"]["verdict"] == "passed")
    failed = next(r["document"] for r in rows if r["document"]["verdict"] == "failed")
    return passed, failed


def _worker_run(kernel, status, document=None, *, minutes_ago=60):
    """A Verification row as the worker leaves it (evaluator/services.verification_run)."""
    fields = fields_from_result(document) if document else {}
    finished = status in ("passed", "failed", "error")
    return Verification.objects.create(
        kernel=kernel, origin="worker", **{**fields, "status": status}, result=document or {},
        bundle_sha256=("ab" * 32) if document else "", worker="gpu-host:0",
        started_at=timezone.now() - timedelta(minutes=minutes_ago + 2),
        finished_at=timezone.now() - timedelta(minutes=minutes_ago) if finished else None)


def _pack_results(tmp_path) -> Path:
    """The test database as the worker's data folder: data/archive.sqlite3 in results.tgz."""
    data = tmp_path / "device" / "data"
    data.mkdir(parents=True)
    connection.ensure_connection()
    # The test's rows are in its open transaction, which SQLite's backup API would wait on for
    # ever: the same connection writes them out as SQL instead (schema and rows, as Django made
    # them), less the search app's full-text tables, which a GPU worker's database has not
    # (archive_site/settings_gpu_worker.py).
    target = sqlite3.connect(data / "archive.sqlite3")
    target.executescript("\n".join(s for s in connection.connection.iterdump() if "_fts" not in s))
    target.close()
    results = tmp_path / "results.tgz"
    with tarfile.open(results, "w:gz") as archive:
        archive.add(data, arcname="data")
    return results


@pytest.fixture
def campaign(tmp_path, cuda_l1_sample_paths):
    """A worker's database after a call: CUDA-L1's A100 rows and the demo archive imported, five
    CUDA-L1 kernels touched (passed, failed, queued, running, given up) and one demo kernel run."""
    if connection.vendor != "sqlite":
        pytest.skip("the worker's database is SQLite")
    dump = cuda_l1_sample_paths["a100"]
    archive_import_file(path=dump)
    archive_import_file(path=DEMO_ARCHIVE)
    passed, failed = _documents()
    kernels = list(Kernel.objects.filter(source_archive="CUDA-L1").select_related("task").order_by("id"))
    _worker_run(kernels[0], "passed", passed, minutes_ago=90)
    _worker_run(kernels[1], "failed", failed)
    _worker_run(kernels[2], "queued")
    _worker_run(kernels[3], "running")
    Verification.objects.create(kernel=kernels[4], origin="worker", status="error", finished_at=timezone.now(),
                                log="the worker stopped during each of 2 attempts (killed, or the host died)")
    _worker_run(Kernel.objects.exclude(source_archive="CUDA-L1").first(), "passed", passed)
    key = new_private_key()
    key_file = tmp_path / "call.pem"
    key_file.write_bytes(private_key_pem(key))
    trusted = tmp_path / "trusted_keys.json"
    trusted.write_text((REPO / "evaluator" / "trusted_keys.json").read_text())
    return {"dump": dump, "kernels": kernels, "key": key, "key_file": key_file, "trusted": trusted,
            "results": _pack_results(tmp_path), "records": tmp_path / "cuda_l1", "passed": passed, "failed": failed}


def _build(campaign, name, capsys, *extra):
    out = campaign["records"] / f"{name}.jsonl"
    assert build_campaign_records.main(["--results", str(campaign["results"]), "--key", str(campaign["key_file"]),
                                        "--out", str(out), "--trusted-keys", str(campaign["trusted"]), *extra]) == 0
    return out, capsys.readouterr().out


def _fresh_archive(dump):
    """Another site: nothing but the same rows, imported afresh (new kernel ids)."""
    Verification.objects.all().delete()
    Kernel.objects.all().delete()
    Task.objects.all().delete()
    archive_import_file(path=dump)


def test_records_of_a_call_import_into_a_fresh_archive(campaign, capsys, settings):
    out, printed = _build(campaign, "a100-call-1", capsys, "--trust")
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["result"]["verdict"] for r in records] == ["passed", "failed"]
    assert "2 records (failed 1, passed 1; harness 2.4.1)" in printed
    for reason in ("left out 1: not finished (queued)", "left out 1: not finished (running)",
                   "left out 1: finished without a result document", "left out 1: not a CUDA-L1 kernel"):
        assert reason in printed
    first = campaign["kernels"][0]
    assert records[0]["kernel"] == {
        "source_archive": "CUDA-L1", "level": first.task.level, "task_number": first.task.task_number,
        "op_name": first.task.op_name, "task_reference_sha256": records[0]["kernel"]["task_reference_sha256"],
        "name": first.name, "kind": "model_new", "code_sha256": first.code_sha256}
    assert records[0]["verifier"]["name"] == "kernel-archive project (H200 CUDA-L1 campaign, a100-call-1)"
    assert records[0]["result"] == campaign["passed"] and records[0]["bundle_sha256"] == "ab" * 32
    # --trust appended the key once, beside the shipped one; a second time changes nothing.
    trusted = load_trusted_keys(campaign["trusted"])
    key_id = key_id_of(campaign["key"].public_key())
    shipped = json.loads(Path(settings.TRUSTED_KEYS_FILE).read_text())["keys"]
    assert len(trusted) == len(shipped) + 1 and trusted[key_id].owner == records[0]["verifier"]["name"]
    assert not build_campaign_records.trust(campaign["key"], owner="x", note="", path=campaign["trusted"])

    old_ids = {k.code_sha256: k.id for k in campaign["kernels"]}
    _fresh_archive(campaign["dump"])
    settings.TRUSTED_KEYS_FILE = campaign["trusted"]
    call_command("import_verifications", str(out))
    kernels = {k.code_sha256: k for k in Kernel.objects.all()}
    assert {k.id for k in kernels.values()}.isdisjoint(old_ids.values())
    shown = {sha: (k.verdict, k.verdict_flags, k.verified, k.remeasured_gpu) for sha, k in kernels.items() if k.verdict}
    passed_sha, failed_sha = campaign["kernels"][0].code_sha256, campaign["kernels"][1].code_sha256
    blocking = sorted(f["name"] for f in campaign["failed"]["flags"] if f["blocking"])
    assert shown == {passed_sha: ("passed", "", True, "NVIDIA H200"),
                     failed_sha: ("failed", "," + ",".join(blocking) + ",", False, "")}
    run = kernels[passed_sha].latest_verification
    assert (run.origin, run.verifier_name, run.harness_version) == ("imported", records[0]["verifier"]["name"], "2.4.1")
    assert kernels[passed_sha].remeasured_speedup_eager == pytest.approx(campaign["passed"]["speedup"]["vs_eager"])


def test_an_altered_record_is_refused(campaign, capsys, settings, tmp_path):
    out, _ = _build(campaign, "a100-call-1", capsys, "--trust")
    records = [json.loads(line) for line in out.read_text().splitlines()]
    records[1]["result"]["verdict"] = "passed"
    records[1]["result"]["flags"] = []
    altered = tmp_path / "altered.jsonl"
    altered.write_text("".join(json.dumps(r) + "\n" for r in records))
    _fresh_archive(campaign["dump"])
    settings.TRUSTED_KEYS_FILE = campaign["trusted"]
    with pytest.raises(CommandError, match="changed after it was signed"):
        call_command("import_verifications", str(altered))
    assert not Verification.objects.exists()


def test_a_second_call_leaves_out_what_the_first_recorded(campaign, capsys):
    """A call that kept the earlier call's database (KEEP=1) brings its runs back too."""
    _build(campaign, "a100-call-1", capsys)
    out, printed = _build(campaign, "a100-call-2", capsys)
    assert out.read_text() == "" and "left out 2: already recorded in a100-call-1.jsonl" in printed
    with pytest.raises(SystemExit, match="exists"):
        _build(campaign, "a100-call-1", capsys)


def test_status_counts_what_is_done_and_lists_what_is_left(campaign, capsys, tmp_path):
    _build(campaign, "a100-call-1", capsys)
    todo = tmp_path / "todo.json"
    assert campaign_status.main(["--dumps", str(campaign["dump"]), "--records", str(campaign["records"]),
                                 "--db", str(campaign["results"]), "--next", "3", "--todo", str(todo)]) == 0
    printed = capsys.readouterr().out
    blocking = ", ".join(sorted(f["name"] for f in campaign["failed"]["flags"] if f["blocking"]))
    assert "a100_subset.jsonl: 24 rows, 21 with a kernel (0 also in a dump above), 2 with a signed record, 19 to do" in printed
    assert "   1  passed" in printed and f"   1  failed: {blocking}" in printed
    assert "to do: 19 kernels" in printed and "not there: 0" in printed
    left = [k.id for k in campaign["kernels"][2:]]
    assert f"KERNELS={','.join(map(str, left[:3]))}" in printed
    listed = json.loads(todo.read_text())
    assert [k["worker_id"] for k in listed] == left
    assert [k["code_sha256"] for k in listed] == [k.code_sha256 for k in campaign["kernels"][2:]]
    # Without the device database: the identities only.
    campaign_status.main(["--dumps", str(campaign["dump"]), "--records", str(campaign["records"]),
                          "--db", str(tmp_path / "absent.tgz")])
    assert "no device database" in capsys.readouterr().out
