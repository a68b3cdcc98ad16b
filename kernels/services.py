"""Writes to the archive. Imports (all-or-nothing, one transaction per file) live in
kernels/import_services.py and are re-exported here, where callers have always found them."""
from django.db.models import F

from .import_services import (  # noqa: F401  (the import API, re-exported)
    ImportSummary, archive_import_file, kernel_ingest_batch,
)
from .models import Kernel, Verification
from .page_cache import archive_changed
from .verdicts import encode_names


FINISHED_VERIFICATION_STATUSES = (
    Verification.Status.PASSED, Verification.Status.FAILED, Verification.Status.ERROR,
)
# Results that move a kernel's verified state: this site's worker and records signed by a key
# the site trusts. Contributions and unsigned records are shown beside them, never counted.
TRUSTED_ORIGINS = (Verification.Origin.WORKER, Verification.Origin.IMPORTED)


def kernel_verification_state_refresh(*, kernel_id: int) -> None:
    """Copy the kernel's latest trusted finished verification onto the kernel (see Kernel.verified):
    verified state, verdict in plain words, blocking flag names and the re-measured numbers with
    their GPU."""
    latest = (
        Verification.objects.filter(kernel_id=kernel_id, status__in=FINISHED_VERIFICATION_STATUSES,
                                    origin__in=TRUSTED_ORIGINS)
        .order_by(F("finished_at").desc(nulls_last=True), "-id").first()
    )
    blocking = [flag.get("name", "") for flag in (latest.flags if latest else []) or []
                if isinstance(flag, dict) and flag.get("blocking")]
    verified = latest is not None and latest.status == Verification.Status.PASSED and not blocking
    verdict = "" if latest is None else ("passed" if verified else
                                         "error" if latest.status == Verification.Status.ERROR and not blocking
                                         else "failed")
    Kernel.objects.filter(id=kernel_id).update(
        latest_verification=latest, verified=verified, verdict=verdict, verdict_flags=encode_names(blocking),
        remeasured_runtime_ms=latest.runtime_ms if verified else None,
        remeasured_speedup_eager=latest.speedup_eager if verified else None,
        remeasured_speedup_compile=latest.speedup_compile if verified else None,
        remeasured_gpu=(latest.gpu_name or latest.device)[:128] if verified else "",
    )
    archive_changed()
