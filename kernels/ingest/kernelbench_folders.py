"""KernelBench's two folder formats: the leaderboard site's assets and an evaluation run.

Leaderboard (anneouyang/KernelBenchLeaderboard, docs/assets/): `data.json` maps
"Level <L>: <op name>" to a list of {display_name, torch_speedup, file}; the kernel is
`solutions/<file>.py`, the reference it was measured against `problems/l<L>_p<N>.py`; the
optional `raw_data.json` adds compile speedups and runtimes per file. Its page says the
speedups were measured on an NVIDIA L40S.

Evaluation run (ScalingIntelligence/KernelBench, `runs/<run_name>/`): `eval_results.json` maps
the problem id to a list of {sample_id, compiled, correctness, metadata, runtime,
runtime_stats} (one such object instead of a list before October 2025), beside the kernels
`level_<L>_problem_<P>_sample_<S>_kernel.py`. The references are not in the run: they are the
problem set the run was evaluated with (--problems). Runtimes are the mean of event-timed
trials in milliseconds; speedups need a baseline file of KernelBench's results/timing/
(--baseline).

Readers only read text: file names from the data are checked before any file is opened.
"""
import json
import re
from pathlib import Path

from . import fields
from .errors import RowError, UnreadableRow
from .records import KernelRecord

LEADERBOARD_GPU = "NVIDIA L40S"
_LEVEL_KEY = re.compile(r"^Level (\d{1,2}): ((\d{1,4})_[A-Za-z0-9_]+)$")
_SAFE_FILE = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")
_KERNEL_FILE = re.compile(r"^level_(\d{1,2})_problem_(\d{1,4})_sample_(\d{1,6})_kernel\.py$")


def folder_kind(path: Path) -> str:
    if (path / "data.json").is_file() and (path / "solutions").is_dir():
        return "kernelbench_leaderboard"
    if (path / "eval_results.json").is_file():
        return "kernelbench_run"
    return ""


def _load_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise UnreadableRow(RowError(path.name, "(file)", "(json)", f"malformed JSON: {exc}")) from None


def _read_if_present(folder: Path, name: str) -> str | None:
    path = folder / name
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None


# --- the leaderboard -------------------------------------------------------------------

def leaderboard_total(path: Path) -> int:
    data = _load_json(path / "data.json")
    return sum(len(entries) for entries in data.values() if isinstance(entries, list)) if isinstance(data, dict) else 0


def leaderboard_rows(path: Path):
    data = _load_json(path / "data.json")
    if not isinstance(data, dict):
        raise UnreadableRow(RowError("data.json", "(file)", "(json)", "expected an object keyed 'Level L: op name'"))
    raw = _load_json(path / "raw_data.json") if (path / "raw_data.json").is_file() else []
    extras = {entry.get("file"): entry for entry in raw if isinstance(entry, dict)} if isinstance(raw, list) else {}
    for key, entries in data.items():
        for index, entry in enumerate(entries if isinstance(entries, list) else [entries], start=1):
            row = {"key": key, "entry": entry}
            match = _LEVEL_KEY.match(key)
            if match and isinstance(entry, dict):
                level, number = int(match.group(1)), int(match.group(3))
                row.update(level=level, number=number, op_name=match.group(2),
                           ref_code=_read_if_present(path / "problems", f"l{level}_p{number}.py"),
                           problem_file=f"problems/l{level}_p{number}.py")
                name = entry.get("file")
                if isinstance(name, str) and _SAFE_FILE.match(name):
                    row["code"] = _read_if_present(path / "solutions", f"{name}.py")
                    row["extra"] = {k: v for k, v in extras.get(name, {}).items() if k != "code"}
            yield f"data.json {key[:80]!r} entry {index}", row


def leaderboard_row_to_record(row: dict, *, hardware: str = "") -> KernelRecord:
    match = _LEVEL_KEY.match(row["key"]) if isinstance(row.get("key"), str) else None
    if not match:
        raise fields.FieldProblem("(key)", f"expected 'Level <L>: <number>_<Op_Name>', got {str(row.get('key'))[:60]!r}")
    entry = row["entry"]
    if not isinstance(entry, dict):
        raise fields.FieldProblem("(entry)", f"expected an object, got {type(entry).__name__}")
    model = fields.text(entry, "display_name", max_length=255)
    name = fields.text(entry, "file", max_length=128)
    if not _SAFE_FILE.match(name):
        raise fields.FieldProblem("file", f"is not a file name: {name[:60]!r}")
    if row.get("ref_code") is None:
        raise fields.FieldProblem("(problem)", f"{row['problem_file']} is not in the folder")
    code = row.get("code")
    if code is None:
        raise fields.NotAKernel("file", f"solutions/{name}.py is not in the folder")
    if "class ModelNew" not in code:
        raise fields.NotAKernel("file", f"solutions/{name}.py defines no `class ModelNew`")
    extra = row.get("extra") or {}
    speedup = fields.number(entry, "torch_speedup", required=True)
    return KernelRecord(
        level=row["level"], task_number=row["number"], op_name=row["op_name"], reference_code=row["ref_code"],
        functional_code="", name=f"{model}_{name}"[:255], kind="model_new", code=code, experiment=model,
        claimed_runtime_ms=fields.number(extra, "kernel_eval_time"),
        claimed_native_runtime_ms=fields.number(extra, "baseline_torch_time"),
        claimed_compile_runtime_ms=fields.number(extra, "baseline_torch_compile_time"),
        claimed_speedup_native=speedup, claimed_speedup_compile=fields.number(extra, "torch_compile_speedup"),
        # Listed on the leaderboard with a speedup: the site ranks only kernels its eval passed.
        claimed_correct=True, hardware=hardware,
    )


# --- an evaluation run -----------------------------------------------------------------

def run_kernel_files(path: Path) -> dict[tuple[int, int], tuple[int, Path]]:
    """(problem, sample) -> (level, kernel file) for the kernels in a run's folder."""
    found = {}
    for file in path.iterdir():
        match = _KERNEL_FILE.match(file.name)
        if match and file.is_file():
            found[(int(match.group(2)), int(match.group(3)))] = (int(match.group(1)), file)
    return found


def run_results(path: Path) -> list[tuple[str, dict]]:
    results = _load_json(path / "eval_results.json")
    if not isinstance(results, dict):
        raise UnreadableRow(RowError("eval_results.json", "(file)", "(json)", "expected an object keyed by problem id"))
    out = []
    for problem, entries in results.items():
        for index, entry in enumerate(entries if isinstance(entries, list) else [entries]):
            out.append((f"eval_results.json problem {str(problem)[:20]} result {index}", {"problem": problem, "entry": entry}))
    return out


def run_rows(path: Path, *, references: dict, baselines: dict):
    """Rows of a run: each result with its kernel's text, its reference and its baseline time."""
    kernels = run_kernel_files(path)
    levels = {level for level, _ in kernels.values()}
    if len(levels) > 1:
        raise UnreadableRow(RowError(path.name, "(folder)", "(kernel files)", f"kernels of several levels {sorted(levels)}"))
    for where, row in run_results(path):
        entry = row["entry"]
        if isinstance(entry, dict) and str(row["problem"]).isdigit() and isinstance(entry.get("sample_id"), int):
            problem, sample = int(row["problem"]), entry["sample_id"]
            level, file = kernels.get((problem, sample), (next(iter(levels), None), None))
            reference = references.get((level, problem))
            row.update(level=level, number=problem, sample=sample, run=path.name,
                       code=file.read_text(encoding="utf-8", errors="replace") if file else None,
                       kernel_file=f"level_{level}_problem_{problem}_sample_{sample}_kernel.py",
                       ref_code=reference.read_text(encoding="utf-8") if reference else None,
                       op_name=reference.name[:-3] if reference else None,
                       baseline_ms=baselines.get((level, reference.name)) if reference else None)
        yield where, row


def run_row_to_record(row: dict, *, hardware: str = "") -> KernelRecord:
    entry = row["entry"]
    if not isinstance(entry, dict):
        raise fields.FieldProblem("(result)", f"expected an object, got {type(entry).__name__}")
    if not str(row["problem"]).isdigit():
        raise fields.FieldProblem("(problem id)", f"expected a number, got {str(row['problem'])[:40]!r}")
    fields.integer(entry, "sample_id", minimum=0)
    compiled, correct = fields.boolean(entry, "compiled"), fields.boolean(entry, "correctness")
    if row.get("code") is None:
        raise fields.NotAKernel("(kernel file)", f"{row['kernel_file']} is not in the run's folder")
    if row.get("ref_code") is None:
        raise fields.FieldProblem("(problem)", f"level {row['level']} problem {row['number']} is not in --problems")
    runtime = fields.number(entry, "runtime", non_negative=False)
    runtime = runtime if runtime is not None and runtime > 0 else None  # -1: not timed
    baseline = row.get("baseline_ms")
    metadata = entry.get("metadata") if isinstance(entry.get("metadata"), dict) else {}
    return KernelRecord(
        level=row["level"], task_number=row["number"], op_name=row["op_name"], reference_code=row["ref_code"],
        functional_code="", name=f"{row['run']}_l{row['level']}_p{row['number']}_s{row['sample']}"[:255],
        kind="model_new", code=row["code"], experiment=row["run"][:255], claimed_runtime_ms=runtime,
        claimed_native_runtime_ms=baseline, claimed_correct=compiled and correct,
        claimed_speedup_native=baseline / runtime if correct and baseline and runtime else None,
        error_text="" if correct else "; ".join(f"{k}: {v}" for k, v in metadata.items())[:10000],
        hardware=hardware,
    )


def baseline_times(path: Path | None) -> tuple[dict, str]:
    """KernelBench's results/timing/<hardware>/<baseline>.json: {"level1": {"1_Op.py": {"mean": ms,
    "hardware": ...}}} -> ({(level, file name): mean ms}, the hardware it names)."""
    if path is None:
        return {}, ""
    document = _load_json(Path(path))
    times, gpu = {}, ""
    for level_key, problems in (document.items() if isinstance(document, dict) else []):
        level = re.match(r"^level(\d+)$", str(level_key))
        for name, stats in (problems.items() if level and isinstance(problems, dict) else []):
            if isinstance(stats, dict) and isinstance(stats.get("mean"), (int, float)):
                times[(int(level.group(1)), name)] = float(stats["mean"])
                gpu = gpu or str(stats.get("hardware") or "")[:128]
    return times, gpu
