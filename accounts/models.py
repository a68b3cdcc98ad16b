"""One row per account made by sign-up: it says whether its address was verified.

A user with a row whose verified_at is empty is waiting for their mailed link; only such a
user may be activated by a link, so an account staff deactivated later (or one made in the
admin or by createsuperuser, which has no row) is never re-activated by an old mail.
"""
from django.conf import settings
from django.db import models


class EmailVerification(models.Model):
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="email_verification")
    email = models.EmailField(help_text="the address the link was sent to")
    created_at = models.DateTimeField(auto_now_add=True)
    verified_at = models.DateTimeField(null=True, blank=True)

    def __str__(self):
        state = f"verified {self.verified_at:%Y-%m-%d}" if self.verified_at else "waiting for its link"
        return f"{self.email}: {state}"

    @property
    def is_pending(self) -> bool:
        return self.verified_at is None
