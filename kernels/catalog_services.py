"""Writes that put imported kernels on the task catalog: tasks named as KernelBench names them,
the catalog's versions of each task, and the version each reference belongs to (an unseen
reference becomes a new version of its task, never merged into another)."""
import hashlib
from dataclasses import dataclass, field

from django.db.models import Max, Q

from .ingest.records import KernelRecord
from .models import Kernel, Task, TaskVersion
from .task_catalog import catalog_task, reference_sha256


@dataclass
class CatalogState:
    """What one import has resolved so far: tasks by (level, number), versions by (task id,
    normalized sha), normalized shas by the raw text's sha (one parse per distinct reference)."""

    tasks: dict = field(default_factory=dict)
    versions: dict = field(default_factory=dict)
    normalized: dict = field(default_factory=dict)
    tasks_added: int = 0
    versions_added: int = 0  # versions first seen in this import (not the catalog's)

    def reference_sha(self, code: str) -> str:
        raw = hashlib.sha256(code.encode("utf-8")).hexdigest()
        if raw not in self.normalized:
            self.normalized[raw] = reference_sha256(code)
        return self.normalized[raw]


def placeholder_op_name(level: int, number: int) -> str:
    return f"level{level}_task{number}"


def tasks_for_records(records: list[KernelRecord], state: CatalogState) -> dict:
    """The Task of each record's (level, number), created when missing with the catalog's op name
    (the row's own when the catalog does not know the task) and the catalog's versions."""
    wanted = {(r.level, r.task_number): r for r in records}
    missing = [key for key in wanted if key not in state.tasks]
    if missing:
        query = Q()
        for level, number in missing:
            query |= Q(level=level, task_number=number)
        for task in Task.objects.filter(query):
            state.tasks[(task.level, task.task_number)] = task
            _name_from_catalog(task)
    for key, record in wanted.items():
        if key in state.tasks:
            if not state.tasks[key].functional_code and record.functional_code:
                state.tasks[key].functional_code = record.functional_code
                state.tasks[key].save(update_fields=["functional_code"])
            continue
        known = catalog_task(*key)
        task = Task.objects.create(
            level=record.level, task_number=record.task_number,
            op_name=known.op_name if known else record.op_name, reference_code=record.reference_code,
            functional_code=record.functional_code or _known_functional_form(record, known),
        )
        state.tasks[key] = task
        state.tasks_added += 1
    return state.tasks


def version_for(record: KernelRecord, task: Task, source_archive: str, state: CatalogState) -> TaskVersion:
    """The task's version whose normalized reference is the record's; a new version (the next
    number, labelled with the source that first brought it) when the task has none such."""
    sha = state.reference_sha(record.reference_code)
    key = (task.id, sha)
    if key not in state.versions:
        _load_versions(task, state)
    version = state.versions.get(key)
    if version is None:
        number = (TaskVersion.objects.filter(task=task).aggregate(n=Max("number"))["n"] or 0) + 1
        version = TaskVersion.objects.create(task=task, number=number, reference_sha256=sha,
                                             reference_code=record.reference_code,
                                             label=f"first seen in {source_archive}"[:255])
        state.versions[key] = version
        state.versions_added += 1
    elif not version.reference_code:  # a catalog version no import had brought the code of
        version.reference_code = record.reference_code
        version.save(update_fields=["reference_code"])
    return version


def _load_versions(task: Task, state: CatalogState) -> None:
    versions = list(TaskVersion.objects.filter(task=task))
    if not versions and Kernel.objects.filter(task=task, task_version__isnull=True).exists():
        versions = [_adopt_unversioned_kernels(task)]
    if not any(version.in_catalog for version in versions):
        versions += _add_catalog_versions(task, {version.reference_sha256 for version in versions})
    for version in versions:
        state.versions[(task.id, version.reference_sha256)] = version


def _adopt_unversioned_kernels(task: Task) -> TaskVersion:
    """Kernels stored without a version (written by other paths than an import) were measured
    on the task's stored reference: that reference becomes the task's version 1 and theirs, as
    the migration that introduced versions did for every kernel."""
    version = TaskVersion.objects.create(task=task, number=1, reference_sha256=reference_sha256(task.reference_code),
                                         reference_code=task.reference_code, label="as first imported")
    Kernel.objects.filter(task=task, task_version__isnull=True).update(task_version=version)
    return version


def _add_catalog_versions(task: Task, present: set[str]) -> list[TaskVersion]:
    """The catalog's versions of the task, numbered after any it has (oldest first); a version
    already present (brought by an earlier import) is marked as the catalog's instead."""
    known = catalog_task(task.level, task.task_number)
    if known is None:
        return []
    added = []
    number = TaskVersion.objects.filter(task=task).aggregate(n=Max("number"))["n"] or 0
    for entry in known.versions:
        if entry.sha256 in present:
            TaskVersion.objects.filter(task=task, reference_sha256=entry.sha256).update(
                in_catalog=True, current=entry.current, label=entry.label[:255])
            continue
        number += 1
        added.append(TaskVersion(task=task, number=number, reference_sha256=entry.sha256, label=entry.label[:255],
                                 in_catalog=True, current=entry.current))
    return TaskVersion.objects.bulk_create(added)


def _name_from_catalog(task: Task) -> None:
    """A task named with a placeholder by an earlier import gets KernelBench's name."""
    known = catalog_task(task.level, task.task_number)
    if known and task.op_name == placeholder_op_name(task.level, task.task_number):
        task.op_name = known.op_name
        task.save(update_fields=["op_name"])


def _known_functional_form(record: KernelRecord, known) -> str:
    """Functional forms the project ships for KernelBench tasks, matched on level, task and op name."""
    from verifier.functional_forms import functional_form_source

    op_name = known.op_name if known else record.op_name
    return functional_form_source(record.level, record.task_number, op_name) or ""
