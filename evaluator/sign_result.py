"""Sign the result of running a downloaded verification bundle on your own GPU (no Django).

    python manage.py verifier_key new my_key.pem        # once; register the printed public key on the site
    unzip kernel-12-bundle.zip -d k12 && cd k12 && python verify.py --json result.json
    python -m evaluator.sign_result --key my_key.pem --bundle kernel-12-bundle.zip --result k12/result.json \
        --name "Alice Example" >> my_results.jsonl

Then upload my_results.jsonl on the site's "Contribute a verification" page (or POST it to
/api/verifications/contribute/). The record names the kernel by what the bundle holds: the
task (level, number, op name), the sha256 of its reference.py (the task version) and of its
kernel file, and the bundle's own sha256, so the site can check it is the kernel it serves.
"""
import argparse
import hashlib
import json
import sys
import zipfile
from datetime import datetime, timezone
from pathlib import Path

from evaluator.verification_records import key_id_of, load_private_key, make_record, sign_record


def kernel_identity_of_bundle(bundle: Path) -> dict:
    with zipfile.ZipFile(bundle) as archive:
        claims = json.loads(archive.read("claims.json"))
        code = archive.read(claims["kernel"]["file"])
        reference = archive.read("reference.py")
    return {
        "source_archive": str(claims.get("claimed", {}).get("source_archive") or ""),
        "level": int(claims["task"]["level"]), "task_number": int(claims["task"]["task_number"]),
        "op_name": claims["task"]["op_name"], "task_reference_sha256": hashlib.sha256(reference).hexdigest(),
        "name": claims["kernel"]["name"], "kind": claims["kernel"]["kind"], "code_sha256": hashlib.sha256(code).hexdigest(),
    }


def signed_record(*, key_path: Path, bundle: Path, result_path: Path, name: str, verified_at: str | None = None) -> dict:
    key = load_private_key(key_path)
    result = json.loads(Path(result_path).read_text(encoding="utf-8"))
    when = verified_at or datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    record = make_record(kernel=kernel_identity_of_bundle(bundle), result=result,
                         bundle_sha256=hashlib.sha256(Path(bundle).read_bytes()).hexdigest(), verified_at=when,
                         verifier_name=name, key_id=key_id_of(key.public_key()))
    return sign_record(record, key)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Sign a verification result as a record to upload.")
    parser.add_argument("--key", type=Path, required=True, help="your Ed25519 private key (PEM)")
    parser.add_argument("--bundle", type=Path, required=True, help="the verification bundle you ran (zip)")
    parser.add_argument("--result", type=Path, required=True, help="the result document verify.py wrote (JSON)")
    parser.add_argument("--name", required=True, help="who you are, as the site should show it")
    parser.add_argument("--verified-at", default=None, help="ISO 8601 time of the run (default: now, UTC)")
    args = parser.parse_args(argv)
    record = signed_record(key_path=args.key, bundle=args.bundle, result_path=args.result, name=args.name,
                           verified_at=args.verified_at)
    sys.stdout.write(json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
