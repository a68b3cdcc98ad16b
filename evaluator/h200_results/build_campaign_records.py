"""Signed records of one call of an H200 campaign: the worker's finished runs read from its
SQLite database (no Django).

    python -m evaluator.h200_results.build_campaign_records --results results.tgz|archive.sqlite3 \\
        --key KEY.pem --out evaluator/h200_results/cuda_l1/<call-name>.jsonl [--source-prefix CUDA-L1] [--trust]

`results.tgz` is what scripts/gpu_worker_throughput_h200.sh's `run` brings back: the worker's data
folder (`data/archive.sqlite3`, its WAL folded in, and Huey's queue). One record per finished
verification (passed, failed, error) that the worker itself ran (origin "worker") of a kernel
that CUDA-L1 brought (its source archive, or one of its claims, starts with --source-prefix;
import_archive names CUDA-L1's rows "CUDA-L1", kernels/ingest/formats.py). The record's kernel
identity is the one the site's export writes (evaluator/verification_export.kernel_identity,
and build_records.py for the shipped files): source archive, level, task, op name, sha256 of
the task's reference, name, kind and code sha256, so `import_verifications` finds the kernel
after a fresh `import_archive` of the same dumps in the same order (make demo's: the sample
first, which sets the reference of the tasks both have). Its document is the stored
`Verification.result`, whole; `verified_at` is the run's `finished_at`; `bundle_sha256` the
bundle the worker ran.

Left out, counted and said why: runs still queued or running (the call's deadline came first),
runs the worker did not make, finished rows without a result document or whose document is no
valid record (an error before the judge ran names no harness version, which an import refuses),
and runs already in another file of the campaign folder (a call that kept an earlier call's
database with KEEP=1 brings back that call's runs too).

Each call signs with a new key (`python manage.py verifier_key new KEY.pem`) under a name of its
own, "kernel-archive project (H200 CUDA-L1 campaign, <call-name>)". `--trust` appends the key's
public half to evaluator/trusted_keys.json (once) with a note naming the file; commit both, then
delete KEY.pem: the private half is never kept (docs/verification_records.md, "CUDA-L1 campaign").
"""
import argparse
import hashlib
import json
import sqlite3
import sys
import tarfile
import tempfile
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

from evaluator.record_types import check_result_types
from evaluator.verification_records import (
    RecordProblem, check_record_shape, key_id_of, load_private_key, make_record, public_key_text, sign_record,
)

REPO = Path(__file__).resolve().parents[2]
CAMPAIGN_DIR = Path(__file__).resolve().parent / "cuda_l1"
TRUSTED_KEYS = REPO / "evaluator" / "trusted_keys.json"
VERIFIER_NAME = "kernel-archive project (H200 CUDA-L1 campaign, {call})"
SOURCE_PREFIX = "CUDA-L1"
FINISHED = ("passed", "failed", "error")

_ROWS = """
SELECT v.id, v.status, v.origin, v.result, v.bundle_sha256, v.finished_at,
       k.id, k.name, k.kind, k.code_sha256, k.source_archive,
       t.level, t.task_number, t.op_name, t.reference_code,
       EXISTS (SELECT 1 FROM kernels_claim c WHERE c.kernel_id = k.id AND c.source_archive LIKE :prefix || '%')
FROM kernels_verification v
JOIN kernels_kernel k ON k.id = v.kernel_id
JOIN kernels_task t ON t.id = k.task_id
ORDER BY v.id
"""


def open_database(path: Path, scratch: Path) -> sqlite3.Connection:
    """The worker's database, read only: a SQLite file, or results.tgz / data.tgz holding
    data/archive.sqlite3 (extracted into `scratch`)."""
    path = Path(path)
    if tarfile.is_tarfile(path):
        with tarfile.open(path) as archive:
            members = [m for m in archive.getmembers() if m.isfile() and Path(m.name).name == "archive.sqlite3"]
            if len(members) != 1:
                raise SystemExit(f"{path}: expected one archive.sqlite3 inside, found {len(members)}")
            archive.extract(members[0], scratch, filter="data")
            path = scratch / members[0].name
    if not path.is_file():
        raise SystemExit(f"{path}: no such database")
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def kernel_identity(*, source_archive, level, task_number, op_name, reference_code, name, kind, code_sha256) -> dict:
    """As the site's export writes it (evaluator/verification_export.kernel_identity)."""
    return {"source_archive": source_archive, "level": level, "task_number": task_number, "op_name": op_name,
            "task_reference_sha256": hashlib.sha256(reference_code.encode("utf-8")).hexdigest(),
            "name": name, "kind": kind, "code_sha256": code_sha256}


def run_key(record: dict) -> tuple:
    """One run of one kernel, whichever key signed it: what a second call's file must not repeat."""
    kernel = record["kernel"]
    return kernel["level"], kernel["task_number"], kernel["code_sha256"], record["verified_at"], record["bundle_sha256"]


def recorded_runs(folder: Path, *, besides: Path | None = None) -> dict[tuple, str]:
    """The runs the campaign folder's files already hold, by run_key -> file name."""
    runs = {}
    for path in sorted(Path(folder).glob("*.jsonl")) if Path(folder).is_dir() else []:
        if besides is not None and path.resolve() == Path(besides).resolve():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                runs.setdefault(run_key(json.loads(line)), path.name)
    return runs


def _verified_at(finished_at: str) -> str:
    """Django keeps a SQLite DateTimeField as UTC text, '2026-12-03 10:11:12.345678'."""
    moment = datetime.fromisoformat(finished_at.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def build(connection: sqlite3.Connection, key, *, verifier_name: str, source_prefix: str = SOURCE_PREFIX,
          already: dict | None = None) -> tuple[list[dict], Counter]:
    """(signed records, why the other verification rows were left out)."""
    already = already or {}
    key_id = key_id_of(key.public_key())
    records, skipped = [], Counter()
    for (verification_id, status, origin, result, bundle_sha256, finished_at, kernel_id, name, kind, code_sha256,
         source_archive, level, task_number, op_name, reference_code, claimed_by_source) in connection.execute(
            _ROWS, {"prefix": source_prefix}):
        if not (source_archive.startswith(source_prefix) or claimed_by_source):
            skipped[f"not a {source_prefix} kernel"] += 1
            continue
        if status not in FINISHED:
            skipped[f"not finished ({status})"] += 1
            continue
        if origin != "worker":
            skipped[f"not the worker's run (origin {origin})"] += 1
            continue
        document = json.loads(result) if result else {}
        if not document or not finished_at:
            skipped["finished without a result document (the worker gave up on it)"] += 1
            continue
        identity = kernel_identity(source_archive=source_archive, level=level, task_number=task_number,
                                   op_name=op_name, reference_code=reference_code, name=name, kind=kind,
                                   code_sha256=code_sha256)
        record = make_record(kernel=identity, result=document, bundle_sha256=bundle_sha256 or "",
                             verified_at=_verified_at(finished_at), verifier_name=verifier_name, key_id=key_id)
        where = f"verification {verification_id} (kernel {kernel_id}, {name})"
        try:
            check_record_shape(record, where)
            check_result_types(record["result"], where)
        except RecordProblem as problem:
            skipped[f"no valid record: {problem.message}"] += 1
            continue
        if run_key(record) in already:
            skipped[f"already recorded in {already[run_key(record)]}"] += 1
            continue
        records.append(sign_record(record, key))
    return records, skipped


def trust(key, *, owner: str, note: str, path: Path = TRUSTED_KEYS) -> bool:
    """Append the key's public half to the trusted-keys file; False when it is there already."""
    data = json.loads(Path(path).read_text(encoding="utf-8")) if Path(path).exists() else {"keys": []}
    key_id = key_id_of(key.public_key())
    if any(entry.get("key_id") == key_id or entry.get("public_key") == public_key_text(key.public_key())
           for entry in data["keys"]):
        return False
    data["keys"].append({"owner": owner, "public_key": public_key_text(key.public_key()), "key_id": key_id,
                         "note": note})
    Path(path).write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return True


def write(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"
                            for r in records), encoding="utf-8")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, required=True, help="results.tgz of a call, or the worker's archive.sqlite3")
    parser.add_argument("--key", type=Path, required=True, help="this call's new Ed25519 private key (PEM)")
    parser.add_argument("--out", type=Path, required=True, help="evaluator/h200_results/cuda_l1/<call-name>.jsonl")
    parser.add_argument("--source-prefix", default=SOURCE_PREFIX)
    parser.add_argument("--verifier-name", default=None, help=f"default: {VERIFIER_NAME.format(call='<call-name>')}")
    parser.add_argument("--campaign-dir", type=Path, default=None,
                        help="runs already recorded here are left out (default: the folder of --out)")
    parser.add_argument("--force", action="store_true", help="overwrite --out")
    parser.add_argument("--trust", action="store_true", help="append the key's public half to --trusted-keys")
    parser.add_argument("--trusted-keys", type=Path, default=TRUSTED_KEYS)
    args = parser.parse_args(argv)
    if args.out.exists() and not args.force:
        raise SystemExit(f"{args.out} exists (a committed call's records?): pass --force to overwrite it")
    key = load_private_key(args.key)
    call = args.out.stem
    name = args.verifier_name or VERIFIER_NAME.format(call=call)
    already = recorded_runs(args.campaign_dir or args.out.parent, besides=args.out)
    with tempfile.TemporaryDirectory() as scratch:
        connection = open_database(args.results, Path(scratch))
        try:
            records, skipped = build(connection, key, verifier_name=name, source_prefix=args.source_prefix,
                                     already=already)
        finally:
            connection.close()
    write(args.out, records)
    verdicts = Counter(r["result"]["verdict"] for r in records)
    harnesses = sorted({r["harness"]["version"] for r in records})
    print(f"{args.out}: {len(records)} records ({', '.join(f'{v} {n}' for v, n in sorted(verdicts.items())) or '-'}; "
          f"harness {', '.join(harnesses) or '-'}), signed by {key_id_of(key.public_key())} as {name!r}")
    for reason, count in sorted(skipped.items(), key=lambda item: -item[1]):
        print(f"  left out {count}: {reason}")
    if args.trust:
        note = (f"Signs only the CUDA-L1 campaign records of evaluator/h200_results/cuda_l1/{args.out.name} "
                f"({len(records)} runs of the site's worker on an H200, harness {', '.join(harnesses) or '-'}, "
                f"built {datetime.now(timezone.utc):%Y-%m-%d}); its private key is deleted after signing.")
        added = trust(key, owner=name, note=note, path=args.trusted_keys)
        print(f"{args.trusted_keys}: {'key added' if added else 'key already there'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
