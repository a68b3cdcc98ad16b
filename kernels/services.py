"""Writes to the archive. Imports are all-or-nothing: one transaction per file."""
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction
from django.db.models import F, Q

from .ingest import fields
from .ingest.archive_schema import archive_row_to_record, looks_like_archive_row
from .ingest.errors import IngestError, RowError
from .ingest.kernelbench_schema import kernelbench_row_to_record, looks_like_kernelbench_row
from .ingest.readers import UnreadableRow, first_row, open_source
from .ingest.records import KernelRecord
from .models import Kernel, Profile, Task, Verification
from .page_cache import archive_changed
from .techniques import detect_techniques, encode_tags
from .verdicts import encode_names

BATCH_SIZE = 500
MAX_ERRORS_REPORTED = 200
SCHEMAS = {"archive": archive_row_to_record, "kernelbench": kernelbench_row_to_record}


@dataclass
class ImportSummary:
    source_archive: str = ""
    rows_read: int = 0
    tasks_added: int = 0
    kernels_added: int = 0
    kernels_already_present: int = 0
    duplicates_in_file: int = 0
    profiles_added: int = 0
    rejected: list[RowError] = field(default_factory=list)
    added_kernel_ids: list[int] = field(default_factory=list)

    def lines(self) -> list[str]:
        return [
            f"source archive:           {self.source_archive}",
            f"rows read:                {self.rows_read}",
            f"tasks added:              {self.tasks_added}",
            f"kernels added:            {self.kernels_added}",
            f"kernels already there:    {self.kernels_already_present}",
            f"duplicates within file:   {self.duplicates_in_file}",
            f"profiles added:           {self.profiles_added}",
            f"rows rejected:            {len(self.rejected)}",
        ]


def detect_schema(path: Path) -> str:
    try:
        row = first_row(open_source(path))
    except UnreadableRow as unreadable:
        raise IngestError([unreadable.error]) from None
    if isinstance(row, dict) and looks_like_archive_row(row):
        return "archive"
    if isinstance(row, dict) and looks_like_kernelbench_row(row):
        return "kernelbench"
    raise ValueError(
        f"{path}: cannot tell the format from the first row (no CUDA_Code/Kernel_Name columns of the archive "
        "schema, no ref_code/custom_code of KernelBench pairs); pass --format"
    )


def archive_import_file(
    *, path: Path, schema: str = "auto", source_archive: str | None = None, hardware: str = "", progress=None
) -> ImportSummary:
    """Import one archive file. Raises IngestError (and writes nothing) if any row is bad.

    `progress` is an optional callable taking the number of rows just read (a tqdm's update).
    """
    path = Path(path)
    source = open_source(path)
    if schema == "auto":
        schema = detect_schema(path)
    if schema not in SCHEMAS:
        raise ValueError(f"unknown format {schema!r}; expected auto, archive or kernelbench")
    to_record = SCHEMAS[schema]
    summary = ImportSummary(source_archive=source_archive or path.stem)
    task_cache: dict[tuple[int, int], Task] = {}
    seen_in_file: set[tuple[int, int, str]] = set()
    batch: list[KernelRecord] = []

    with transaction.atomic():
        try:
            for where, row in source.rows():
                summary.rows_read += 1
                if progress:
                    progress(1)
                try:
                    record = to_record(row, hardware=hardware)
                except fields.FieldProblem as problem:
                    if len(summary.rejected) < MAX_ERRORS_REPORTED:
                        summary.rejected.append(RowError(path.name, where, problem.field, str(problem)))
                    continue
                if summary.rejected:
                    continue  # the file is lost already; keep reading only to report every bad row
                key = (record.level, record.task_number, record.code_sha256)
                if key in seen_in_file:
                    summary.duplicates_in_file += 1
                    continue
                seen_in_file.add(key)
                batch.append(record)
                if len(batch) >= BATCH_SIZE:
                    kernel_ingest_batch(records=batch, source_archive=summary.source_archive,
                                        summary=summary, task_cache=task_cache)
                    batch = []
        except UnreadableRow as unreadable:
            summary.rejected.append(unreadable.error)
        if summary.rejected:
            raise IngestError(summary.rejected, rows_read=summary.rows_read)  # rolls the transaction back
        if batch:
            kernel_ingest_batch(records=batch, source_archive=summary.source_archive,
                                summary=summary, task_cache=task_cache)
        # Screen the new kernels (static scan, profiles) inside the same transaction: a kernel is
        # never visible unscreened, so never ranked before its suspicions are known.
        from .screening_services import kernel_screening_refresh

        kernel_screening_refresh(kernel_ids=summary.added_kernel_ids)
        # Embed and index the new kernels in the worker once this file's transaction commits.
        from search.services import queue_index_update  # here: search loads FAISS

        queue_index_update(summary.added_kernel_ids)
        if summary.kernels_added or summary.tasks_added:
            archive_changed()  # cached leaderboard pages and menus, once this commits
    return summary


def kernel_ingest_batch(
    *, records: list[KernelRecord], source_archive: str, summary: ImportSummary | None = None,
    task_cache: dict | None = None,
) -> ImportSummary:
    """Write validated records: create missing tasks, skip kernels already stored (same
    task, same code hash), bulk-create the rest with their profiles."""
    summary = summary if summary is not None else ImportSummary(source_archive=source_archive)
    task_cache = task_cache if task_cache is not None else {}
    with transaction.atomic():
        tasks = _tasks_for(records, task_cache, summary)
        shas = {(tasks[(r.level, r.task_number)].id, r.code_sha256) for r in records}
        existing = set(
            Kernel.objects.filter(
                task_id__in={task_id for task_id, _ in shas}, code_sha256__in={sha for _, sha in shas}
            ).values_list("task_id", "code_sha256")
        )
        new_records = []
        for record in records:
            if (tasks[(record.level, record.task_number)].id, record.code_sha256) in existing:
                summary.kernels_already_present += 1
            else:
                new_records.append(record)
        kernels = Kernel.objects.bulk_create(
            [_kernel_from(record, tasks[(record.level, record.task_number)], source_archive) for record in new_records],
            batch_size=BATCH_SIZE,
        )
        profiles = [
            Profile(kernel=kernel, kind=p.kind, origin=Profile.Origin.ARCHIVE, raw_text=p.raw_text, parsed=p.parsed)
            for kernel, record in zip(kernels, new_records)
            for p in record.profiles
        ]
        Profile.objects.bulk_create(profiles, batch_size=BATCH_SIZE)
    summary.kernels_added += len(kernels)
    summary.profiles_added += len(profiles)
    summary.added_kernel_ids.extend(k.id for k in kernels)
    return summary


def _tasks_for(records: list[KernelRecord], cache: dict, summary: ImportSummary) -> dict:
    wanted = {(r.level, r.task_number): r for r in records}
    missing = [key for key in wanted if key not in cache]
    if missing:
        query = Q()
        for level, number in missing:
            query |= Q(level=level, task_number=number)
        for task in Task.objects.filter(query):
            cache[(task.level, task.task_number)] = task
    for key, record in wanted.items():
        task = cache.get(key)
        if task is None:
            task = Task.objects.create(
                level=record.level, task_number=record.task_number, op_name=record.op_name,
                reference_code=record.reference_code,
                functional_code=record.functional_code or _known_functional_form(record),
            )
            summary.tasks_added += 1
            cache[key] = task
        elif not task.functional_code and record.functional_code:
            task.functional_code = record.functional_code
            task.save(update_fields=["functional_code"])
    return cache


def _known_functional_form(record: KernelRecord) -> str:
    """Functional forms the project ships for KernelBench tasks, matched on level, task and op name."""
    from verifier.functional_forms import functional_form_source

    return functional_form_source(record.level, record.task_number, record.op_name) or ""


def _kernel_from(record: KernelRecord, task: Task, source_archive: str) -> Kernel:
    return Kernel(
        task=task, name=record.name[:255], kind=record.kind, code=record.code, code_sha256=record.code_sha256,
        source_archive=source_archive[:255], experiment=record.experiment[:255], archive_index=record.archive_index,
        claimed_runtime_ms=record.claimed_runtime_ms, claimed_native_runtime_ms=record.claimed_native_runtime_ms,
        claimed_compile_runtime_ms=record.claimed_compile_runtime_ms,
        claimed_speedup_native=record.claimed_speedup_native,
        claimed_speedup_compile=record.claimed_speedup_compile, claimed_correct=record.claimed_correct,
        claimed_max_diff=record.claimed_max_diff, error_text=record.error_text, hardware=record.hardware[:128],
        technique_tags=encode_tags(detect_techniques(record.code)),
    )


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
