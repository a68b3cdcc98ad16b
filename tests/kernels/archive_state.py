"""A fingerprint of everything the archive holds, to prove a rejected import changed nothing."""
from kernels.models import Claim, Kernel, Profile, Task, TaskVersion, Verification


def archive_snapshot() -> dict:
    return {
        # Sorted by repr: a column may hold None in one row and a number in another.
        model.__name__: sorted((tuple(sorted(row.items())) for row in model.objects.values()), key=repr)
        for model in (Task, TaskVersion, Kernel, Claim, Profile, Verification)
    }
