"""Signed verification records: a verification result as data that can leave one site and
enter another (no Django, no ORM: the bundle's users and the builders use it too).

A record is one JSON object:

    {"format": "kernel-archive.verification/1",
     "kernel": {"source_archive", "level", "task_number", "op_name", "task_reference_sha256",
                "name", "kind", "code_sha256"},
     "bundle_sha256": "...",            # the verification bundle that was run ("" if unknown)
     "result": {...},                   # the harness's result document, whole
     "harness": {"version", "sha256"},  # copied from result.versions, checked against it
     "gpu": "...", "driver": "...",     # idem
     "verified_at": "2026-11-29T21:14:55Z",
     "verifier": {"name": "...", "key_id": "..."},
     "signature": {"algorithm": "ed25519", "key_id": "...", "value": "<base64>"}}

The signature is Ed25519 (the `cryptography` package) over the record's canonical bytes:
the record without "signature", as `json.dumps(sort_keys=True, separators=(",", ":"),
ensure_ascii=False)` in UTF-8. Any change to any field, even a float's last digit, breaks it.
A key's id is the first 32 hex digits of the sha256 of its raw 32-byte public key.
"""
import base64
import hashlib
import json
import math
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

RECORD_FORMAT = "kernel-archive.verification/1"
ALGORITHM = "ed25519"
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_KEY_ID = re.compile(r"^[0-9a-f]{32}$")
VERDICTS = ("passed", "failed", "error")
KINDS = ("cuda_forward", "model_new")


class RecordProblem(ValueError):
    """What is wrong with one record; `where` names it (file line or row)."""

    def __init__(self, where: str, message: str):
        super().__init__(f"{where}: {message}")
        self.where = where
        self.message = message


# ---- keys -------------------------------------------------------------------------------

def key_id_of(public_key: Ed25519PublicKey) -> str:
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:32]


def public_key_text(public_key: Ed25519PublicKey) -> str:
    """base64 of the raw 32 bytes: what the trusted-keys file and VerifierKey hold."""
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return base64.b64encode(raw).decode("ascii")


def public_key_from_text(text: str) -> Ed25519PublicKey:
    """A public key from base64 raw bytes or a PEM block; ValueError saying why not."""
    text = (text or "").strip()
    if text.startswith("-----BEGIN"):
        key = serialization.load_pem_public_key(text.encode("ascii"))
        if not isinstance(key, Ed25519PublicKey):
            raise ValueError("the PEM block is not an Ed25519 public key")
        return key
    try:
        raw = base64.b64decode(text, validate=True)
    except ValueError:
        raise ValueError("a public key must be base64 of 32 raw bytes or a PEM block") from None
    if len(raw) != 32:
        raise ValueError(f"an Ed25519 public key has 32 bytes, this one {len(raw)}")
    return Ed25519PublicKey.from_public_bytes(raw)


def new_private_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


def private_key_pem(key: Ed25519PrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def load_private_key(path) -> Ed25519PrivateKey:
    path = Path(path)
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except FileNotFoundError:
        raise ValueError(f"no key file at {path}") from None
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{path} is not an unencrypted PEM private key: {exc}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ValueError(f"{path} holds a {type(key).__name__}, not an Ed25519 key")
    return key


@dataclass(frozen=True)
class TrustedKey:
    key_id: str
    public_key: Ed25519PublicKey
    owner: str
    note: str = ""


def load_trusted_keys(path) -> dict[str, TrustedKey]:
    """The trusted-keys file: {"keys": [{"owner", "public_key" (base64 raw), "note"}]}, by key id.
    A missing file trusts nobody; a malformed one is an error naming the entry."""
    path = Path(path)
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not JSON ({exc})") from None
    entries = data.get("keys") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise ValueError(f'{path}: expected {{"keys": [...]}}')
    keys = {}
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("owner"), str) or not entry["owner"].strip():
            raise ValueError(f"{path}: keys[{index}] needs an owner")
        try:
            public = public_key_from_text(entry.get("public_key", ""))
        except ValueError as exc:
            raise ValueError(f"{path}: keys[{index}].public_key: {exc}") from None
        key_id = key_id_of(public)
        if entry.get("key_id") and entry["key_id"] != key_id:
            raise ValueError(f"{path}: keys[{index}].key_id is {entry['key_id']}, but the key's id is {key_id}")
        keys[key_id] = TrustedKey(key_id, public, entry["owner"].strip(), str(entry.get("note") or ""))
    return keys


# ---- records ----------------------------------------------------------------------------

def canonical_bytes(record: dict) -> bytes:
    """What is signed: the record without its signature, keys sorted, no spaces, UTF-8."""
    unsigned = {key: value for key, value in record.items() if key != "signature"}
    return json.dumps(unsigned, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def record_sha256(record: dict) -> str:
    return hashlib.sha256(canonical_bytes(record)).hexdigest()


def make_record(*, kernel: dict, result: dict, bundle_sha256: str, verified_at: str, verifier_name: str,
                key_id: str) -> dict:
    """An unsigned record; harness, GPU and driver are read from the result document."""
    versions = result.get("versions") if isinstance(result.get("versions"), dict) else {}
    return {
        "format": RECORD_FORMAT,
        "kernel": dict(kernel),
        "bundle_sha256": bundle_sha256 or "",
        "result": json_safe(result),
        "harness": {"version": str(versions.get("harness") or ""), "sha256": str(versions.get("harness_sha256") or "")},
        "gpu": str(versions.get("gpu") or ""),
        "driver": str(versions.get("driver") or ""),
        "verified_at": verified_at,
        "verifier": {"name": verifier_name, "key_id": key_id},
    }


def sign_record(record: dict, key: Ed25519PrivateKey) -> dict:
    key_id = key_id_of(key.public_key())
    if record.get("verifier", {}).get("key_id") != key_id:
        raise ValueError(f"the record names key {record.get('verifier', {}).get('key_id')!r} but is signed with {key_id}")
    signature = key.sign(canonical_bytes(record))
    return {**record, "signature": {"algorithm": ALGORITHM, "key_id": key_id,
                                    "value": base64.b64encode(signature).decode("ascii")}}


def signature_is_valid(record: dict, public_key: Ed25519PublicKey) -> bool:
    try:
        signature = base64.b64decode(record["signature"]["value"], validate=True)
        public_key.verify(signature, canonical_bytes(record))
    except (InvalidSignature, ValueError, KeyError, TypeError):
        return False
    return True


def json_safe(value):
    """NaN and infinities (which the harness may measure) as strings: strict JSON, and what
    PostgreSQL's jsonb accepts. Applied before signing, so the signed bytes are what is stored."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {str(key): json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(item) for item in value]
    return value


def check_record_shape(record, where: str) -> None:
    """Raise RecordProblem naming the first field that is missing or mistyped."""
    if not isinstance(record, dict):
        raise RecordProblem(where, "a record must be a JSON object")
    if record.get("format") != RECORD_FORMAT:
        raise RecordProblem(where, f"format must be {RECORD_FORMAT!r}, not {str(record.get('format'))[:60]!r}")
    kernel = _require(record, "kernel", dict, where)
    for name in ("source_archive", "op_name", "name"):
        _require(kernel, name, str, where, prefix="kernel.")
    for name in ("level", "task_number"):
        value = _require(kernel, name, int, where, prefix="kernel.")
        if isinstance(value, bool) or value < 1:
            raise RecordProblem(where, f"kernel.{name} must be a positive whole number")
    if kernel.get("kind") not in KINDS:
        raise RecordProblem(where, f"kernel.kind must be one of {', '.join(KINDS)}")
    for name in ("code_sha256", "task_reference_sha256"):
        if not _SHA256.match(str(kernel.get(name) or "")):
            raise RecordProblem(where, f"kernel.{name} must be 64 lowercase hex digits")
    bundle = record.get("bundle_sha256")
    if not isinstance(bundle, str) or (bundle and not _SHA256.match(bundle)):
        raise RecordProblem(where, "bundle_sha256 must be empty or 64 lowercase hex digits")
    result = _require(record, "result", dict, where)
    if result.get("verdict") not in VERDICTS:
        raise RecordProblem(where, f"result.verdict must be one of {', '.join(VERDICTS)}")
    if not isinstance(result.get("flags", []), list) or any(
            not isinstance(flag, dict) or not isinstance(flag.get("name"), str) for flag in result.get("flags", [])):
        raise RecordProblem(where, "result.flags must be a list of {name, blocking, evidence}")
    if not isinstance(result.get("versions", {}), dict):
        raise RecordProblem(where, "result.versions must be an object")
    versions = result.get("versions") or {}
    harness = _require(record, "harness", dict, where)
    for field, expected in (("harness.version", versions.get("harness")), ("harness.sha256", versions.get("harness_sha256")),
                            ("gpu", versions.get("gpu")), ("driver", versions.get("driver"))):
        value = harness.get(field.split(".")[1]) if field.startswith("harness.") else record.get(field)
        if not isinstance(value, str):
            raise RecordProblem(where, f"{field} must be text")
        if value != str(expected or ""):
            raise RecordProblem(where, f"{field} is {value!r} but the result document says {str(expected or '')!r}")
    if not harness.get("version"):
        raise RecordProblem(where, "harness.version is empty: the result does not say which harness produced it")
    verified_at = _require(record, "verified_at", str, where)
    try:
        moment = datetime.fromisoformat(verified_at.replace("Z", "+00:00"))
    except ValueError:
        raise RecordProblem(where, f"verified_at is not an ISO 8601 time: {verified_at[:40]!r}") from None
    if moment.tzinfo is None:
        raise RecordProblem(where, "verified_at must carry a time zone (e.g. a trailing Z)")
    verifier = _require(record, "verifier", dict, where)
    _require(verifier, "name", str, where, prefix="verifier.")
    if not _KEY_ID.match(str(verifier.get("key_id") or "")):
        raise RecordProblem(where, "verifier.key_id must be 32 lowercase hex digits")
    signature = record.get("signature")
    if signature is not None:
        if not isinstance(signature, dict) or signature.get("algorithm") != ALGORITHM:
            raise RecordProblem(where, f"signature.algorithm must be {ALGORITHM!r}")
        if signature.get("key_id") != verifier["key_id"]:
            raise RecordProblem(where, "signature.key_id differs from verifier.key_id")
        if not isinstance(signature.get("value"), str):
            raise RecordProblem(where, "signature.value must be base64 text")
    try:
        canonical_bytes(record)
    except ValueError as exc:
        raise RecordProblem(where, f"the record is not strict JSON ({exc})") from None


def _require(container: dict, name: str, type_, where: str, prefix: str = ""):
    value = container.get(name)
    if not isinstance(value, type_) or (type_ is str and not value.strip() and name not in ("source_archive",)):
        kind = {dict: "an object", str: "non-empty text", int: "a whole number"}[type_]
        raise RecordProblem(where, f"{prefix}{name} must be {kind}")
    return value


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))
