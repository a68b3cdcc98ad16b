"""Imports: one transaction per file, all of its good rows or nothing.

A row that is malformed rejects the file (every problem named by file, row and field). A row
that is well formed but holds no kernel (fields.NotAKernel: a dump's placeholder for a task it
has no kernel for) rejects the file too unless the import skips such rows
(rows_without_kernel="skip"): each is then reported by file, row and reason, and counted.

Every kernel lands on its task (named from the catalog) and on the task version its reference
belongs to; every row becomes a Claim of its source on its GPU, so the same code from two
sources (or GPUs) is one kernel with two claims.
"""
import gc
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction

from .catalog_services import CatalogState, tasks_for_records, version_for
from .extension_points import kernels_added
from .ingest import fields
from .ingest.errors import IngestError, RowError
from .ingest.formats import SCHEMAS, ImportOptions, detect_schema, rows_without_kernel_default
from .ingest.readers import Source, UnreadableRow, open_source
from .ingest.records import KernelRecord
from .models import Claim, Kernel, Profile
from .page_cache import archive_changed
from .screening_services import ImportScreening
from .techniques import detect_techniques, encode_tags

BATCH_SIZE = 500
MAX_ERRORS_REPORTED = 200
ROWS_WITHOUT_KERNEL = ("refuse", "skip")


@dataclass
class ImportSummary:
    source_archive: str = ""
    schema: str = ""
    rows_read: int = 0
    tasks_added: int = 0
    versions_added: int = 0
    kernels_added: int = 0
    kernels_already_present: int = 0
    duplicates_in_file: int = 0
    claims_added: int = 0
    profiles_added: int = 0
    rejected: list[RowError] = field(default_factory=list)
    skipped: list[RowError] = field(default_factory=list)  # rows without a kernel, when skipped
    added_kernel_ids: list[int] = field(default_factory=list)

    def lines(self) -> list[str]:
        lines = [
            f"source archive:           {self.source_archive}",
            f"format:                   {self.schema}",
            f"rows read:                {self.rows_read}",
            f"tasks added:              {self.tasks_added}",
            f"task versions added:      {self.versions_added}",
            f"kernels added:            {self.kernels_added}",
            f"kernels already there:    {self.kernels_already_present}",
            f"duplicates within file:   {self.duplicates_in_file}",
            f"claims added:             {self.claims_added}",
            f"profiles added:           {self.profiles_added}",
            f"rows skipped (no kernel): {len(self.skipped)}",
            f"rows rejected:            {len(self.rejected)}",
        ]
        return lines + [f"  skipped {error}" for error in self.skipped]


def archive_import_file(
    *, path=None, source: Source | None = None, schema: str = "auto", source_archive: str | None = None,
    hardware: str = "", progress=None, rows_without_kernel: str | None = None, problems: Path | None = None,
    baseline: Path | None = None,
) -> ImportSummary:
    """Import one archive: a `source` opened by the caller (the command opens it once, for its
    progress bar too, and hands it on), or a `path` (a file, a folder or a hub id) opened here
    with `hardware`, `problems` and `baseline` as its options. Raises IngestError (and writes
    nothing) if any row is bad; kernels/ingest/messages.py words every failure for a person.
    `rows_without_kernel` is "refuse" or "skip" (default: the format's, see ingest/formats.py);
    `problems` and `baseline` are read by KernelBench run folders only. `progress` is an
    optional callable taking the number of rows just read (a tqdm's update)."""
    if source is None:
        source = open_source(path, ImportOptions(hardware=hardware, problems=problems, baseline=baseline))
    try:
        with _cycle_collector_paused():
            return _import_source(source, schema, source_archive, progress, rows_without_kernel)
    finally:
        source.close()


@contextmanager
def _cycle_collector_paused():
    """An import makes millions of short-lived objects (each profile's syntax tree, the model
    instances of each batch) that reference counting frees; the cycle collector, run on their
    allocation counts, walked every long-lived object of the process over and over (about 100
    full collections for 30,000 rows, 13 % of the CPU at 10,000). Paused for the import (the
    whole process: memory held by cycles waits for the import's end), restored as it was."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _import_source(source: Source, schema: str, source_archive: str | None, progress,
                   rows_without_kernel: str | None) -> ImportSummary:
    schema = detect_schema(source) if schema == "auto" else schema
    if schema not in SCHEMAS:
        raise ValueError(f"unknown format {schema!r}; expected auto or one of {', '.join(SCHEMAS)}")
    rows_without_kernel = rows_without_kernel or rows_without_kernel_default(schema)
    if rows_without_kernel not in ROWS_WITHOUT_KERNEL:
        raise ValueError(f"rows_without_kernel must be refuse or skip, not {rows_without_kernel!r}")
    to_record, hardware = SCHEMAS[schema].to_record, SCHEMAS[schema].hardware_for(source, source.options)
    summary = ImportSummary(source_archive=source_archive or SCHEMAS[schema].source_name(source), schema=schema)
    state, seen_in_file, batch = CatalogState(), set(), []
    screening = ImportScreening()
    file_name = source.display_name

    with transaction.atomic():
        try:
            for where, row in source.rows():
                summary.rows_read += 1
                if progress:
                    progress(1)
                try:
                    record = to_record(row, hardware=hardware)
                except fields.NotAKernel as problem:
                    error = RowError(file_name, where, problem.field, str(problem))
                    if rows_without_kernel == "skip":
                        summary.skipped.append(error)
                    elif len(summary.rejected) < MAX_ERRORS_REPORTED:
                        summary.rejected.append(error)
                    continue
                except fields.FieldProblem as problem:
                    if len(summary.rejected) < MAX_ERRORS_REPORTED:
                        summary.rejected.append(RowError(file_name, where, problem.field, str(problem)))
                    continue
                if summary.rejected:
                    continue  # the file is lost already; keep reading only to report every bad row
                key = (record.level, record.task_number, record.code_sha256, record.hardware)
                if key in seen_in_file:
                    summary.duplicates_in_file += 1
                    continue
                seen_in_file.add(key)
                batch.append(record)
                if len(batch) >= BATCH_SIZE:
                    kernel_ingest_batch(records=batch, source_archive=summary.source_archive, summary=summary,
                                        state=state, screening=screening)
                    batch = []
        except UnreadableRow as unreadable:
            summary.rejected.append(unreadable.error)
        if summary.rejected:
            raise IngestError(summary.rejected, rows_read=summary.rows_read)  # rolls the transaction back
        if batch:
            kernel_ingest_batch(records=batch, source_archive=summary.source_archive, summary=summary, state=state,
                                screening=screening)
        _after_import(summary, screening)
    return summary


def _after_import(summary: ImportSummary, screening: ImportScreening) -> None:
    # The new kernels were screened (static scan, profiles) as each batch was written, inside
    # this transaction: a kernel is never visible unscreened, so never ranked before its
    # suspicions are known. What needs the whole archive is checked now.
    if summary.added_kernel_ids:
        screening.finish(summary.source_archive)
    # Other apps' work on new kernels (search embeds and indexes them once this commits).
    if summary.added_kernel_ids:
        kernels_added.send(sender=ImportSummary, kernel_ids=list(summary.added_kernel_ids))
    if summary.kernels_added or summary.tasks_added or summary.claims_added:
        archive_changed()  # cached leaderboard pages and menus, once this commits


def kernel_ingest_batch(
    *, records: list[KernelRecord], source_archive: str, summary: ImportSummary | None = None,
    state: CatalogState | None = None, screening: ImportScreening | None = None,
) -> ImportSummary:
    """Write validated records: tasks and versions they need, kernels not stored yet (same task,
    same code hash: the same kernel, whatever the source) with their profiles, and one claim per
    record unless this source already claimed that kernel on that GPU. With `screening`, each new
    kernel is written with its screening flags (its `finish` is the caller's, after the last batch)."""
    summary = summary if summary is not None else ImportSummary(source_archive=source_archive)
    state = state if state is not None else CatalogState()
    with transaction.atomic():
        tasks = tasks_for_records(records, state)
        versions = [version_for(r, tasks[(r.level, r.task_number)], source_archive, state) for r in records]
        keys = [(tasks[(r.level, r.task_number)].id, r.code_sha256) for r in records]
        stored = dict(
            ((task_id, sha), kernel_id) for kernel_id, task_id, sha in Kernel.objects.filter(
                task_id__in={k[0] for k in keys}, code_sha256__in={k[1] for k in keys}
            ).values_list("id", "task_id", "code_sha256")
        )
        summary.kernels_already_present += sum(1 for key in keys if key in stored)
        firsts = {}
        for key, record, version in zip(keys, records, versions):
            if key not in stored and key not in firsts:
                firsts[key] = _kernel_from(record, tasks[(record.level, record.task_number)], version, source_archive)
                if screening is not None:
                    screening.screen(firsts[key], record.profiles)
        kernels = Kernel.objects.bulk_create(list(firsts.values()), batch_size=BATCH_SIZE)
        if screening is not None:
            screening.kernels_written()
        kernel_ids = {**stored, **{key: kernel.id for key, kernel in zip(firsts, kernels)}}
        new_records = {key: record for key, record in zip(keys, records) if key in firsts}
        profiles = [
            Profile(kernel=kernel, kind=p.kind, origin=Profile.Origin.ARCHIVE, raw_text=p.raw_text, parsed=p.parsed)
            for kernel, key in zip(kernels, firsts) for p in new_records[key].profiles
        ]
        Profile.objects.bulk_create(profiles, batch_size=BATCH_SIZE)
        summary.claims_added += _add_claims(records, versions, [kernel_ids[key] for key in keys], source_archive)
    summary.tasks_added, summary.versions_added = state.tasks_added, state.versions_added
    summary.kernels_added += len(kernels)
    summary.profiles_added += len(profiles)
    summary.added_kernel_ids.extend(k.id for k in kernels)
    return summary


def _add_claims(records, versions, kernel_ids, source_archive: str) -> int:
    """One claim per (kernel, source, GPU); a claim this source already made is left as it was."""
    claimed = set(Claim.objects.filter(kernel_id__in=set(kernel_ids), source_archive=source_archive[:255])
                  .values_list("kernel_id", "hardware"))
    claims = []
    for record, version, kernel_id in zip(records, versions, kernel_ids):
        key = (kernel_id, record.hardware[:128])
        if key in claimed:
            continue
        claimed.add(key)
        speedups = {Claim.speedup_field(baseline): value for baseline, value in record.speedups().items()}
        claims.append(Claim(
            kernel_id=kernel_id, task_version=version, source_archive=source_archive[:255],
            hardware=record.hardware[:128], name=record.name[:255], experiment=record.experiment[:255],
            claimed_correct=record.claimed_correct, runtime_ms=record.claimed_runtime_ms,
            eager_runtime_ms=record.claimed_native_runtime_ms, compile_runtime_ms=record.claimed_compile_runtime_ms,
            baseline_code=record.baseline_code, **speedups,
        ))
    Claim.objects.bulk_create(claims, batch_size=BATCH_SIZE)
    return len(claims)


def _kernel_from(record: KernelRecord, task, version, source_archive: str) -> Kernel:
    return Kernel(
        task=task, task_version=version, name=record.name[:255], kind=record.kind, code=record.code,
        code_sha256=record.code_sha256, source_archive=source_archive[:255], experiment=record.experiment[:255],
        archive_index=record.archive_index, claimed_runtime_ms=record.claimed_runtime_ms,
        claimed_native_runtime_ms=record.claimed_native_runtime_ms,
        claimed_compile_runtime_ms=record.claimed_compile_runtime_ms,
        claimed_speedup_native=record.claimed_speedup_native,
        claimed_speedup_compile=record.claimed_speedup_compile, claimed_correct=record.claimed_correct,
        claimed_max_diff=record.claimed_max_diff, error_text=record.error_text, hardware=record.hardware[:128],
        technique_tags=encode_tags(detect_techniques(record.code)),
    )
