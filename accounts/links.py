"""Absolute links put in mails (sign-up, password reset). They start with settings.SITE_URL
(ARCHIVE_SITE_URL), never with the request's Host header: a client chooses that header, and a
reset link pointing at their host would hand them the victim's token."""
from django.conf import settings
from django.urls import reverse


def site_link(path: str) -> str:
    return settings.SITE_URL + path


def verification_link(token: str) -> str:
    return site_link(reverse("account_verify", args=[token]))
