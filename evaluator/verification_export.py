"""Verification rows -> signed records (reads, plus signing with this site's worker key).

A row that came in as a signed record goes out exactly as it came (same bytes, same
signature), so a record can travel through any number of sites and still check against the
key of whoever ran it. A row this site's own worker produced is signed here, with the key in
settings.WORKER_KEY_FILE, as the verifier named settings.VERIFIER_NAME. Rows kept as
"unsigned" are never exported: nobody vouches for them.
"""
import hashlib
import json
from dataclasses import dataclass, field
from typing import Iterator

from django.conf import settings

from kernels.models import FINISHED_STATUSES, Verification

from .verification_records import key_id_of, load_private_key, make_record, sign_record

# Keys of the result document that fields_from_result reads, to rebuild a document for a
# worker row stored before rows kept the whole document.
_REBUILT_NOTE = "rebuilt from the stored verification fields: the full document was not kept"


class VerificationExportError(Exception):
    pass


@dataclass
class VerificationExportSummary:
    exported: int = 0
    signed_here: int = 0
    passed_on: int = 0
    skipped_unsigned: int = 0
    by_origin: dict = field(default_factory=dict)


def verifications_for_export(*, level: int | None = None, kernel_ids: list[int] | None = None,
                             origins: list[str] | None = None):
    rows = Verification.objects.filter(status__in=FINISHED_STATUSES).select_related("kernel__task")
    if level is not None:
        rows = rows.filter(kernel__task__level=level)
    if kernel_ids:
        rows = rows.filter(kernel_id__in=kernel_ids)
    if origins:
        rows = rows.filter(origin__in=origins)
    return rows.order_by("kernel__task__level", "kernel__task__task_number", "kernel_id", "finished_at", "id")


def export_records(rows, summary: VerificationExportSummary) -> Iterator[dict]:
    """Signed records for the rows; signs this site's own rows with the worker key."""
    signer = None
    for row in rows.iterator(chunk_size=200):
        if row.origin == Verification.Origin.UNSIGNED:
            summary.skipped_unsigned += 1
            continue
        if row.signed_record:
            record = json.loads(row.signed_record)
            record["signature"] = {"algorithm": "ed25519", "key_id": row.verifier_key_id, "value": row.signature}
            summary.passed_on += 1
        else:
            signer = signer or _worker_key()
            record = sign_record(_record_of(row, key_id_of(signer.public_key())), signer)
            summary.signed_here += 1
        summary.exported += 1
        summary.by_origin[row.origin] = summary.by_origin.get(row.origin, 0) + 1
        yield record


def kernel_identity(kernel) -> dict:
    task = kernel.task
    return {
        "source_archive": kernel.source_archive, "level": task.level, "task_number": task.task_number,
        "op_name": task.op_name, "task_reference_sha256": hashlib.sha256(task.reference_code.encode("utf-8")).hexdigest(),
        "name": kernel.name, "kind": kernel.kind, "code_sha256": kernel.code_sha256,
    }


def _record_of(row: Verification, key_id: str) -> dict:
    result = row.result or _rebuilt_document(row)
    finished = row.finished_at or row.created_at
    return make_record(kernel=kernel_identity(row.kernel), result=result, bundle_sha256=row.bundle_sha256,
                       verified_at=finished.isoformat().replace("+00:00", "Z"), verifier_name=settings.VERIFIER_NAME,
                       key_id=key_id)


def _rebuilt_document(row: Verification) -> dict:
    flags = [{key: value for key, value in flag.items() if key != "task_flag"}
             for flag in row.flags or [] if isinstance(flag, dict) and not flag.get("task_flag")]
    task_flags = [{key: value for key, value in flag.items() if key != "task_flag"}
                  for flag in row.flags or [] if isinstance(flag, dict) and flag.get("task_flag")]
    speedup = {key: value for key, value in (("vs_eager", row.speedup_eager), ("vs_compile", row.speedup_compile))
               if value is not None}
    return {
        "verdict": row.status, "flags": flags, "task_flags": task_flags, "trials": row.trials or [],
        "tolerance": row.tolerance or {}, "timings": row.timings or {}, "speedup": speedup,
        "versions": row.versions or {"harness": row.harness_version, "gpu": row.gpu_name},
        "device": row.device, "seeds": row.seeds or [], "log": row.log, "note": _REBUILT_NOTE,
    }


def _worker_key():
    path = getattr(settings, "WORKER_KEY_FILE", None)
    if not path:
        raise VerificationExportError(
            "this site's own verifications must be signed on export, and no key is set: create one with "
            "`python manage.py verifier_key new PATH` and set ARCHIVE_WORKER_KEY_FILE=PATH "
            "(or export only imported records with --origin imported)")
    try:
        return load_private_key(path)
    except ValueError as exc:
        raise VerificationExportError(f"ARCHIVE_WORKER_KEY_FILE: {exc}") from None
