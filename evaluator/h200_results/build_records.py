"""Turn the project's raw H200 results into signed verification records (no Django).

    python -m evaluator.h200_results.build_records --key PROJECT_KEY.pem [--sample ../shared/data/sakana_archive_subset.jsonl]

Inputs (all in the repository, except the shared sample, read only for kernel identities:
names and sha256s, never code):
- the demo archive: evaluator/demo_archive/demo_archive.jsonl and its harness documents,
  tests/fixtures/demo_archive/demo_harness_results.json (generated data lives out of the packages)
  (per kernel the harness's timed document when it passed, else its untimed one);
- the shared sample's H200 runs: tests/fixtures/h200/sample_subset_reverify.json (full
  documents, harness 1.0.0), worker_e2e.json and worker_session3.json (the worker's stored
  fields, harness 1.1.0: the documents were not kept, so the record's document is rebuilt from
  those fields and says so in `note`; evidence strings the fixtures trimmed stay empty);
  sample_judge_2_1.json (full documents of the judge 2.1.0, logs trimmed; rows by position),
  sample_judge_2_2.json (the same for the judge 2.2.0: the 46 rows the 2.1.0 calls had not
  reached; quoted source lines left out of compiler logs), sample_worker_2_4_0.json (the same
  for harness 2.4.0 run by the site's worker: 86 rows, read from its database by
  scripts/h200_worker_sample_fixture.py), sample_worker_2_4_1.json (the same for harness
  2.4.1 through the worker: 42 rows, ids 13-26, 47-60, 81-94) and sample_worker_2_4_1_b.json
  (2.4.1 through the worker, a later call: the other 60 rows, ids 1-12, 27-46, 61-80, 95-102).
  Every row of the sample has a 2.4.1 run, and each kernel's latest run (by `verified_at`,
  what its page shows) is its newest 2.4.1 run: the build stops if a kernel with a 2.4.1 run
  has a later run of another version.
Outputs beside this file: demo_archive_h200.jsonl and sample_subset_h200.jsonl.

The key signs as "kernel-archive project (H200 campaigns)"; its public half goes into
evaluator/trusted_keys.json. The private key is not kept in the repository: whoever rebuilds
the records makes a new key (`python manage.py verifier_key new PATH`), re-runs this, and
commits the records and the new public key together.
"""
import argparse
import hashlib
import json
from datetime import datetime
from pathlib import Path

from evaluator.verification_records import key_id_of, load_private_key, make_record, sign_record
from kernels.ingest.archive_schema import archive_row_to_record

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
VERIFIER_NAME = "kernel-archive project (H200 campaigns)"
DEMO_ARCHIVE = REPO / "evaluator" / "demo_archive" / "demo_archive.jsonl"
DEMO_RESULTS = REPO / "tests" / "fixtures" / "demo_archive" / "demo_harness_results.json"
DEMO_BUILD_LOG = REPO / "evaluator" / "demo_archive" / "build_log.json"
FIXTURES = REPO / "tests" / "fixtures" / "h200"
DEFAULT_SAMPLE = REPO.parent / "shared" / "data" / "sakana_archive_subset.jsonl"
# The sample's claims were measured on an H100 (README: make demo imports it with --hardware).
SAMPLE_HARDWARE = "NVIDIA H100"
# sample_subset_reverify.json kept no run times: the commit that added it (fe4cf45) is the
# latest the runs can be.
SUBSET_RECORDED_AT = "2026-11-29T19:06:23Z"
# The judge on the H200 (scripts/gpu_sample_reverify.py, merged by scripts/h200_sample_fixture.py):
# 2.1.0 reached 56 rows, 2.2.0 the other 46; then harness 2.4.0 through the site's worker
# (scripts/h200_worker_sample_fixture.py) 86 of the 102, and 2.4.1 through the worker: 42 rows,
# then in a later call the other 60. verified_at is when each run finished, so a kernel's latest
# run (what its page shows) is its newest 2.4.1 run (checked by latest_runs_are_of_latest_harness).
JUDGE_FIXTURES = ("sample_judge_2_1.json", "sample_judge_2_2.json", "sample_worker_2_4_0.json",
                  "sample_worker_2_4_1.json", "sample_worker_2_4_1_b.json")
LATEST_HARNESS = "2.4.1"
REBUILT_NOTE = ("rebuilt from the fields the worker stored ({source}); the full document was not kept, so "
                "trials, checks and logs are missing and evidence the fixture trimmed is empty")


def archive_identities(path: Path, *, hardware: str = "") -> tuple[dict[tuple[int, str], dict], list[dict]]:
    """Kernel identities the way import_archive computes them: by (level, kernel name), and by
    row (the worker fixtures' kernel_id is the row's position + 1 in a fresh import)."""
    references: dict[tuple[int, int], str] = {}
    identities, by_row = {}, []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        record = archive_row_to_record(json.loads(line), hardware=hardware)
        task = (record.level, record.task_number)
        references.setdefault(task, record.reference_code)  # the first row of a task makes the task
        key = (record.level, record.name)
        # A name used twice in a level cannot say which kernel a result is for: such names map
        # to None and a result naming one stops the build (none of the shipped results does).
        identity = {
            "source_archive": path.stem, "level": record.level, "task_number": record.task_number,
            "op_name": record.op_name,
            "task_reference_sha256": hashlib.sha256(references[task].encode("utf-8")).hexdigest(),
            "name": record.name, "kind": record.kind, "code_sha256": record.code_sha256,
        }
        identities[key] = None if key in identities else identity
        by_row.append(identity)
    return identities, by_row


def _identity(identities: dict, level: int, name: str) -> dict:
    identity = identities.get((level, name))
    if identity is None:
        raise SystemExit(f"level {level} kernel {name!r}: not in the archive, or its name is not unique there")
    return identity


def demo_records(key) -> list[dict]:
    identities, _ = archive_identities(DEMO_ARCHIVE)
    results = json.loads(DEMO_RESULTS.read_text())
    started = json.loads(DEMO_BUILD_LOG.read_text())["runs"][0]["started"]
    records = []
    for name, entry in results["entries"].items():
        document = entry.get("harness_timed") or entry["harness"]
        identity = _identity(identities, entry["level"], name)
        records.append(_signed(identity, document, f"{started}Z", key))
    return records


def sample_records(key, sample: Path) -> list[dict]:
    identities, by_row = archive_identities(sample, hardware=SAMPLE_HARDWARE)
    records = []
    for entry in json.loads((FIXTURES / "sample_subset_reverify.json").read_text()):
        document = entry.get("timed_document") or entry["document"]
        records.append(_signed(_identity(identities, entry["level"], entry["kernel"]), document, SUBSET_RECORDED_AT, key))
    for fixture in ("worker_e2e.json", "worker_session3.json"):
        for row in json.loads((FIXTURES / fixture).read_text())["verifications"]:
            document = _rebuilt_document(row, f"tests/fixtures/h200/{fixture}")
            when = row["finished_at"].replace(" ", "T") + "Z"
            identity = by_row[row["kernel_id"] - 1]
            if (identity["level"], identity["name"]) != (row["level"], row["kernel"]):
                raise SystemExit(f"{fixture}: kernel_id {row['kernel_id']} is {identity['name']!r} in the sample, "
                                 f"not {row['kernel']!r}")
            records.append(_signed(identity, document, when, key))
    # The judge (harness 2.1.0, then 2.2.0, then 2.4.0 and 2.4.1, twice, through the worker),
    # full documents: the rows the H200 calls reached.
    for fixture in JUDGE_FIXTURES:
        for row in json.loads((FIXTURES / fixture).read_text())["rows"]:
            identity = by_row[row["index"]]
            if (identity["level"], identity["name"]) != (row["level"], row["kernel"]):
                raise SystemExit(f"{fixture}: row {row['index']} is {identity['name']!r} in the sample, "
                                 f"not {row['kernel']!r}")
            records.append(_signed(identity, row["document"], row["verified_at"], key))
    latest_runs_are_of_latest_harness(records)
    return records


def latest_runs_are_of_latest_harness(records: list[dict]) -> None:
    """Stop the build unless each kernel with a LATEST_HARNESS run has that run as its latest
    (by `verified_at`, as an import orders a kernel's runs)."""
    latest = {}
    for record in records:
        kernel = (record["kernel"]["level"], record["kernel"]["code_sha256"])
        when = datetime.fromisoformat(record["verified_at"].replace("Z", "+00:00"))
        if kernel not in latest or when > latest[kernel][0]:
            latest[kernel] = (when, record)
    has_latest_harness = {(r["kernel"]["level"], r["kernel"]["code_sha256"]) for r in records
                          if r["harness"]["version"] == LATEST_HARNESS}
    for kernel in sorted(has_latest_harness):
        when, record = latest[kernel]
        if record["harness"]["version"] != LATEST_HARNESS:
            raise SystemExit(f"level {kernel[0]} kernel {record['kernel']['name']!r}: its latest run ({when}) is of "
                             f"harness {record['harness']['version']}, later than its {LATEST_HARNESS} run")


def _rebuilt_document(row: dict, source: str) -> dict:
    versions = {"harness": row["harness_version"], "gpu": row["gpu_name"]}
    if row.get("harness_sha256"):
        versions["harness_sha256"] = row["harness_sha256"]
    timings = {name: {"median_ms": row[field]} for name, field in (("candidate", "runtime_ms"),
                                                                   ("eager", "eager_runtime_ms"))
               if row.get(field) is not None}
    speedup = {"vs_eager": row["speedup_eager"]} if row.get("speedup_eager") is not None else {}
    return {
        "verdict": row["status"], "flags": [dict(flag) for flag in row["flags"]], "task_flags": [],
        "trials": [], "timings": timings, "speedup": speedup, "versions": versions, "device": "cuda",
        "kind": "cuda_forward", "summary": {"max_abs_error": row.get("max_abs_error"), "phases": row.get("phases"),
                                            "worker": row.get("worker")},
        "note": REBUILT_NOTE.format(source=source),
    }


def _signed(identity: dict, document: dict, verified_at: str, key) -> dict:
    record = make_record(kernel=identity, result=document, bundle_sha256="", verified_at=verified_at,
                         verifier_name=VERIFIER_NAME, key_id=key_id_of(key.public_key()))
    return sign_record(record, key)


def write(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"
                            for r in records), encoding="utf-8")
    print(f"{path.relative_to(REPO)}: {len(records)} records")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--key", type=Path, required=True, help="the project's Ed25519 private key (PEM)")
    parser.add_argument("--sample", type=Path, default=DEFAULT_SAMPLE)
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args(argv)
    key = load_private_key(args.key)
    write(args.out / "demo_archive_h200.jsonl", demo_records(key))
    if args.sample.exists():
        write(args.out / "sample_subset_h200.jsonl", sample_records(key, args.sample))
    else:
        print(f"{args.sample}: not there; the sample's records were not rebuilt")


if __name__ == "__main__":
    main()
