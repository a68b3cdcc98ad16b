"""The one reader of the environment for settings (archive_site/settings.py), with one rule
per type. Apps never read os.environ for configuration: they read django.conf.settings.

Booleans: 1, true, yes, on are true; 0, false, no, off and the empty string are false (any
case, surrounding spaces ignored); anything else stops the start-up naming the variable,
rather than guessing. Unset means the default. Lists are comma-separated, blanks dropped.

What still reads os.environ elsewhere is not the site's configuration: variables of libraries
(HF_HUB_OFFLINE, HF_TOKEN), of the process (CUDA_VISIBLE_DEVICES names the worker's GPU) and of
the Django-free verifier, which runs where no settings exist (verifier/core/__init__.py names them).

A renamed setting is read under its new name, then its old one (RENAMED), for one release.
"""
import os
from pathlib import Path
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

from web import booleans

# new name -> the name it had, read when the new one is unset, for one release (verifier/CHANGELOG.md).
RENAMED = {"ARCHIVE_VERIFY_JUDGE_ARGS": "ARCHIVE_VERIFY_HARNESS_ARGS"}


def _get(name, default=None):
    """os.environ.get, the old name of a RENAMED setting read when the new one is unset."""
    value = os.environ.get(name)
    if value is None and name in RENAMED:
        value = os.environ.get(RENAMED[name])
    return default if value is None else value


def is_set(name: str) -> bool:
    return _get(name) is not None


def text(name: str, default: str = "") -> str:
    return _get(name, default)


def boolean(name: str, default: bool) -> bool:
    value = _get(name)
    if value is None:
        return default
    parsed = booleans.parse(value)
    if parsed is not None:
        return parsed
    raise ImproperlyConfigured(f"{name}={value!r}: expected one of 1, true, yes, on or 0, false, no, off")


def integer(name: str, default: int) -> int:
    return _number(name, default, int)


def number(name: str, default: float) -> float:
    return _number(name, default, float)


def path(name: str, default) -> Path:
    return Path(_get(name) or default)


def site_url(name: str, default: str) -> str:
    """An absolute http(s) URL with a host and no path, query or fragment, without its final slash."""
    value = (_get(name) or default).strip().rstrip("/")
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.path or parts.query or parts.fragment:
        raise ImproperlyConfigured(f"{name}={value!r}: expected the site's address, e.g. https://kernels.example.org")
    return value


def comma_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in _get(name, default).split(",") if item.strip()]


def _number(name, default, kind):
    value = _get(name)
    if value is None or not value.strip():
        return default
    try:
        return kind(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r}: expected {'an integer' if kind is int else 'a number'}") from None
