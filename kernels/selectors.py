"""Reads of the archive for pages and the API."""
from django.db.models import Count, Q

from .models import Kernel, Task


def archive_overview() -> dict:
    """What the archive holds, per level: tasks, kernels, kernels marked correct."""
    tasks_per_level = dict(Task.objects.values_list("level").annotate(n=Count("id")).order_by())
    kernel_rows = (
        Kernel.objects.values("task__level")
        .annotate(kernels=Count("id"), correct=Count("id", filter=Q(claimed_correct=True)))
        .order_by("task__level")
    )
    levels = [
        {
            "level": row["task__level"],
            "tasks": tasks_per_level.get(row["task__level"], 0),
            "kernels": row["kernels"],
            "correct": row["correct"],
        }
        for row in kernel_rows
    ]
    totals = {key: sum(level[key] for level in levels) for key in ("tasks", "kernels", "correct")}
    return {"levels": levels, "totals": totals}
