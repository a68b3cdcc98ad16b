"""Writes of contributor keys: a signed-in user registers the public half of their Ed25519 key,
so the records they sign import as their contributions (evaluator/verification_import.py)."""
from django.db import IntegrityError, transaction

from kernels.models import VerifierKey

from .verification_records import key_id_of, load_trusted_keys, public_key_from_text, public_key_text


class KeyRefused(ValueError):
    pass


def verifier_key_register(*, user, public_key: str, owner_name: str, trusted_keys_file) -> VerifierKey:
    """Register a key for `user`; KeyRefused says why not (malformed, already registered, or one
    of the site's trusted keys: a contributor cannot borrow the site's own standing)."""
    owner_name = (owner_name or "").strip()[:255] or user.get_username()
    try:
        key = public_key_from_text(public_key)
    except ValueError as exc:
        raise KeyRefused(f"public_key: {exc}") from None
    key_id = key_id_of(key)
    if key_id in load_trusted_keys(trusted_keys_file):
        raise KeyRefused(f"key {key_id} is one of this site's trusted keys; it cannot be registered as a contribution key")
    try:
        with transaction.atomic():
            return VerifierKey.objects.create(key_id=key_id, public_key=public_key_text(key), owner_name=owner_name,
                                              user=user)
    except IntegrityError:
        raise KeyRefused(f"key {key_id} is already registered") from None
