"""Building kernels/task_catalog.json from KernelBench's problem set (today's version) and,
optionally, a git clone of KernelBench whose history adds every earlier version of each task.

Problem files are read as text and hashed (kernels/task_catalog.normalized_reference); they are
never imported, and the catalog keeps no code.
"""
import json
import subprocess
from pathlib import Path

from .task_catalog import LEVEL_FOLDER, PROBLEM_FILE, op_name_of, problem_files, reference_sha256

HISTORY_FOLDER = "KernelBench"  # the problem set's folder inside a KernelBench clone


def build_catalog(problem_set: Path, *, history_repo: Path | None = None, current_label: str = "") -> dict:
    """The catalog document: one entry per task of `problem_set`, its versions oldest first.
    The current version is the problem set's; earlier ones come from `history_repo`'s commits."""
    current = problem_files(problem_set)
    if not current:
        raise ValueError(f"{problem_set}: no KernelBench problem files (level1/1_Op_name.py, ...) found")
    history = _history_versions(history_repo) if history_repo else {}
    tasks = []
    for (level, number), path in sorted(current.items()):
        versions = [dict(version) for version in history.get((level, number), [])]
        sha = reference_sha256(path.read_text(encoding="utf-8"))
        same = next((version for version in versions if version["sha256"] == sha), None)
        if same is not None:
            same["current"] = True
            same["label"] += ", today's"
        else:
            versions.append({"sha256": sha, "label": current_label or "KernelBench today", "current": True})
        tasks.append({"level": level, "number": number, "op_name": op_name_of(path.name),
                      "file": f"{path.parent.name}/{path.name}", "versions": versions})
    return {
        "about": "KernelBench tasks and the sha256 of each known version's reference, normalized "
                 "(kernels/task_catalog.normalized_reference). Written by manage.py build_task_catalog.",
        "tasks": tasks,
    }


def write_catalog(document: dict, out: Path) -> None:
    out.write_text(json.dumps(document, indent=1, sort_keys=False) + "\n", encoding="utf-8")


def _history_versions(repo: Path) -> dict[tuple[int, int], list[dict]]:
    """Every distinct version of every problem file in the clone's history, oldest first,
    labelled by the commit (short hash and date) that first holds it."""
    log = _git(repo, "log", "--reverse", "--format=%h %ad", "--date=short", "--", HISTORY_FOLDER)
    versions: dict[tuple[int, int], list[dict]] = {}
    for line in log.splitlines():
        commit, date = line.split()
        listing = _git(repo, "ls-tree", "-r", "--name-only", commit, "--", HISTORY_FOLDER)
        for path in listing.splitlines():
            key = _task_key(path)
            if key is None:
                continue
            sha = reference_sha256(_git(repo, "show", f"{commit}:{path}"))
            known = versions.setdefault(key, [])
            if all(version["sha256"] != sha for version in known):
                known.append({"sha256": sha, "label": f"KernelBench {commit} ({date})", "current": False})
    return versions


def _task_key(path: str) -> tuple[int, int] | None:
    parts = path.split("/")
    if len(parts) != 3 or parts[0] != HISTORY_FOLDER:
        return None
    level, name = LEVEL_FOLDER.match(parts[1]), PROBLEM_FILE.match(parts[2])
    return (int(level.group(1)), int(name.group(1))) if level and name else None


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout
