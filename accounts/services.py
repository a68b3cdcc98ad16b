"""Writes of researcher accounts: sign up, verify the address by a signed link, re-send it.

The link carries a signature (django.core.signing, salted for this purpose, timestamped) of
the user's id and address; nothing is stored for it, and it stops working when it expires,
when the address changes, or once the address is verified. A sign-up with an address that
already has an account creates nothing and mails that address instead, so the page never
tells a visitor who has an account here. Links start with settings.SITE_URL (accounts/links.py).
"""
import logging
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.core import signing
from django.core.mail import send_mail
from django.db import transaction
from django.template.loader import render_to_string
from django.utils import timezone
from rest_framework.authtoken.models import Token

from . import limits
from .links import verification_link
from .models import EmailVerification

log = logging.getLogger(__name__)
VERIFY_SALT = "accounts.email-verification"


class VerificationRefused(Exception):
    """The link is not one this site made, has expired, or no longer matches the account."""


def verify_max_age_s() -> int:
    return int(getattr(settings, "ACCOUNT_VERIFY_MAX_AGE_S", 3 * 24 * 3600))


def verification_token(user) -> str:
    return signing.dumps({"u": user.pk, "e": user.email.lower()}, salt=VERIFY_SALT, compress=True)


def account_sign_up(*, username: str, email: str, password: str) -> bool:
    """Create an inactive account and mail its verification link; when the address already
    belongs to an account, create nothing and mail that address instead (its link again if it
    is still waiting for one). The same work either way: the password is hashed and one mail is
    sent, so the time taken does not tell a visitor whether the address has an account.

    Returns False when the mail could not be sent (no mail server): the account is kept whole
    (user and its EmailVerification, one transaction) and waits; a re-send works at once."""
    User = get_user_model()
    email = User.objects.normalize_email(email).strip()
    password_hash = make_password(password)  # before the lookup: a known address costs the hash too
    owner = User.objects.filter(email__iexact=email).order_by("-is_active", "id").first()
    if owner is not None:
        if _is_waiting(owner):
            return _send_verification(owner)
        return _send("accounts/email/already_registered", email, {"user": owner})
    with transaction.atomic():
        user = User(username=User.normalize_username(username), email=email, password=password_hash, is_active=False)
        user.save()
        EmailVerification.objects.create(user=user, email=email)
    return _send_verification(user)


def verification_resend(*, email: str) -> bool:
    """Mail the link again to an account waiting for it; False only when a mail was due and could
    not be sent. Says nothing else to the caller's visitor (the page is the same either way)."""
    record = (EmailVerification.objects.select_related("user")
              .filter(user__email__iexact=email.strip(), verified_at__isnull=True, user__is_active=False).first())
    if record is None:
        return True
    return _send_verification(record.user)


def api_token_replace(user) -> Token:
    """A new API token for the user; the old one, if any, stops working."""
    with transaction.atomic():
        api_tokens_revoke(user)
        return Token.objects.create(user=user)


def api_tokens_revoke(user) -> int:
    """Delete the user's API token (DRF's, one a user); returns how many were deleted."""
    count, _ = Token.objects.filter(user=user).delete()
    if count:
        log.info("API token of user %s revoked", user.pk)
    return count


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


def _is_waiting(user) -> bool:
    return not user.is_active and EmailVerification.objects.filter(user=user, verified_at__isnull=True).exists()


def _send_verification(user) -> bool:
    hours = verify_max_age_s() // 3600
    return _send("accounts/email/verify", user.email,
                 {"user": user, "link": verification_link(verification_token(user)), "hours": hours})


def _send(template: str, to: str, context: dict) -> bool:
    """One mail, at most one a minute and a few a day per address (accounts/limits.py); True when
    it went out or was not due, False when the mail server refused or could not be reached."""
    if not limits.mail_allowed(to):
        return True
    subject = render_to_string(f"{template}_subject.txt", context).strip()
    body = render_to_string(f"{template}.txt", context)
    try:
        send_mail(subject, body, None, [to])  # from DEFAULT_FROM_EMAIL
    except Exception:  # any backend's failure (ConnectionRefusedError, SMTPException, ...): never a 500
        log.exception("could not send %s to user %s", template, context["user"].pk)
        limits.mail_not_sent(to)
        return False
    return True
