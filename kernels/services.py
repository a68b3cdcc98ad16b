"""Writes of the kernels app's own rows: tasks, kernels, claims, profiles. Imports (all-or-nothing,
one transaction per file) live in kernels/import_services.py and are re-exported here, where
callers have always found them.

Other apps never write these rows themselves: the evaluator hands the worker's profiles, the
weak-task findings of trusted results and the run a kernel's verified state comes from to
the services below (docs/architecture.md, "Who writes what").
"""
from django.db import transaction

from .import_services import (  # noqa: F401  (the import API, re-exported)
    ImportSummary, archive_import_file, kernel_ingest_batch,
)
from .models import Kernel, Profile, Task, Verification
from .page_cache import archive_changed
from .techniques import encode_tags, kernel_techniques
from .verdicts import encode_names

RETAG_CHUNK = 500


def kernel_verified_state_set(*, kernel_id: int, verification: Verification | None) -> None:
    """Copy onto the kernel the run its verified state comes from (the evaluator picks it:
    its latest trusted finished verification, or None): verified state, verdict in plain
    words, blocking flag names and the re-measured numbers with their GPU (see Kernel.verified)."""
    latest = verification
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


def profile_store(*, kernel_id: int, kind: str, origin: str, raw_text: str, parsed: dict) -> Profile:
    """Store a profile of the kernel; one row per (kernel, kind, origin): a new one replaces the last."""
    profile, _ = Profile.objects.update_or_create(
        kernel_id=kernel_id, kind=kind, origin=origin, defaults={"raw_text": raw_text, "parsed": parsed},
    )
    if kind == Profile.Kind.GPU_BINARY:  # its SASS is evidence of techniques: tag from it now
        kernel_techniques_refresh(kernel_ids=[kernel_id])
    return profile


def kernel_techniques_refresh(*, kernel_ids=None) -> int:
    """Recompute technique tags (kernels/techniques.py) from each kernel's code and the SASS of
    its stored GPU-binary listings; write only those that changed. Returns how many changed.
    `manage.py retag_kernels` runs it on the whole archive after a change to the detector."""
    kernels = Kernel.objects.order_by("id").only("id", "code", "technique_tags")
    if kernel_ids is not None:
        kernels = kernels.filter(id__in=kernel_ids)
    changed, last_id = 0, 0
    while True:  # keyset pages: constant memory on an archive of any size
        chunk = list(kernels.filter(id__gt=last_id)[:RETAG_CHUNK])
        if not chunk:
            break
        last_id = chunk[-1].id
        listings: dict[int, list] = {}
        for kernel_id, parsed in Profile.objects.filter(kernel_id__in=[k.id for k in chunk],
                                                        kind=Profile.Kind.GPU_BINARY).values_list("kernel_id", "parsed"):
            listings.setdefault(kernel_id, []).append(parsed)
        for kernel in chunk:
            tags = encode_tags(kernel_techniques(kernel.code, listings.get(kernel.id, ())))
            if tags != kernel.technique_tags:
                Kernel.objects.filter(id=kernel.id).update(technique_tags=tags)
                changed += 1
    if changed:
        archive_changed()
    return changed


@transaction.atomic
def task_flags_merge(*, flags_by_kernel: dict[int, list[dict]]) -> None:
    """Add to each kernel's task the findings ({name, blocking, evidence}) it lacks, so every
    page can say "weak task" without reading verifications."""
    if not flags_by_kernel:
        return
    task_of = dict(Kernel.objects.filter(id__in=flags_by_kernel).values_list("id", "task_id"))
    for task in Task.objects.filter(id__in=set(task_of.values())):
        names = {flag.get("name") if isinstance(flag, dict) else str(flag) for flag in task.flags or []}
        merged = list(task.flags or [])
        for kernel_id, flags in flags_by_kernel.items():
            if task_of.get(kernel_id) != task.id:
                continue
            for flag in flags:
                if flag["name"] not in names:
                    names.add(flag["name"])
                    merged.append({"name": flag["name"], "blocking": bool(flag.get("blocking")),
                                   "evidence": str(flag.get("evidence") or "")[:2000]})
        if merged != list(task.flags or []):
            task.flags = merged
            task.save(update_fields=["flags"])
