"""The shared sample's rows the site's GPU worker verified, read from the site's database into a
fixture shaped like tests/fixtures/h200/sample_judge_2_2.json: per finished run (status passed
or failed; runs still queued or running are left out) its row of the sample, the full judge
document, when it finished, and the worker that ran it. No Django: the database is read with
sqlite3, read-only.

    python scripts/h200_worker_sample_fixture.py --db DATA/archive.sqlite3 \\
        --out tests/fixtures/h200/FIXTURE.json --about TEXT --harness VERSION [--sample ROWS.jsonl]

(it made sample_worker_2_4_0.json with --harness 2.4.0, and sample_worker_2_4_1.json and
sample_worker_2_4_1_b.json, two calls' databases, with --harness 2.4.1).

The database must hold a fresh import of the sample alone (the worker fixtures' convention:
kernel id = the row's position + 1). Documents are trimmed as scripts/gpu_sample_reverify.py
trims them (the log's last 1500 characters) and the lines of kernel source a compiler's log
quotes are replaced as scripts/h200_sample_fixture.py --redact-code replaces them, with the
kernel's code from the same database: the fixture holds kernel names, never kernel code.
``verified_at`` is the run's ``finished_at`` (UTC: the site stores times in UTC).
"""
import argparse
import json
import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_sample_reverify import trimmed  # noqa: E402  the campaign's own trimming of a document
from h200_sample_fixture import code_lines, redact  # noqa: E402  and the fixtures' redaction of quoted code

DOCUMENTS = ("whole, but for the log trimmed to its last 1500 characters (scripts/gpu_sample_reverify.py) and the "
             "lines of kernel source a compiler's log quoted, replaced (scripts/h200_sample_fixture.py --redact-code)")
QUERY = """
SELECT v.id, v.kernel_id, v.status, v.started_at, v.finished_at, v.worker, v.gpu_name, v.phases, v.result,
       k.name, k.code, t.level, t.task_number, t.op_name
FROM kernels_verification v JOIN kernels_kernel k ON k.id = v.kernel_id JOIN kernels_task t ON t.id = k.task_id
WHERE v.status IN ('passed', 'failed') AND v.result IS NOT NULL
ORDER BY v.kernel_id, v.finished_at, v.id
"""


def iso_utc(stored: str | None) -> str | None:
    """'2026-12-01 13:43:30.254804' (the site's UTC) as '2026-12-01T13:43:30.254804Z'."""
    if not stored:
        return None
    return stored.replace(" ", "T").removesuffix("+00:00") + "Z"


def gpu_index(worker: str) -> str:
    """The device the run used, as the judge fixtures name it ('0'): workers are named
    'vm:PID:gpuN'."""
    tail = (worker or "").rsplit(":", 1)[-1]
    return tail[3:] if tail.startswith("gpu") else ""


def rows_of(db: Path, harness: str) -> tuple[list[dict], dict[str, list[int]]]:
    connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        found = connection.execute(QUERY).fetchall()
        unfinished = {}
        for kernel_id, status in connection.execute("SELECT kernel_id, status FROM kernels_verification "
                                                    "WHERE status NOT IN ('passed', 'failed') ORDER BY kernel_id"):
            unfinished.setdefault(status, []).append(kernel_id - 1)
    finally:
        connection.close()
    rows = []
    for (vid, kernel_id, status, started, finished, worker, gpu_name, phases, result, name, code,
         level, task, op) in found:
        document = json.loads(result)
        version = (document.get("versions") or {}).get("harness")
        if harness and version != harness:
            raise SystemExit(f"verification {vid} (kernel {kernel_id}) ran harness {version!r}, not {harness!r}")
        if document.get("verdict") != status:
            raise SystemExit(f"verification {vid}: status {status!r} but the document says {document.get('verdict')!r}")
        rows.append({
            "index": kernel_id - 1, "kernel_id": kernel_id, "kernel": name, "level": level, "task": task, "op": op,
            "gpu": gpu_index(worker), "gpu_name": gpu_name, "worker": worker, "verification_id": vid,
            "started_at": iso_utc(started), "verified_at": iso_utc(finished),
            "phases": json.loads(phases) if phases else None,
            "document": redact(trimmed(document), code_lines(code or "")),
        })
    return rows, unfinished


def check_names(rows: list[dict], sample: Path) -> None:
    """Each row's name is the sample's name at its position (kernel id = position + 1)."""
    archive = [json.loads(line) for line in sample.read_text().splitlines() if line.strip()]
    for row in rows:
        if archive[row["index"]]["Kernel_Name"] != row["kernel"]:
            raise SystemExit(f"kernel {row['kernel_id']} is {row['kernel']!r} in the database but row {row['index']} "
                             f"of {sample} is {archive[row['index']]['Kernel_Name']!r}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--db", type=Path, required=True, help="the site's SQLite database (read only)")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--about", default="")
    p.add_argument("--harness", required=True, help="every finished run must be of this harness, e.g. 2.4.1 ('' for any)")
    p.add_argument("--sample", type=Path, help="the sample's rows (JSON lines): check the names by position")
    args = p.parse_args(argv)
    rows, unfinished = rows_of(args.db, args.harness)
    indices = [row["index"] for row in rows]
    if len(set(indices)) != len(indices):
        raise SystemExit("a kernel has more than one finished run: the fixture keeps one row per kernel")
    if args.sample:
        check_names(rows, args.sample)
    # Rows by position in the sample, as the judge fixtures list the rows they did not reach.
    not_reached = sorted(i for indices in unfinished.values() for i in indices)
    head = {"about": args.about, "documents": DOCUMENTS, "not_reached": not_reached, "not_reached_status": unfinished}
    # One row per line, as scripts/h200_sample_fixture.py writes them.
    lines = ",\n".join(json.dumps(row, sort_keys=True, separators=(",", ":"), default=str) for row in rows)
    text = json.dumps(head, indent=1, default=str)[:-2] + ',\n "rows": [\n' + lines + "\n ]\n}\n"
    json.loads(text)  # it must read back
    args.out.write_text(text)
    verdicts = {}
    for row in rows:
        verdicts[row["document"]["verdict"]] = verdicts.get(row["document"]["verdict"], 0) + 1
    print(f"{args.out}: {len(rows)} rows {verdicts}, {len(not_reached)} not finished, {len(text):,} bytes")


if __name__ == "__main__":
    main()
