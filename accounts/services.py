"""Writes of researcher accounts: sign up, verify the address by a signed link, re-send it.

The link carries a signature (django.core.signing, salted for this purpose, timestamped) of
the user's id and address; nothing is stored for it, and it stops working when it expires,
when the address changes, or once the address is verified. A sign-up with an address that
already has an account creates nothing and mails that address instead, so the page never
tells a visitor who has an account here.
"""
import logging
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.core.cache import cache
from django.core.mail import send_mail
from django.db import transaction
from django.template.loader import render_to_string
from django.utils import timezone

from .models import EmailVerification

log = logging.getLogger(__name__)
VERIFY_SALT = "accounts.email-verification"
# One mail per address per this many seconds (sign-up, re-send): the form cannot be used to flood a mailbox.
MAIL_INTERVAL_S = 60

LinkFor = Callable[[str], str]  # token -> absolute URL of the verification page


class VerificationRefused(Exception):
    """The link is not one this site made, has expired, or no longer matches the account."""


def verify_max_age_s() -> int:
    return int(getattr(settings, "ACCOUNT_VERIFY_MAX_AGE_S", 3 * 24 * 3600))


def verification_token(user) -> str:
    return signing.dumps({"u": user.pk, "e": user.email.lower()}, salt=VERIFY_SALT, compress=True)


def account_sign_up(*, username: str, email: str, password: str, link_for: LinkFor):
    """Create an inactive account and mail its verification link; None (and a mail to the
    owner instead) when the address already belongs to an account."""
    User = get_user_model()
    email = User.objects.normalize_email(email).strip()
    owner = User.objects.filter(email__iexact=email).first()
    if owner is not None:
        if _mail_allowed(email):
            _send("accounts/email/already_registered", email, {"user": owner})
        return None
    with transaction.atomic():
        user = User.objects.create_user(username=username, email=email, password=password, is_active=False)
        EmailVerification.objects.create(user=user, email=email)
    _mail_allowed(email)  # starts the interval for re-sends
    _send_verification(user, link_for)
    return user


def verification_resend(*, email: str, link_for: LinkFor) -> bool:
    """Mail the link again to an account waiting for it; True when a mail went out. Says
    nothing to the caller's visitor either way (the page is the same)."""
    record = (EmailVerification.objects.select_related("user")
              .filter(user__email__iexact=email.strip(), verified_at__isnull=True, user__is_active=False).first())
    if record is None or not _mail_allowed(record.user.email):
        return False
    _send_verification(record.user, link_for)
    return True


def account_verify(*, token: str):
    """Activate the account a link names. Returns (user, activated_now); raises VerificationRefused."""
    try:
        data = signing.loads(token, salt=VERIFY_SALT, max_age=verify_max_age_s())
    except signing.SignatureExpired:
        raise VerificationRefused("This link has expired: ask for a new one below.") from None
    except (signing.BadSignature, ValueError):
        raise VerificationRefused("This link is not valid: ask for a new one below.") from None
    with transaction.atomic():
        record = (EmailVerification.objects.select_for_update().select_related("user")
                  .filter(user_id=data.get("u")).first())
        if record is None or record.user.email.lower() != data.get("e"):
            raise VerificationRefused("This link is not valid: ask for a new one below.")
        if not record.is_pending:
            return record.user, False
        record.verified_at = timezone.now()
        record.email = record.user.email
        record.save(update_fields=["verified_at", "email"])
        record.user.is_active = True
        record.user.save(update_fields=["is_active"])
    log.info("account %s verified its address", record.user.pk)
    return record.user, True


def pending_accounts_purge() -> int:
    """Delete accounts whose link expired unused (never active, never signed in), so that
    their user name and address can be signed up again. Returns how many."""
    cutoff = timezone.now() - timedelta(seconds=verify_max_age_s())
    stale = get_user_model().objects.filter(
        is_active=False, last_login__isnull=True, email_verification__verified_at__isnull=True,
        email_verification__created_at__lt=cutoff)
    count, _ = stale.delete()
    return count


def pending_account_with_password(*, username: str, password: str):
    """The account waiting for its link whose name and password these are, else None (the
    sign-in page then says to follow the link rather than 'wrong password')."""
    user = (get_user_model().objects.filter(username=username, is_active=False,
                                            email_verification__verified_at__isnull=True).first())
    return user if user is not None and user.check_password(password) else None


def _mail_allowed(email: str) -> bool:
    return cache.add(f"accounts:mail:{email.lower()}", 1, timeout=MAIL_INTERVAL_S)


def _send_verification(user, link_for: LinkFor):
    hours = verify_max_age_s() // 3600
    _send("accounts/email/verify", user.email, {"user": user, "link": link_for(verification_token(user)), "hours": hours})


def _send(template: str, to: str, context: dict):
    subject = render_to_string(f"{template}_subject.txt", context).strip()
    body = render_to_string(f"{template}.txt", context)
    send_mail(subject, body, None, [to])  # from DEFAULT_FROM_EMAIL
