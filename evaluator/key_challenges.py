"""Proof that whoever registers a public key holds its private half: the site issues a challenge
(signed by the site, bound to the user, valid CHALLENGE_MAX_AGE_S), the registration carries an
Ed25519 signature of the challenge's UTF-8 bytes. Without it anyone could register another
person's published key and upload that person's records as their own. Stateless, so it works
the same for a session and an API token."""
import base64
import secrets

from cryptography.exceptions import InvalidSignature
from django.core import signing

SALT = "kernel-archive.verifier-key-challenge"
CHALLENGE_MAX_AGE_S = 15 * 60
PREFIX = "kernel-archive-key-proof"


class ChallengeRefused(ValueError):
    pass


def key_challenge_issue(user) -> str:
    """A fresh challenge for `user` to sign with their private key."""
    return signing.TimestampSigner(salt=SALT).sign(f"{PREFIX}.{user.pk}.{secrets.token_hex(16)}")


def key_challenge_check(*, user, challenge: str, signature: str, public_key) -> None:
    """ChallengeRefused naming the field at fault unless `challenge` is this site's, recent, issued
    to `user`, and `signature` is the Ed25519 signature of it by `public_key`."""
    challenge = (challenge or "").strip()
    if not challenge:
        raise ChallengeRefused("challenge: missing; ask for one (GET /api/verifier-keys/challenge/) and sign it")
    try:
        value = signing.TimestampSigner(salt=SALT).unsign(challenge, max_age=CHALLENGE_MAX_AGE_S)
    except signing.SignatureExpired:
        raise ChallengeRefused(f"challenge: older than {CHALLENGE_MAX_AGE_S // 60} minutes; ask for a new one") from None
    except signing.BadSignature:
        raise ChallengeRefused("challenge: not one this site issued") from None
    if value.split(".")[1:2] != [str(user.pk)]:
        raise ChallengeRefused("challenge: issued to another user; ask for your own")
    try:
        raw = base64.b64decode((signature or "").strip(), validate=True)
        public_key.verify(raw, challenge.encode("utf-8"))
    except (ValueError, InvalidSignature):
        raise ChallengeRefused("signature: not an Ed25519 signature of the challenge by this public key's private "
                               "half (python manage.py verifier_key prove KEY.pem CHALLENGE prints it)") from None
