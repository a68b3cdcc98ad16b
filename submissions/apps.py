from django.apps import AppConfig


class SubmissionsConfig(AppConfig):
    """Kernels a signed-in researcher submits for a task, verified by the worker (docs/submissions.md)."""
    name = "submissions"
    verbose_name = "Kernel submissions"
