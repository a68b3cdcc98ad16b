"""A changed password revokes the user's API token: whoever knew the old password may have
made one. Caught on the User row itself, so every way of changing it counts (the password
change and reset pages, the admin, manage.py changepassword)."""
from django.conf import settings
from django.db.models.signals import post_save
from django.dispatch import receiver

from .services import api_tokens_revoke


@receiver(post_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="accounts.revoke_tokens_on_password_change")
def revoke_tokens_on_password_change(sender, instance, created, **kwargs):
    # set_password() leaves the new raw password in _password until the save has run (Django's
    # AbstractBaseUser); a re-hash on sign-in (a newer hasher) clears it first and does not count.
    if not created and getattr(instance, "_password", None) is not None:
        api_tokens_revoke(instance)
