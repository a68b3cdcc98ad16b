"""Writes of screening (kernels/screening.py): suspected_* flags onto kernels, at import and on demand.

The static scan is the harness's own (verifier/static_scan.py), run through
kernels/screening_scan.py: the same findings, computed fast enough for a 30,000-kernel import, so
screening and the harness read a source the same way. A source is scanned once however many
kernels share it (same code, same kind), and only kernels whose flags change are written. Profiles are the archive's (origin "archive"): what the archive
already holds, no GPU needed.
"""
import logging

from django.db import transaction
from django.db.models import Count, Prefetch, Q

from .ingest.records import code_sha256
from .models import Kernel, Profile
from .page_cache import archive_changed
from .screening import screen_profiles, screen_source

log = logging.getLogger(__name__)
BATCH_SIZE = 500
# ncu is "expected" for a kernel when its archive profiled at least this share of its
# claimed-correct kernels (and at least MIN_PROFILED of them).
NCU_EXPECTED_SHARE = 0.5
MIN_PROFILED = 2


def kernel_screening_refresh(*, kernel_ids=None) -> int:
    """Screen these kernels (all when None) and store their flags. Returns how many are suspected."""
    from .screening_scan import scan  # here: it loads torch (the verifier's checks), which only screening needs

    kernels = Kernel.objects.all() if kernel_ids is None else Kernel.objects.filter(id__in=list(kernel_ids))
    expected = _ncu_expected_by_archive(kernels)
    profiles = Prefetch("profiles", to_attr="archive_profiles",
                        queryset=Profile.objects.filter(origin=Profile.Origin.ARCHIVE,
                                                        kind__in=[Profile.Kind.NCU, Profile.Kind.TORCH])
                        .only("id", "kernel_id", "kind", "parsed"))
    suspected = 0
    batch, source_flags = [], {}
    rows = kernels.only("id", "kind", "code", "claimed_correct", "source_archive",
                        "screening_flags", "suspected").prefetch_related(profiles)
    with transaction.atomic():
        for kernel in rows.iterator(chunk_size=BATCH_SIZE):
            by_kind = {profile.kind: profile.parsed for profile in kernel.archive_profiles}
            try:
                source = (code_sha256(kernel.code), kernel.kind)  # the code itself: a stored sha may be stale
                if source not in source_flags:
                    source_flags[source] = screen_source(kernel.code, kernel.kind, scan)
                flags = [dict(flag) for flag in source_flags[source]] + screen_profiles(
                    code=kernel.code, claimed_correct=kernel.claimed_correct,
                    torch_profile=by_kind.get(Profile.Kind.TORCH) or None,
                    ncu_profile=by_kind.get(Profile.Kind.NCU) or None,
                    ncu_expected=expected.get(kernel.source_archive, False))
            except Exception:  # a scanner bug on odd archive text must not refuse an import
                log.exception("screening kernel %s failed; left unscreened", kernel.id)
                continue
            suspected += bool(flags)
            if kernel.screening_flags == flags and kernel.suspected == bool(flags):
                continue  # stored as it is (a new kernel with nothing to suspect): no write
            kernel.screening_flags, kernel.suspected = flags, bool(flags)
            batch.append(kernel)
            if len(batch) >= BATCH_SIZE:
                Kernel.objects.bulk_update(batch, ["screening_flags", "suspected"])
                batch = []
        if batch:
            Kernel.objects.bulk_update(batch, ["screening_flags", "suspected"])
        archive_changed()
    return suspected


def _ncu_expected_by_archive(kernels) -> dict[str, bool]:
    archives = set(kernels.order_by().values_list("source_archive", flat=True).distinct())
    counts = (Kernel.objects.filter(source_archive__in=archives, claimed_correct=True).order_by()
              .values_list("source_archive")
              .annotate(correct=Count("id", distinct=True),
                        profiled=Count("id", distinct=True, filter=Q(profiles__kind=Profile.Kind.NCU,
                                                                     profiles__origin=Profile.Origin.ARCHIVE))))
    return {archive: profiled >= MIN_PROFILED and profiled >= NCU_EXPECTED_SHARE * correct
            for archive, correct, profiled in counts}
