"""Kernels -> rows of the archive schema, streamed in batches.

Each batch costs a fixed number of queries whatever its size: the kernels (a chunked
`.iterator()`), their archive profiles (raw text only), their worker profiles (parsed
only), their finished verifications when the extra columns or the verified filter need
them, and the tasks not seen before (a few hundred in all, cached for the whole export).
Memory is one batch of rows plus the task cache, never the archive.
"""
import json
from typing import Iterator

from django.db.models import Prefetch, QuerySet

from verifier.core import result as result_doc

from ..models import Profile, Task
from ..techniques import decode_tags
from .schema import column_names
from .selectors import latest_finished_verifications

DEFAULT_BATCH_SIZE = 500
PROFILE_COLUMNS = {"ncu": "NCU_Profile", "torch": "Torch_Profile", "clang_tidy": "Clang_Tidy"}
_KERNEL_FIELDS = (
    "id", "task_id", "name", "kind", "code", "source_archive", "experiment", "archive_index", "hardware", "verified",
    "technique_tags", "claimed_runtime_ms", "claimed_native_runtime_ms", "claimed_compile_runtime_ms",
    "claimed_speedup_native", "claimed_speedup_compile", "claimed_correct", "claimed_max_diff", "error_text",
)
_VERIFICATION_FIELDS = (
    "id", "kernel_id", "status", "flags", "runtime_ms", "eager_runtime_ms", "compile_runtime_ms", "speedup_eager",
    "speedup_compile", "max_abs_error", "max_rel_error", "gpu_name", "harness_version", "versions",
    "bundle_sha256", "finished_at", "timings", "device", "origin", "verifier_name",
)


def archive_row_batches(
    kernels: QuerySet, *, archive_compatible: bool, batch_size: int = DEFAULT_BATCH_SIZE, progress=None,
) -> Iterator[list[dict]]:
    """Yield lists of row dicts (columns in schema order). `progress(n)` is told how many
    kernels each batch read."""
    needs_verifications = not archive_compatible
    prefetches = [
        # The archive's own profile is its original string: no need to decode `parsed`.
        Prefetch("profiles", queryset=Profile.objects.filter(origin=Profile.Origin.ARCHIVE)
                 .only("id", "kernel_id", "kind", "raw_text"), to_attr="archive_profiles"),
        # The archive's three profile columns only: the worker's GPU binary listing has none.
        Prefetch("profiles", queryset=Profile.objects.filter(origin=Profile.Origin.WORKER, kind__in=PROFILE_COLUMNS)
                 .only("id", "kernel_id", "kind", "parsed"), to_attr="worker_profiles"),
    ]
    if needs_verifications:
        prefetches.append(Prefetch("verifications", to_attr="finished_verifications",
                                   queryset=latest_finished_verifications().only(*_VERIFICATION_FIELDS)))
    stream = kernels.only(*_KERNEL_FIELDS).prefetch_related(*prefetches).iterator(chunk_size=batch_size)
    tasks: dict[int, Task] = {}
    batch = []
    for kernel in stream:
        batch.append(kernel)
        if len(batch) >= batch_size:
            yield _rows(batch, tasks, archive_compatible)
            if progress:
                progress(len(batch))
            batch = []
    if batch:
        yield _rows(batch, tasks, archive_compatible)
        if progress:
            progress(len(batch))


def _rows(kernels: list, tasks: dict, archive_compatible: bool) -> list[dict]:
    unseen = {kernel.task_id for kernel in kernels} - tasks.keys()
    if unseen:
        tasks.update(Task.objects.in_bulk(unseen))
    names = column_names(archive_compatible=archive_compatible)
    rows = []
    for kernel in kernels:
        latest = kernel.finished_verifications[0] if getattr(kernel, "finished_verifications", None) else None
        row = archive_row(kernel, tasks[kernel.task_id])
        if not archive_compatible:
            row.update(site_columns(kernel, latest))
        rows.append({name: row[name] for name in names})
    return rows


def archive_row(kernel, task: Task) -> dict:
    """The 19 columns, spelled the way the published archive spells them: null (not "")
    for a missing error or functional form, profiles as Python-repr strings."""
    row = {
        "Op_Name": task.op_name,
        "Level_ID": task.level,
        "Task_ID": task.task_number,
        "Kernel_Name": kernel.name,
        "CUDA_Runtime": kernel.claimed_runtime_ms,
        "PyTorch_Native_Runtime": kernel.claimed_native_runtime_ms,
        "PyTorch_Compile_Runtime": kernel.claimed_compile_runtime_ms,
        "CUDA_Speedup_Native": kernel.claimed_speedup_native,
        "CUDA_Speedup_Compile": kernel.claimed_speedup_compile,
        "CUDA_Code": kernel.code,
        "PyTorch_Code_Module": task.reference_code,
        "PyTorch_Code_Functional": task.functional_code or None,
        "Correct": kernel.claimed_correct,
        "Max_Diff": kernel.claimed_max_diff,
        "Error": kernel.error_text or None,
        "__index_level_0__": kernel.archive_index,
    }
    row.update(profile_columns(kernel))
    return row


def profile_columns(kernel) -> dict:
    """The archive's original string when the kernel came with one (byte for byte what was
    imported); else our worker's profile, written the archive's way: repr() of the dict."""
    values = dict.fromkeys(PROFILE_COLUMNS.values())
    for profile in kernel.worker_profiles:
        values[PROFILE_COLUMNS[profile.kind]] = repr(profile.parsed)
    for profile in kernel.archive_profiles:
        values[PROFILE_COLUMNS[profile.kind]] = profile.raw_text
    return values


def site_columns(kernel, latest) -> dict:
    """What this site adds: provenance, technique tags, and the latest finished re-check."""
    row = {
        "Kernel_ID": kernel.id,
        "Kernel_Kind": kernel.kind,
        "Source_Archive": kernel.source_archive or None,
        "Experiment": kernel.experiment or None,
        "Hardware": kernel.hardware or None,
        "Technique_Tags": decode_tags(kernel.technique_tags),
        "Verified": kernel.verified,
    }
    if latest is None:
        return row | dict.fromkeys(
            name for name in column_names(archive_compatible=False) if name.startswith("Verification_")
        )
    return row | {
        "Verification_Status": latest.status,
        "Verification_Origin": latest.origin,
        "Verification_Verifier": "this site's worker" if latest.origin == "worker" else latest.verifier_name or None,
        "Verification_Runtime": latest.runtime_ms,
        "Verification_Native_Runtime": latest.eager_runtime_ms,
        "Verification_Compile_Runtime": latest.compile_runtime_ms,
        "Verification_Speedup_Native": latest.speedup_eager,
        "Verification_Speedup_Compile": latest.speedup_compile,
        **_timing_columns(latest),
        "Verification_Max_Abs_Error": latest.max_abs_error,
        "Verification_Max_Rel_Error": latest.max_rel_error,
        "Verification_GPU": latest.gpu_name or None,
        "Verification_Harness_Version": latest.harness_version or None,
        "Verification_Versions": json.dumps(latest.versions or {}, sort_keys=True),
        "Verification_Flags": json.dumps(latest.flags or []),
        "Verification_Bundle_SHA256": latest.bundle_sha256 or None,
        "Verification_Finished_At": latest.finished_at.isoformat() if latest.finished_at else None,
    }


def _timing_columns(latest) -> dict:
    """The clock of the ranked figures and the end-to-end ones, read through verifier/core/result.py."""
    doc = {"timings": latest.timings or {}, "device": latest.device}
    cand, eager = result_doc.end_to_end_ms(doc, "candidate"), result_doc.end_to_end_ms(doc, "eager")
    return {"Verification_Timing_Clock": result_doc.timing_clock(doc)[0],
            "Verification_End_To_End_Runtime": cand, "Verification_End_To_End_Native_Runtime": eager,
            "Verification_End_To_End_Speedup_Native": eager / cand if cand and eager else None}
