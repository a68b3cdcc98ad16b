"""Shared by the export tests: an archive imported, and everything the archive holds, keyed
so that two databases can be compared field by field."""
from django.forms.models import model_to_dict

from kernels.models import Kernel, Task
from kernels.services import archive_import_file

SOURCE = "sakana_sample"
HARDWARE = "NVIDIA H100"
# Identity and bookkeeping that differ between two databases by design.
_KERNEL_FIELDS_NOT_COMPARED = {"id", "task", "task_version", "parent", "imported_at"}


def import_sample(path):
    return archive_import_file(path=path, source_archive=SOURCE, hardware=HARDWARE)


def archive_contents() -> dict:
    """Tasks by (level, number); kernels by (level, number, code sha256) with every claimed
    number and provenance field, and their profiles, raw and parsed."""
    tasks = {
        (task.level, task.task_number): {
            "op_name": task.op_name, "reference_code": task.reference_code,
            "functional_code": task.functional_code, "flags": task.flags,
        }
        for task in Task.objects.all()
    }
    kernels = {}
    for kernel in Kernel.objects.select_related("task", "task_version").prefetch_related("profiles"):
        fields = {k: v for k, v in model_to_dict(kernel).items() if k not in _KERNEL_FIELDS_NOT_COMPARED}
        # The version by what it is (its reference's hash), not by its row id.
        fields["task_version"] = kernel.task_version.reference_sha256 if kernel.task_version else None
        fields["profiles"] = {(p.kind, p.origin): (p.raw_text, p.parsed) for p in kernel.profiles.all()}
        kernels[(kernel.task.level, kernel.task.task_number, kernel.code_sha256)] = fields
    return {"tasks": tasks, "kernels": kernels}


def empty_the_archive():
    Task.objects.all().delete()  # cascades to kernels, profiles, verifications
    assert not Kernel.objects.exists()
