"""Where the CUDA-L1 campaign stands: per dump, what has a signed record and what is still to do
(no Django).

    python -m evaluator.h200_results.campaign_status --dumps /work/shared/data/cuda_l1 \\
        [--records evaluator/h200_results/cuda_l1] [--db .device/data.tgz] [--next 40] [--todo todo.json]

Per dump (each full `*.json` of --dumps, a100, l40, 3090, h20 first, or the files named): its rows, the rows with a kernel
(import_archive's own reading of a row, kernels/ingest/cuda_l1_schema.py; the dumps share much
of their code, and the same code is one kernel however many dumps hold it), the kernels that
already have a signed record in --records, and their verdicts: passed, failed and error,
the failed and errored ones counted by blocking flag (a kernel's latest record, by verified_at,
as its page shows it). A kernel is known by (level, task number, code sha256), which every
re-import gives it back (Kernel is unique by task and code sha256).

The kernels still to do are printed by that identity and, with --db (default .device/data.tgz,
what `scripts/gpu_worker_throughput_h200.sh pack` makes; also a results.tgz or an
archive.sqlite3), by their id in that database, the worker's KERNELS= list: `--next N` prints
the first N of them as the next call's `KERNELS=...`. A to-do kernel that database lacks is
counted (its dump is not in the pack's EXTRA_ARCHIVES). --list prints the to-do list, one kernel
a line; --todo FILE writes it as JSON.
"""
import argparse
import json
import sqlite3
import sys
import tempfile
from collections import Counter
from datetime import datetime
from pathlib import Path

from kernels.ingest.cuda_l1_schema import cuda_l1_row_to_record, gpu_from_file_name
from kernels.ingest.fields import NotAKernel

from .build_campaign_records import CAMPAIGN_DIR, REPO, open_database

DEFAULT_DB = REPO / ".device" / "data.tgz"
# A folder's dumps in make demo's order, the device database's (a100) first; others after, by name.
DUMP_ORDER = ("a100", "l40", "3090", "h20")


def dump_order(path: Path) -> tuple:
    return (DUMP_ORDER.index(path.stem) if path.stem in DUMP_ORDER else len(DUMP_ORDER)), path.name


def dump_kernels(path: Path) -> tuple[int, list[dict]]:
    """(rows, the rows' kernels in row order: row, level, task_number, code_sha256, name)."""
    rows, kernels = 0, []
    hardware = gpu_from_file_name(path.name)
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        rows += 1
        try:
            record = cuda_l1_row_to_record(json.loads(line), hardware=hardware)
        except NotAKernel:
            continue
        kernels.append({"row": rows, "level": record.level, "task_number": record.task_number,
                        "code_sha256": record.code_sha256, "name": record.name})
    return rows, kernels


def identity(entry: dict) -> tuple[int, int, str]:
    return entry["level"], entry["task_number"], entry["code_sha256"]


def latest_records(folder: Path) -> dict[tuple, dict]:
    """Each kernel's latest signed record (by verified_at) in the campaign folder's files."""
    latest = {}
    for path in sorted(Path(folder).glob("*.jsonl")) if Path(folder).is_dir() else []:
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            record = json.loads(line)
            key = identity(record["kernel"])
            when = datetime.fromisoformat(record["verified_at"].replace("Z", "+00:00"))
            if key not in latest or when > latest[key][0]:
                latest[key] = (when, record)
    return {key: record for key, (_, record) in latest.items()}


def verdict_label(record: dict) -> str:
    """"passed", or the verdict with its blocking flags: "failed: timing_unaccounted"."""
    result = record["result"]
    blocking = sorted({flag["name"] for flag in result.get("flags") or [] if flag.get("blocking")})
    if result["verdict"] == "passed" and not blocking:
        return "passed"
    return f"{result['verdict']}: {', '.join(blocking) or 'no blocking flag'}"


def worker_ids(db: Path | None) -> dict[tuple, int] | None:
    """(level, task number, code sha256) -> Kernel id in the device database; None without one."""
    if db is None or not Path(db).exists():
        return None
    with tempfile.TemporaryDirectory() as scratch:
        connection = open_database(Path(db), Path(scratch))
        try:
            return {(level, number, sha): kernel_id for kernel_id, level, number, sha in connection.execute(
                "SELECT k.id, t.level, t.task_number, k.code_sha256 FROM kernels_kernel k "
                "JOIN kernels_task t ON t.id = k.task_id")}
        finally:
            connection.close()


def status(dumps: list[Path], records: dict[tuple, dict], ids: dict | None) -> tuple[list[str], list[dict]]:
    """(lines to print, the kernels still to do, each once, in dump and row order)."""
    lines, todo, seen, seen_before = [], [], set(), set()
    for path in dumps:
        rows, kernels = dump_kernels(path)
        done = [records[identity(k)] for k in kernels if identity(k) in records]
        verdicts = Counter(verdict_label(record) for record in done)
        earlier = sum(1 for k in kernels if identity(k) in seen_before)
        lines.append(f"{path.name}: {rows} rows, {len(kernels)} with a kernel ({earlier} also in a dump above), "
                     f"{len(done)} with a signed record, {len(kernels) - len(done)} to do")
        seen_before.update(identity(k) for k in kernels)
        lines.extend(f"    {count:4d}  {label}" for label, count in sorted(verdicts.items(), key=lambda i: (-i[1], i[0])))
        for kernel in kernels:
            key = identity(kernel)
            if key in records or key in seen:
                continue
            seen.add(key)
            todo.append({**kernel, "dump": path.name, "worker_id": ids.get(key) if ids is not None else None})
    return lines, todo


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dumps", type=Path, nargs="+", required=True,
                        help="CUDA-L1's folder (its full dumps, *.json) or dump files")
    parser.add_argument("--records", type=Path, default=CAMPAIGN_DIR, help="the campaign's signed records (*.jsonl)")
    parser.add_argument("--db", type=Path, default=DEFAULT_DB,
                        help="the device database (the pack's .device/data.tgz, a results.tgz or archive.sqlite3)")
    parser.add_argument("--next", type=int, default=0, metavar="N", help="print the first N to-do ids as KERNELS=")
    parser.add_argument("--todo", type=Path, default=None, help="write the to-do list (JSON) here")
    parser.add_argument("--list", action="store_true", help="print the to-do list, one kernel a line")
    args = parser.parse_args(argv)
    dumps = [p for arg in args.dumps for p in (sorted(arg.glob("*.json"), key=dump_order) if arg.is_dir() else [arg])]
    if not dumps:
        raise SystemExit(f"no dumps (*.json) in {' '.join(map(str, args.dumps))}")
    ids = worker_ids(args.db)
    lines, todo = status(dumps, latest_records(args.records), ids)
    print("\n".join(lines))
    print(f"to do: {len(todo)} kernels")
    if ids is None:
        print(f"  (no device database at {args.db}: run the pack, or pass --db, for the worker's ids)")
    else:
        absent = [k for k in todo if k["worker_id"] is None]
        by_dump = Counter(k["dump"] for k in absent)
        print(f"  in {args.db.name}: {len(todo) - len(absent)}; not there: {len(absent)}"
              + (f" ({', '.join(f'{d} {n}' for d, n in sorted(by_dump.items()))}: add to EXTRA_ARCHIVES)" if absent else ""))
        ready = [str(k["worker_id"]) for k in todo if k["worker_id"] is not None]
        if args.next:
            print(f"KERNELS={','.join(ready[:args.next])}")
    if args.todo:
        args.todo.write_text(json.dumps(todo, indent=1) + "\n", encoding="utf-8")
        print(f"{args.todo}: {len(todo)} kernels to do")
    if args.list:
        for kernel in todo:
            print(f"  {kernel['dump']} row {kernel['row']}: level {kernel['level']} task {kernel['task_number']} "
                  f"{kernel['code_sha256'][:12]} id {kernel['worker_id'] if kernel['worker_id'] is not None else '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
