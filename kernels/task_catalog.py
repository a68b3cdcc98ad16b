"""The catalog of KernelBench tasks: level, number, op name and every known version of each
task's reference module, identified by the sha256 of its normalized source.

A task's number and name say which task it is; its reference code says which version. The
catalog (kernels/task_catalog.json, written by `manage.py build_task_catalog`) holds derived
metadata only: names and hashes, never the problem files. No ORM here: services attach kernels
to tasks and versions with it.

Reference code is archive text: it is parsed with `ast` (which never runs it), never imported.
"""
import ast
import hashlib
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

CATALOG_PATH = Path(__file__).with_name("task_catalog.json")
# KernelBench's problem files are named <number>_<Op_Name>.py inside level<L>/ folders.
PROBLEM_FILE = re.compile(r"^(\d{1,4})_([A-Za-z0-9_]+)\.py$")
LEVEL_FOLDER = re.compile(r"^level(\d{1,2})$")


@dataclass(frozen=True)
class CatalogVersion:
    sha256: str  # of normalized_reference(code)
    label: str  # where the version comes from, e.g. "KernelBench bb27f27 (2024-10-24)"
    current: bool = False  # the version of today's problem set


@dataclass(frozen=True)
class CatalogTask:
    level: int
    number: int
    op_name: str
    file: str  # path inside the problem set, e.g. level1/1_Square_matrix_multiplication_.py
    versions: tuple[CatalogVersion, ...] = field(default_factory=tuple)  # oldest first


def normalized_reference(code: str) -> str:
    """The reference with comments, docstrings and formatting left out, so that versions differ
    only where the code does. A docstring is a comment in another syntax: it describes the task,
    it does not change what is computed. Code that does not parse keeps its text, with comment
    lines and blank lines dropped and whitespace runs collapsed (no task of KernelBench is such)."""
    try:
        tree = ast.parse(code)
        _drop_docstrings(tree)
        return ast.unparse(tree)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        lines = (re.sub(r"\s+", " ", line).strip() for line in code.splitlines())
        return "unparsed:" + "\n".join(line for line in lines if line and not line.startswith("#"))


def reference_sha256(code: str) -> str:
    return hashlib.sha256(normalized_reference(code).encode("utf-8")).hexdigest()


def _drop_docstrings(tree: ast.AST) -> None:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]


@lru_cache(maxsize=4)
def load_catalog(path: Path = CATALOG_PATH) -> dict[tuple[int, int], CatalogTask]:
    """The committed catalog keyed by (level, number); empty when the file is absent."""
    if not Path(path).exists():
        return {}
    document = json.loads(Path(path).read_text(encoding="utf-8"))
    return {
        (entry["level"], entry["number"]): CatalogTask(
            level=entry["level"], number=entry["number"], op_name=entry["op_name"], file=entry["file"],
            versions=tuple(CatalogVersion(**version) for version in entry["versions"]),
        )
        for entry in document["tasks"]
    }


def catalog_task(level: int, number: int) -> CatalogTask | None:
    return load_catalog().get((level, number))


def problem_files(problem_set: Path) -> dict[tuple[int, int], Path]:
    """The problem files of a KernelBench checkout's problem folder (level1/1_Op.py, ...)."""
    found = {}
    for level_dir in sorted(Path(problem_set).iterdir()):
        level_match = LEVEL_FOLDER.match(level_dir.name)
        if not level_dir.is_dir() or not level_match:
            continue
        for path in sorted(level_dir.iterdir()):
            match = PROBLEM_FILE.match(path.name)
            if match and path.is_file():
                found[(int(level_match.group(1)), int(match.group(1)))] = path
    return found


def op_name_of(path_name: str) -> str:
    """The op name as the archives spell it: the file name without .py (1_Square_matrix_multiplication_)."""
    return path_name[:-3] if path_name.endswith(".py") else path_name
