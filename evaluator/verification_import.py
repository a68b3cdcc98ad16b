"""Writes of imported verification records: check every record, then store them all or none.

Each record must be well formed, its kernel must be in the archive (same task, same task
version, same code sha256), and its signature must check against a key the site knows:
- a key in settings.TRUSTED_KEYS_FILE: the result counts as the site's own (origin
  "imported": it moves the kernel's verified state and rankings);
- a contributor's key (VerifierKey, registered by a signed-in user): origin "contributed",
  shown as "verified by <owner> on <GPU>" beside the site's results, never moving rankings.
Anything else (tampered, signed by an unknown key, unsigned) refuses the whole file, naming
each record and why, unless the caller asks to keep such records as "unsigned" (shown as
unsigned, counting for nothing). The fields of a row come from the result document through
evaluator/verification_results.fields_from_result, as the worker's do.
"""
import hashlib
import json
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Iterable

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from kernels.ingest.bounded import ReadLimits
from kernels.models import TRUSTED_ORIGINS, Kernel, Task, Verification, VerifierKey
from kernels.page_cache import archive_changed
from kernels.services import task_flags_merge

from .services import kernel_verification_state_refresh
from .record_types import check_result_types
from .task_timing import is_timing_task_flag
from .verification_files import COMMAND_LIMITS, read_records
from .verification_records import (
    RecordProblem, check_record_shape, load_trusted_keys, parse_time, public_key_from_text, record_sha256,
    signature_is_valid,
)
from .verification_results import fields_from_result

# An answer names this many problems and counts the rest: a file of five million bad lines
# once produced a 424 MB error body.
MAX_PROBLEMS_REPORTED = 50
# A signer's clock may run a little ahead of ours; a record dated further ahead is refused (a
# record dated 2099 once headed the home page's newest verifications for good).
CLOCK_SKEW = timedelta(minutes=10)


class VerificationImportError(Exception):
    """The file was refused; `problems` names the first MAX_PROBLEMS_REPORTED problems, the last
    line counting the rest."""

    def __init__(self, problems: list[str], *, records_read: int = 0, total: int | None = None):
        total = len(problems) if total is None else total
        self.problems = problems[:MAX_PROBLEMS_REPORTED]
        if total > len(self.problems):
            self.problems.append(f"... and {total - len(self.problems)} more problem(s) not listed")
        self.records_read = records_read
        shown = "\n".join(f"  {problem}" for problem in self.problems)
        super().__init__(f"refused: {total} problem(s) in {records_read} record(s) read; "
                         f"nothing was imported\n{shown}")


class _Problems:
    """Every problem counted, the first MAX_PROBLEMS_REPORTED kept."""

    def __init__(self):
        self.kept: list[str] = []
        self.total = 0

    def add(self, problem: str) -> None:
        self.total += 1
        if len(self.kept) < MAX_PROBLEMS_REPORTED:
            self.kept.append(problem)


@dataclass
class VerificationImportSummary:
    records_read: int = 0
    added: int = 0
    already_present: int = 0
    kept_unsigned: int = 0
    skipped_missing_kernel: int = 0
    by_origin: dict = field(default_factory=dict)
    kernels_refreshed: int = 0

    def lines(self) -> list[str]:
        origins = ", ".join(f"{origin} {count}" for origin, count in sorted(self.by_origin.items())) or "-"
        return [
            f"records read:             {self.records_read}",
            f"verifications added:      {self.added} ({origins})",
            f"already there:            {self.already_present}",
            f"kept as unsigned:         {self.kept_unsigned}",
            f"skipped (kernel absent):  {self.skipped_missing_kernel}",
            f"kernels re-ranked:        {self.kernels_refreshed}",
        ]


@dataclass
class _Checked:
    where: str
    record: dict
    kernel_id: int
    origin: str
    verifier_name: str
    sha: str


def verification_import_file(*, path: Path, file_format: str = "auto", keep_unsigned: bool = False,
                             skip_missing_kernels: bool = False, contributor=None,
                             limits: ReadLimits = COMMAND_LIMITS) -> VerificationImportSummary:
    """Import a JSONL or Parquet file of signed records (docs/verification_records.md), read
    record by record within `limits`."""
    return verification_import_records(records=read_records(Path(path), file_format, limits),
                                       keep_unsigned=keep_unsigned, skip_missing_kernels=skip_missing_kernels,
                                       contributor=contributor)


def verification_import_records(*, records: Iterable[tuple[str, object]], keep_unsigned: bool = False,
                                skip_missing_kernels: bool = False, contributor=None) -> VerificationImportSummary:
    """`records`: (where, record) pairs, read lazily (a RecordProblem the reader raises ends the
    reading and refuses the file). `contributor`: a user uploading their own results; then only
    their own registered keys are accepted, never the site's trusted ones."""
    summary = VerificationImportSummary()
    problems = _Problems()
    shaped = _shaped(records, summary, problems)
    if problems.total:
        raise VerificationImportError(problems.kept, records_read=summary.records_read, total=problems.total)
    trusted = _trusted_keys()
    contributor_keys = _contributor_keys(contributor)
    kernels = _kernels_of([record for _, record in shaped])
    checked: list[_Checked] = []
    for where, record in shaped:
        origin, name, problem = _vouched_for(record, trusted, contributor_keys, contributor)
        if problem and keep_unsigned and contributor is None:
            origin, name, problem = Verification.Origin.UNSIGNED, f"{record['verifier']['name']} (unsigned)", None
            summary.kept_unsigned += 1
        if problem:
            problems.add(f"{where}: {problem}")
            continue
        kernel_id, problem = _kernel_of(record["kernel"], kernels)
        if problem and skip_missing_kernels:
            summary.skipped_missing_kernel += 1
            continue
        if problem:
            problems.add(f"{where}: {problem}")
            continue
        checked.append(_Checked(where, record, kernel_id, origin, name, record_sha256(record)))
    if problems.total:
        raise VerificationImportError(problems.kept, records_read=summary.records_read, total=problems.total)
    _store(checked, summary, contributor)
    return summary


def _shaped(records, summary: VerificationImportSummary, problems: _Problems) -> list[tuple[str, dict]]:
    """Read every record and check its fields; once one is wrong the file is lost, so later
    records are checked (and their problems counted) but no longer kept."""
    shaped = []
    latest_allowed = timezone.now() + CLOCK_SKEW
    try:
        for where, record in records:
            summary.records_read += 1
            try:
                check_record_shape(record, where)
                check_result_types(record["result"], where)
                if parse_time(record["verified_at"]) > latest_allowed:
                    raise RecordProblem(where, f"verified_at {record['verified_at'][:40]!r} is in the future: "
                                               "a result cannot be dated after it reached this site")
            except RecordProblem as problem:
                problems.add(str(problem))
                continue
            if not problems.total:
                shaped.append((where, record))
    except RecordProblem as unreadable:  # the reader stopped: a line that is not JSON, a cap reached
        problems.add(str(unreadable))
    return shaped


def _trusted_keys():
    try:
        return load_trusted_keys(settings.TRUSTED_KEYS_FILE)
    except ValueError as exc:
        raise VerificationImportError([f"the trusted keys file cannot be read: {exc}"]) from None


def _contributor_keys(contributor) -> dict:
    keys = VerifierKey.objects.all()
    if contributor is not None:
        keys = keys.filter(user=contributor)
    return {key.key_id: key for key in keys}


def _vouched_for(record: dict, trusted: dict, contributor_keys: dict, contributor) -> tuple[str, str, str | None]:
    """(origin, verifier name to show, problem or None)."""
    signature = record.get("signature")
    key_id = record["verifier"]["key_id"]
    if signature is None:
        return "", "", "the record is not signed"
    if key_id in trusted and contributor is not None:
        # The site's own results come in through an operator's import_verifications only: one that
        # staff deleted must not come back through the contributors' door.
        return "", "", (f"signed by {trusted[key_id].owner}'s key {key_id}, one of this site's trusted keys: "
                        "the site's own results are not taken as contributions")
    if key_id in trusted:
        if not signature_is_valid(record, trusted[key_id].public_key):
            return "", "", (f"the signature does not match the record (signed by trusted key {key_id}, "
                            f"{trusted[key_id].owner}): the record was changed after it was signed")
        return Verification.Origin.IMPORTED, trusted[key_id].owner, None
    if key_id in contributor_keys:
        key = contributor_keys[key_id]
        if not signature_is_valid(record, public_key_from_text(key.public_key)):
            return "", "", (f"the signature does not match the record (signed by {key.owner_name}'s key {key_id}): "
                            "the record was changed after it was signed")
        return Verification.Origin.CONTRIBUTED, key.owner_name, None
    return "", "", (f"signed by key {key_id}, which this site does not know: it is neither in the trusted keys "
                    f"file ({Path(settings.TRUSTED_KEYS_FILE).name}) nor a contributor's registered key")


def _kernels_of(records: list[dict]) -> dict:
    """(level, task_number) -> (task id, reference sha256, {code sha256: kernel id}), in two queries."""
    wanted = {(r["kernel"]["level"], r["kernel"]["task_number"]) for r in records}
    if not wanted:
        return {}
    query = Q()
    for level, number in wanted:
        query |= Q(level=level, task_number=number)
    tasks = {task.id: task for task in Task.objects.filter(query).only("id", "level", "task_number", "reference_code")}
    shas = {r["kernel"]["code_sha256"] for r in records}
    by_task: dict[int, dict[str, int]] = {}
    for kernel_id, task_id, sha in Kernel.objects.filter(task_id__in=tasks, code_sha256__in=shas).values_list(
            "id", "task_id", "code_sha256"):
        by_task.setdefault(task_id, {})[sha] = kernel_id
    return {(task.level, task.task_number): (task.id, hashlib.sha256(task.reference_code.encode("utf-8")).hexdigest(),
                                             by_task.get(task.id, {})) for task in tasks.values()}


def _kernel_of(identity: dict, kernels: dict) -> tuple[int | None, str | None]:
    key = (identity["level"], identity["task_number"])
    label = f"kernel {identity['name'][:80]!r} of level {key[0]} task {key[1]}"
    if key not in kernels:
        return None, f"{label}: the archive has no such task"
    task_id, reference_sha, by_sha = kernels[key]
    if reference_sha != identity["task_reference_sha256"]:
        return None, (f"{label}: the verification ran against another version of the task (reference sha256 "
                      f"{identity['task_reference_sha256'][:12]}..., the archive's is {reference_sha[:12]}...)")
    if identity["code_sha256"] not in by_sha:
        return None, f"{label}: the archive holds no kernel with code sha256 {identity['code_sha256'][:12]}..."
    return by_sha[identity["code_sha256"]], None


@transaction.atomic
def _store(checked: list[_Checked], summary: VerificationImportSummary, contributor) -> None:
    shas = [item.sha for item in checked]
    present = set(Verification.objects.filter(record_sha256__in=shas).values_list("record_sha256", flat=True))
    rows, seen = [], set()
    for item in checked:
        if item.sha in present or item.sha in seen:
            summary.already_present += 1
            continue
        seen.add(item.sha)
        rows.append(_row(item, contributor))
        summary.by_origin[item.origin] = summary.by_origin.get(item.origin, 0) + 1
    created = Verification.objects.bulk_create(rows, batch_size=200)
    summary.added = len(created)
    trusted_rows = [row for row in created if row.origin in TRUSTED_ORIGINS]
    _merge_task_flags(trusted_rows)
    kernel_ids = sorted({row.kernel_id for row in created})
    for kernel_id in kernel_ids:
        kernel_verification_state_refresh(kernel_id=kernel_id)
    summary.kernels_refreshed = len(kernel_ids)
    if created:
        archive_changed()


def _row(item: _Checked, contributor) -> Verification:
    """created_at is when this site received the record. The signer's verified_at is kept as
    claimed_at; it dates the run (finished_at) only when a trusted key vouches for it: a
    contribution or an unsigned record is as new as its arrival, whatever it says."""
    record = item.record
    unsigned = {key: value for key, value in record.items() if key != "signature"}
    signature = record.get("signature") or {}
    claimed = parse_time(record["verified_at"])
    received = timezone.now()
    finished = claimed if item.origin in TRUSTED_ORIGINS else received
    return Verification(
        kernel_id=item.kernel_id, origin=item.origin, **fields_from_result(record["result"]),
        result=record["result"], bundle_sha256=record["bundle_sha256"], claimed_at=claimed,
        started_at=finished, finished_at=finished,
        verifier_name=item.verifier_name[:255], verifier_key_id=record["verifier"]["key_id"],
        signed_record=json.dumps(unsigned, sort_keys=True, separators=(",", ":"), ensure_ascii=False),
        signature=str(signature.get("value") or "")[:128], record_sha256=item.sha,
        worker=f"imported: {record['verifier']['name']}"[:255], requested_by=contributor,
    )


def _merge_task_flags(rows: list[Verification]) -> None:
    """Weak-task findings of trusted results are the task's own: kernels' task_flags_merge adds
    the ones a task lacks."""
    found: dict[int, list] = {}
    for row in rows:
        for flag in row.result.get("task_flags") or []:  # timing's findings stay out (evaluator/task_timing.py)
            if isinstance(flag, dict) and isinstance(flag.get("name"), str) and not is_timing_task_flag(flag["name"]):
                found.setdefault(row.kernel_id, []).append(flag)
    task_flags_merge(flags_by_kernel=found)
