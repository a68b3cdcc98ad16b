"""A researcher's submission: who submitted which kernel for which task, and when.

Thin on purpose: the code, the verdict and the numbers live on the Kernel and its
Verifications (kernels app, evaluator app); the submission's status is read from the
kernel's latest trusted verification (selectors.submission_status), never copied here,
so there is one truth."""
from django.conf import settings
from django.db import models

from kernels.models import Kernel, Task


class Submission(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="submissions")
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="submissions")
    # The kernel the submission created, or the one already in the archive with the same code
    # for this task (deduped by code sha256, as imports are).
    kernel = models.ForeignKey(Kernel, on_delete=models.CASCADE, related_name="submissions")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["user", "created_at"])]
        # Submitting the same code again returns the first submission, never a second row.
        constraints = [models.UniqueConstraint(fields=["user", "kernel"], name="submission_unique_user_kernel")]

    def __str__(self):
        return f"Submission {self.id} by {self.user_id}: kernel {self.kernel_id}"
