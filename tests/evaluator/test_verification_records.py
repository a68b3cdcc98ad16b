"""Signed verification records: export, import elsewhere, and every way a file is refused.

Real components throughout: the demo archive imported with import_archive's service, records
signed with real Ed25519 keys, files written and read back, the shipped H200 records checked
against the shipped trusted key.
"""
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from evaluator.verification_export import VerificationExportSummary, export_records, verifications_for_export
from evaluator.verification_files import write_records
from evaluator.verification_import import VerificationImportError, verification_import_file
from evaluator.verification_records import (
    canonical_bytes, key_id_of, make_record, new_private_key, private_key_pem, public_key_text, sign_record,
)
from kernels.models import Kernel, Task, Verification
from evaluator.services import kernel_verification_state_refresh
from kernels.services import archive_import_file

REPO = Path(__file__).resolve().parents[2]
DEMO_ARCHIVE = REPO / "evaluator" / "demo_archive" / "demo_archive.jsonl"
SHIPPED_DEMO_RECORDS = REPO / "evaluator" / "h200_results" / "demo_archive_h200.jsonl"
CHEATS = {"relu_stale_memory": "stale_memory", "relu_cached_by_pointer": "cached_output",
          "matmul_library_call": "library_call_replaces_kernel", "tiny_matmul_scaled_zeros": "constant_output"}

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo_archive():
    archive_import_file(path=DEMO_ARCHIVE)
    return {kernel.name: kernel for kernel in Kernel.objects.select_related("task")}


@pytest.fixture
def test_key(tmp_path, settings):
    """A key of our own, trusted by this site (as an operator adds a worker's public key)."""
    key = new_private_key()
    trusted = tmp_path / "trusted_keys.json"
    trusted.write_text(json.dumps({"keys": [{"owner": "test worker", "public_key": public_key_text(key.public_key())}]}))
    settings.TRUSTED_KEYS_FILE = trusted
    key_file = tmp_path / "worker.pem"
    key_file.write_bytes(private_key_pem(key))
    settings.WORKER_KEY_FILE = str(key_file)
    return key


def _shipped_lines() -> list[str]:
    return [line for line in SHIPPED_DEMO_RECORDS.read_text().splitlines() if line.strip()]


def _state():
    """What the pages show of each kernel: verdict, flags, re-measured numbers and who vouches."""
    return {
        kernel.name: (kernel.verdict, kernel.verdict_flags, kernel.verified, kernel.remeasured_speedup_eager,
                      kernel.remeasured_gpu,
                      sorted((v.status, v.origin, v.verifier_name, v.harness_version, v.speedup_eager)
                             for v in kernel.verifications.all()))
        for kernel in Kernel.objects.prefetch_related("verifications")
    }


def test_shipped_h200_records_load_and_flag_every_cheat(demo_archive):
    summary = verification_import_file(path=SHIPPED_DEMO_RECORDS)
    assert (summary.added, summary.by_origin) == (14, {"imported": 14})
    kernels = {k.name: k for k in Kernel.objects.all()}
    for name, flag in CHEATS.items():
        assert kernels[name].verdict == "failed" and flag in kernels[name].verdict_flags, name
        assert kernels[name].remeasured_speedup_eager is None
    honest = [k for name, k in kernels.items() if name not in CHEATS]
    assert all(k.verdict == "passed" and k.remeasured_speedup_eager > 0 and k.remeasured_gpu == "NVIDIA H200"
               for k in honest)
    run = Verification.objects.get(kernel=kernels["relu_stale_memory"])
    assert run.verifier_name == "kernel-archive project (H200 campaigns)"
    assert run.harness_version == "2.4.0" and len(run.result["versions"]["harness_sha256"]) == 64
    assert any(f["name"] == "stale_memory" and f["evidence"] for f in run.flags)
    # The weak task's findings become the task's own.
    assert any(flag["name"] == "near_zero_output" for flag in Task.objects.get(level=1, task_number=904).flags)
    again = verification_import_file(path=SHIPPED_DEMO_RECORDS)
    assert (again.added, again.already_present) == (0, 14)


@pytest.mark.parametrize("suffix", ["jsonl", "parquet"])
def test_round_trip_export_then_import_elsewhere_gives_the_same_pages(demo_archive, tmp_path, suffix, client):
    verification_import_file(path=SHIPPED_DEMO_RECORDS)
    before = _state()
    page_before = client.get(f"/kernels/{demo_archive['relu_stale_memory'].id}/").content
    out = tmp_path / f"out.{suffix}"
    call_command("export_verifications", str(out))
    # "Elsewhere": the same archive without any verification.
    Verification.objects.all().delete()
    for kernel in Kernel.objects.all():
        kernel_verification_state_refresh(kernel_id=kernel.id)
    assert not Kernel.objects.exclude(verdict="").exists()
    call_command("import_verifications", str(out))
    assert _state() == before
    assert client.get(f"/kernels/{demo_archive['relu_stale_memory'].id}/").content == page_before
    if suffix == "jsonl":  # passed on byte for byte
        assert sorted(out.read_text().splitlines()) == sorted(_shipped_lines())


def test_a_tampered_record_refuses_the_file_and_writes_nothing(demo_archive, tmp_path):
    lines = _shipped_lines()
    record = json.loads(lines[2])
    record["result"]["verdict"] = "passed"  # a cheat promoting itself
    record["result"]["flags"] = []
    lines[2] = json.dumps(record)
    path = tmp_path / "tampered.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(VerificationImportError) as refused:
        verification_import_file(path=path)
    assert "tampered.jsonl line 3" in str(refused.value)
    assert "changed after it was signed" in str(refused.value)
    assert not Verification.objects.exists() and not Kernel.objects.exclude(verdict="").exists()


def test_a_record_signed_by_an_unknown_key_is_refused_or_kept_unsigned_on_request(demo_archive, tmp_path):
    stranger = new_private_key()
    kernel = demo_archive["relu_stale_memory"]
    record = json.loads(_shipped_lines()[2])
    assert record["kernel"]["name"] == "relu_stale_memory"
    record.pop("signature")
    record["result"] = {**record["result"], "verdict": "passed", "flags": []}
    record["verifier"] = {"name": "someone", "key_id": key_id_of(stranger.public_key())}
    path = tmp_path / "stranger.jsonl"
    path.write_text(json.dumps(sign_record(record, stranger)) + "\n")
    with pytest.raises(CommandError, match="which this site does not know"):
        call_command("import_verifications", str(path))
    assert not Verification.objects.exists()

    summary = verification_import_file(path=path, keep_unsigned=True)
    assert summary.kept_unsigned == 1
    run = Verification.objects.get()
    assert run.origin == "unsigned" and run.verifier_name == "someone (unsigned)"
    kernel.refresh_from_db()
    assert not kernel.verified and kernel.verdict == ""  # an unsigned "passed" counts for nothing


@pytest.mark.parametrize("content, message", [
    ('{"format": "kernel-archive.verification/1"\n', "malformed JSON"),
    ('{"format": "something-else/1"}\n', "format must be"),
    ("[1, 2]\n", "must be a JSON object"),
])
def test_a_malformed_file_is_refused_naming_the_line(demo_archive, tmp_path, content, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(_shipped_lines()[0] + "\n" + content)
    with pytest.raises(VerificationImportError) as refused:
        verification_import_file(path=path)
    assert "bad.jsonl line 2" in str(refused.value) and message in str(refused.value)
    assert not Verification.objects.exists()


def test_a_parquet_file_that_is_not_one_is_refused(demo_archive, tmp_path):
    path = tmp_path / "bad.parquet"
    path.write_bytes(b"PAR1 not really")
    with pytest.raises(CommandError, match="not a readable Parquet file"):
        call_command("import_verifications", str(path))


def test_record_fields_must_agree_with_the_result_document(demo_archive, tmp_path, test_key):
    kernel = demo_archive["relu_float4_grid_stride"]
    record = json.loads(_shipped_lines()[1])
    record.pop("signature")
    record["verifier"]["key_id"] = key_id_of(test_key.public_key())
    record["gpu"] = "NVIDIA H100"  # the document says H200
    path = tmp_path / "liar.jsonl"
    path.write_text(json.dumps(sign_record(record, test_key)) + "\n")
    with pytest.raises(VerificationImportError, match="gpu is 'NVIDIA H100' but the result document says 'NVIDIA H200'"):
        verification_import_file(path=path)
    assert kernel.verifications.count() == 0


def test_wrong_task_version_or_unknown_kernel_is_refused(demo_archive, tmp_path, test_key):
    base = json.loads(_shipped_lines()[1])
    base.pop("signature")
    base["verifier"]["key_id"] = key_id_of(test_key.public_key())
    other_version = json.loads(json.dumps(base))
    other_version["kernel"]["task_reference_sha256"] = "0" * 64
    unknown = json.loads(json.dumps(base))
    unknown["kernel"]["code_sha256"] = "f" * 64
    path = tmp_path / "mismatch.jsonl"
    path.write_text("".join(json.dumps(sign_record(r, test_key)) + "\n" for r in (other_version, unknown)))
    with pytest.raises(VerificationImportError) as refused:
        verification_import_file(path=path)
    assert "another version of the task" in str(refused.value)
    assert "no kernel with code sha256 ffffffffffff" in str(refused.value)
    summary = verification_import_file(path=path, skip_missing_kernels=True)
    assert (summary.added, summary.skipped_missing_kernel) == (0, 2)


def test_this_sites_own_results_are_signed_with_the_worker_key_on_export(demo_archive, tmp_path, test_key):
    kernel = demo_archive["softmax_warp_shuffle_online"]
    result = json.loads(_shipped_lines()[6])["result"]
    assert json.loads(_shipped_lines()[6])["kernel"]["name"] == kernel.name
    from evaluator.verification_results import fields_from_result
    from django.utils import timezone
    Verification.objects.create(kernel=kernel, **fields_from_result(result), result=result,
                                finished_at=timezone.now())
    kernel_verification_state_refresh(kernel_id=kernel.id)
    summary = VerificationExportSummary()
    records = list(export_records(verifications_for_export(), summary))
    assert (summary.signed_here, summary.passed_on) == (1, 0)
    assert records[0]["verifier"]["key_id"] == key_id_of(test_key.public_key())
    out = tmp_path / "mine.jsonl"
    write_records(out, records)
    Verification.objects.all().delete()
    summary = verification_import_file(path=out)
    assert summary.by_origin == {"imported": 1}
    kernel.refresh_from_db()
    assert kernel.verified and kernel.remeasured_speedup_eager == pytest.approx(result["speedup"]["vs_eager"])


def test_export_without_a_worker_key_says_how_to_make_one(demo_archive, tmp_path, settings):
    settings.WORKER_KEY_FILE = None
    kernel = demo_archive["softmax_warp_shuffle_online"]
    Verification.objects.create(kernel=kernel, status="passed", gpu_name="NVIDIA H200", harness_version="1.2.0",
                                versions={"harness": "1.2.0", "gpu": "NVIDIA H200"})
    with pytest.raises(CommandError, match="verifier_key new PATH"):
        call_command("export_verifications", str(tmp_path / "x.jsonl"))
    assert not (tmp_path / "x.jsonl").exists()


def test_signature_covers_every_byte_of_the_record():
    key = new_private_key()
    record = make_record(kernel={"name": "k"}, result={"verdict": "passed", "speedup": {"vs_eager": 1.2345678901234}},
                         bundle_sha256="", verified_at="2026-01-01T00:00:00Z", verifier_name="v",
                         key_id=key_id_of(key.public_key()))
    signed = sign_record(record, key)
    from evaluator.verification_records import signature_is_valid
    assert signature_is_valid(signed, key.public_key())
    changed = json.loads(json.dumps(signed))
    changed["result"]["speedup"]["vs_eager"] = 1.2345678901235
    assert canonical_bytes(changed) != canonical_bytes(signed)
    assert not signature_is_valid(changed, key.public_key())
