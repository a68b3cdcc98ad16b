"""Writes of contributor keys: a signed-in user registers the public half of their Ed25519 key,
proving they hold the private half (evaluator/key_challenges.py), so the records they sign
import as their contributions (evaluator/verification_import.py)."""
import unicodedata

from django.conf import settings
from django.db import IntegrityError, transaction

from kernels.models import VerifierKey

from .key_challenges import ChallengeRefused, key_challenge_check
from .verification_records import key_id_of, load_trusted_keys, public_key_from_text, public_key_text


class KeyRefused(ValueError):
    pass


def owner_name_display(name: str) -> str:
    """How a name is stored and shown: NFKC (full-width and other look-alike forms folded), one space
    between words."""
    return " ".join(unicodedata.normalize("NFKC", name or "").split())[:255]


def verifier_key_register(*, user, public_key: str, owner_name: str, challenge: str, signature: str,
                          trusted_keys_file) -> VerifierKey:
    """Register a key for `user`; KeyRefused says why not: malformed, not proven, already
    registered, one of the site's trusted keys, or a name that is reserved or someone else's
    (a contributor cannot borrow the site's own standing, nor another contributor's)."""
    owner_name = owner_name_display(owner_name) or user.get_username()
    try:
        key = public_key_from_text(public_key)
    except ValueError as exc:
        raise KeyRefused(f"public_key: {exc}") from None
    key_id = key_id_of(key)
    trusted = load_trusted_keys(trusted_keys_file)
    if key_id in trusted:
        raise KeyRefused(f"public_key: key {key_id} is one of this site's trusted keys; it cannot be registered as a "
                         "contribution key")
    try:
        key_challenge_check(user=user, challenge=challenge, signature=signature, public_key=key)
    except ChallengeRefused as refused:
        raise KeyRefused(str(refused)) from None
    _check_owner_name(owner_name, user, trusted)
    try:
        with transaction.atomic():
            return VerifierKey.objects.create(key_id=key_id, public_key=public_key_text(key), owner_name=owner_name,
                                              user=user)
    except IntegrityError:
        raise KeyRefused(f"public_key: key {key_id} is already registered") from None


def _check_owner_name(owner_name: str, user, trusted: dict) -> None:
    """The trusted verifiers' names (and this site's worker's) are reserved, and a name belongs to
    the first user who registered a key under it; compared without regard to case."""
    if any(ch for ch in owner_name if unicodedata.category(ch)[0] == "C"):
        raise KeyRefused("owner_name: control or invisible characters are not allowed")
    folded = owner_name.casefold()
    reserved = [entry.owner for entry in trusted.values()] + [settings.VERIFIER_NAME]
    if any(owner_name_display(name).casefold() == folded for name in reserved):
        raise KeyRefused(f"owner_name: {owner_name!r} is the name of one of this site's trusted verifiers; "
                         "choose your own")
    if VerifierKey.objects.filter(owner_name__iexact=owner_name).exclude(user=user).exists():
        raise KeyRefused(f"owner_name: {owner_name!r} is already another contributor's name; choose your own")
