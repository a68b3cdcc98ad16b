"""Merge the sample_reverify.json files of several device calls of scripts/gpu_sample_reverify.py
into one fixture: per row of the archive the latest call's full document when a call reached a
verdict for it, with the call it came from and when it finished; rows no call reached are
listed apart. A row whose run was stopped by the call's deadline (phase ``not_run``) or by the
sandbox's watchdog counts as not reached (see ``reached``). No Django.

    python scripts/h200_sample_fixture.py --out tests/fixtures/h200/FIXTURE.json \\
        --call RESULTS.json STARTED_AT_UTC NOTE [--call ...] [--about TEXT] [--commit SHA]
        [--asked 17,19-33] [--redact-code SAMPLE.jsonl]

STARTED_AT_UTC is when the call's script started (ISO 8601, e.g. 2026-11-30T23:34:35Z); a
row's ``verified_at`` is that plus its ``finished_at_s``. ``--asked``: the rows the calls were
asked for (default all); ``not_reached`` lists those of them no call reached. ``--redact-code``:
the archive the rows come from; a line of a document's text (a compiler's log quoting the
source it failed on) that is a line of that row's kernel code is replaced by REDACTED, so the
fixture holds kernel names, never kernel code.
"""
import argparse
import json
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_sample_reverify import parse_rows  # noqa: E402  the campaign's own reading of --rows

REDACTED = "    [a line of the kernel's source, left out of the fixture]"


def code_lines(code: str) -> set[str]:
    """The kernel's lines a log could quote: stripped, at least 8 characters, a letter or digit in
    them (a lone brace or a comment rule quotes nothing)."""
    return {line.strip() for line in code.splitlines()
            if len(line.strip()) >= 8 and any(c.isalnum() for c in line)}


def redact(value, lines: set[str]):
    """value with every line of its strings that is a line of the kernel's code replaced."""
    if isinstance(value, dict):
        return {k: redact(v, lines) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, lines) for v in value]
    if isinstance(value, str) and lines and any(line.strip() in lines for line in value.splitlines()):
        return "\n".join(REDACTED if line.strip() in lines else line for line in value.split("\n"))
    return value


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
    p.add_argument("--asked", default="", help="the rows the calls were asked for, e.g. 17,19-33 (default all)")
    p.add_argument("--redact-code", help="the archive rows (JSON lines): quoted lines of each row's code are left out")
    args = p.parse_args(argv)
    meta, rows = merge(args.call)
    if args.redact_code:
        archive = [json.loads(line) for line in Path(args.redact_code).read_text().splitlines() if line.strip()]
        for i, row in rows.items():
            if archive[i]["Kernel_Name"] != row["kernel"]:
                raise SystemExit(f"row {i} is {archive[i]['Kernel_Name']!r} in {args.redact_code}, not {row['kernel']!r}")
            row["document"] = redact(row["document"], code_lines(archive[i].get("CUDA_Code") or ""))
    asked = sorted(parse_rows(args.asked, args.rows))
    fixture = {"about": args.about, "commit": args.commit, "calls": meta,
               **({"asked": asked} if args.asked else {}),
               "not_reached": [i for i in asked if i not in rows],
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
