"""Merge the sample_reverify.json files of several device calls of scripts/gpu_sample_reverify.py
into one fixture: per row of the archive the latest call's full document when a call reached a
verdict for it, with the call it came from and when it finished; rows no call reached are
listed apart. A row whose run was stopped by the call's deadline (phase ``not_run``) or by the
sandbox's watchdog counts as not reached (see ``reached``). No Django.

    python scripts/h200_sample_fixture.py --out tests/fixtures/h200/FIXTURE.json \\
        --call RESULTS.json STARTED_AT_UTC NOTE [--call ...] [--about TEXT] [--commit SHA]

STARTED_AT_UTC is when the call's script started (ISO 8601, e.g. 2026-11-30T23:34:35Z); a
row's ``verified_at`` is that plus its ``finished_at_s``.
"""
import argparse
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path


def reached(row) -> bool:
    """A verdict the kernel earned. Not one the sandbox's watchdog made: in these campaigns every
    run it stopped was stopped by the call (its deadline, or a run left waiting for the GPU's
    lock on a host loaded with builds), never by a kernel that hung (a re-run of each passed or
    failed on its own). Campaigns where a kernel may hang keep such rows by other means."""
    doc = row.get("document")
    if not doc or row.get("phase") not in ("verified", "build") or doc.get("verdict") not in ("passed", "failed"):
        return False
    return not (doc.get("sandbox") or {}).get("timed_out")


def merge(calls):
    rows, meta = {}, []
    for number, (path, started, note) in enumerate(calls, start=1):
        data = json.loads(Path(path).read_text())
        start = datetime.fromisoformat(started.replace("Z", "+00:00")).astimezone(timezone.utc)
        meta.append(dict(data["meta"], call=number, started_at=started, note=note))
        for row in data["rows"]:
            if not reached(row):
                continue
            when = start + timedelta(seconds=row["finished_at_s"])
            rows[row["index"]] = dict(row, call=number, verified_at=when.strftime("%Y-%m-%dT%H:%M:%SZ"))
    return meta, rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--call", nargs=3, action="append", required=True, metavar=("RESULTS", "STARTED_AT", "NOTE"))
    p.add_argument("--rows", type=int, default=102, help="rows in the archive")
    p.add_argument("--about", default="")
    p.add_argument("--commit", default="")
    args = p.parse_args(argv)
    meta, rows = merge(args.call)
    fixture = {"about": args.about, "commit": args.commit, "calls": meta,
               "not_reached": [i for i in range(args.rows) if i not in rows],
               "rows": [rows[i] for i in sorted(rows)]}
    # One row per line: a diff of a later re-run shows which rows changed.
    lines = ",\n".join(json.dumps(row, sort_keys=True, separators=(",", ":"), default=str) for row in fixture["rows"])
    head = {k: v for k, v in fixture.items() if k != "rows"}
    text = json.dumps(head, indent=1, default=str)[:-2] + ',\n "rows": [\n' + lines + "\n ]\n}\n"
    json.loads(text)  # it must read back
    Path(args.out).write_text(text)
    verdicts = {}
    for row in fixture["rows"]:
        verdicts[row["document"]["verdict"]] = verdicts.get(row["document"]["verdict"], 0) + 1
    print(f"{args.out}: {len(fixture['rows'])} rows reached {verdicts}, {len(fixture['not_reached'])} not reached")


if __name__ == "__main__":
    main()
