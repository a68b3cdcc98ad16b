"""Writes of screening (kernels/screening.py): suspected_* flags onto kernels, at import and on demand.

The static scan is the harness's own (verifier/core/static_scan.py), run through
kernels/screening_scan.py: the same findings, computed fast enough for a 30,000-kernel import, so
screening and the harness read a source the same way. A source is scanned once however many
kernels share it (same code, same kind), and only kernels whose flags change are written. Profiles are the archive's (origin "archive"): what the archive
already holds, no GPU needed.

An import screens its new kernels from the records it is writing (ImportScreening): each batch's
kernels carry their flags into their INSERT, so nothing is read back or updated afterwards but
the kernels the archive-wide "no kernel profiled" check flags (it needs the whole archive, so it
runs once the last batch is written). kernel_screening_refresh gives the same flags from the rows.
"""
import json
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
    expected = _ncu_expected_by_archive(set(kernels.order_by().values_list("source_archive", flat=True).distinct()))
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


def _ncu_expected_by_archive(archives) -> dict[str, bool]:
    counts = (Kernel.objects.filter(source_archive__in=archives, claimed_correct=True).order_by()
              .values_list("source_archive")
              .annotate(correct=Count("id", distinct=True),
                        profiled=Count("id", distinct=True, filter=Q(profiles__kind=Profile.Kind.NCU,
                                                                     profiles__origin=Profile.Origin.ARCHIVE))))
    return {archive: profiled >= MIN_PROFILED and profiled >= NCU_EXPECTED_SHARE * correct
            for archive, correct, profiled in counts}


class ImportScreening:
    """One import's screening, batch by batch, from the records in memory: `screen` sets a new
    kernel's flags before its INSERT (the flags kernel_screening_refresh would store: the same
    scan, each source once, the same profiles), `finish` runs the archive-wide "no kernel
    profiled" check once every batch is written and stores the flags it adds."""

    def __init__(self):
        self.scan = None  # loaded with the first kernel: it loads torch (the verifier's checks)
        self.source_flags = {}  # (code sha256, kind) -> the static scan's flags
        # Kernels whose flags the archive-wide check would change, with those flags: the batch
        # being written (unsaved kernels), then by id once written (kernels_written).
        self.unsaved, self.if_ncu_expected = [], []

    def screen(self, kernel: Kernel, profiles) -> None:
        """Set the new (unsaved) kernel's screening_flags and suspected from its code and its
        archive profiles (ProfileRecords)."""
        if self.scan is None:
            from .screening_scan import scan

            self.scan = scan
        by_kind = {p.kind: p.parsed for p in profiles if p.kind in (Profile.Kind.NCU, Profile.Kind.TORCH)}
        try:
            source = (kernel.code_sha256, kernel.kind)  # the record's, computed from this code
            if source not in self.source_flags:
                self.source_flags[source] = screen_source(kernel.code, kernel.kind, self.scan)
            flags = [[dict(flag) for flag in self.source_flags[source]] + screen_profiles(
                code=kernel.code, claimed_correct=kernel.claimed_correct,
                torch_profile=by_kind.get(Profile.Kind.TORCH) or None,
                ncu_profile=by_kind.get(Profile.Kind.NCU) or None, ncu_expected=expected)
                for expected in (False, True)]
        except Exception:  # a scanner bug on odd archive text must not refuse an import
            log.exception("screening kernel %s (%s) failed; left unscreened", kernel.name, kernel.code_sha256)
            return
        kernel.screening_flags, kernel.suspected = flags[0], bool(flags[0])
        if flags[1] != flags[0]:
            self.unsaved.append((kernel, flags[1]))

    def kernels_written(self) -> None:
        """The kernels screened so far are saved: keep their ids, not them (nor their code)."""
        self.if_ncu_expected.extend((kernel.id, flags) for kernel, flags in self.unsaved)
        self.unsaved = []

    def finish(self, source_archive: str) -> None:
        """The archive-wide check, on the archive as it stands with every batch written: when
        its other correct kernels were profiled, a correct kernel without an ncu profile is
        suspect. Writes only the kernels it flags (one UPDATE per distinct flag list)."""
        if not self.if_ncu_expected or not _ncu_expected_by_archive({source_archive[:255]}).get(source_archive[:255]):
            return
        by_flags = {}
        for kernel_id, flags in self.if_ncu_expected:
            by_flags.setdefault(json.dumps(flags), (flags, []))[1].append(kernel_id)
        for flags, ids in by_flags.values():
            for start in range(0, len(ids), BATCH_SIZE):
                Kernel.objects.filter(id__in=ids[start:start + BATCH_SIZE]).update(
                    screening_flags=flags, suspected=bool(flags))
