"""Rows of the AI CUDA Engineer Archive schema -> KernelRecord.

The 19 columns are documented in docs/formats.md. PyTorch_Code_Functional and
Torch_Profile are optional (subsets of the archive drop them); __index_level_0__ is a
pandas artefact, kept for provenance but never used as a key.
"""
import re

from . import fields
from .literals import LiteralRejected, parse_python_literal
from .records import KernelRecord, ProfileRecord

COLUMNS = [
    "Op_Name", "Level_ID", "Task_ID", "Kernel_Name", "CUDA_Runtime", "PyTorch_Native_Runtime",
    "PyTorch_Compile_Runtime", "CUDA_Speedup_Native", "CUDA_Speedup_Compile", "CUDA_Code",
    "PyTorch_Code_Module", "PyTorch_Code_Functional", "Correct", "Max_Diff", "Error",
    "NCU_Profile", "Torch_Profile", "Clang_Tidy", "__index_level_0__",
]
OPTIONAL_COLUMNS = {"PyTorch_Code_Functional", "Torch_Profile", "__index_level_0__"}
# Columns this site's own exports add (docs/export.md); read back so a round trip keeps them.
KINDS = ("cuda_forward", "model_new")
PROFILE_COLUMNS = {"NCU_Profile": "ncu", "Torch_Profile": "torch", "Clang_Tidy": "clang_tidy"}

# The archive's clang-tidy output names the file it linted, whose path carries the
# experiment: .../experiments/<experiment>/level_1/task_1/...
_EXPERIMENT_IN_PATH = re.compile(r"/experiments/([A-Za-z0-9_.\-]{1,200})/level_\d+/")


def looks_like_archive_row(row: dict) -> bool:
    return "CUDA_Code" in row and "Kernel_Name" in row


def archive_row_to_record(row: dict, *, hardware: str = "") -> KernelRecord:
    """Validate one row; raise fields.FieldProblem naming the first bad field."""
    if not isinstance(row, dict):
        raise fields.FieldProblem("(row)", f"expected a JSON object, got {type(row).__name__}")
    for column in COLUMNS:
        if column not in row and column not in OPTIONAL_COLUMNS:
            raise fields.FieldProblem(column, "missing column")

    correct = fields.boolean(row, "Correct")
    profiles = [_profile(row, column, kind) for column, kind in PROFILE_COLUMNS.items()]
    profiles = [profile for profile in profiles if profile is not None]
    return KernelRecord(
        level=fields.integer(row, "Level_ID", minimum=1, maximum=fields.LEVEL_MAX),
        task_number=fields.integer(row, "Task_ID", minimum=1, maximum=fields.TASK_NUMBER_MAX),
        op_name=fields.text(row, "Op_Name", max_length=255),
        reference_code=fields.text(row, "PyTorch_Code_Module"),
        functional_code=fields.text(row, "PyTorch_Code_Functional", required=False) or "",
        name=fields.text(row, "Kernel_Name", max_length=255),
        kind=_kind(row),
        code=fields.text(row, "CUDA_Code"),
        experiment=fields.text(row, "Experiment", required=False, allow_empty=True, max_length=255)
        or _experiment(profiles),
        archive_index=fields.integer(row, "__index_level_0__", required=False),
        claimed_runtime_ms=fields.number(row, "CUDA_Runtime"),
        claimed_native_runtime_ms=fields.number(row, "PyTorch_Native_Runtime"),
        claimed_compile_runtime_ms=fields.number(row, "PyTorch_Compile_Runtime"),
        claimed_speedup_native=fields.number(row, "CUDA_Speedup_Native"),
        claimed_speedup_compile=fields.number(row, "CUDA_Speedup_Compile"),
        claimed_correct=correct,
        claimed_max_diff=fields.number(row, "Max_Diff"),
        error_text=fields.text(row, "Error", required=False, allow_empty=True) or "",
        hardware=fields.text(row, "Hardware", required=False, allow_empty=True, max_length=128) or hardware,
        profiles=profiles,
    )


def _kind(row: dict) -> str:
    kind = fields.text(row, "Kernel_Kind", required=False) or "cuda_forward"
    if kind not in KINDS:
        raise fields.FieldProblem("Kernel_Kind", f"must be one of {', '.join(KINDS)}, got {kind[:40]!r}")
    return kind


def _profile(row: dict, column: str, kind: str) -> ProfileRecord | None:
    raw = fields.text(row, column, required=False, allow_empty=True)
    if raw is None or not raw.strip():
        return None
    try:
        parsed = parse_python_literal(raw)
    except LiteralRejected as exc:
        raise fields.FieldProblem(column, str(exc)) from None
    _check_profile_shape(column, kind, parsed)
    return ProfileRecord(kind=kind, raw_text=raw, parsed=parsed)


def _check_profile_shape(column: str, kind: str, parsed) -> None:
    if not isinstance(parsed, dict):
        raise fields.FieldProblem(column, f"expected a dict literal, got {type(parsed).__name__}")
    if kind == "ncu":
        if not isinstance(parsed.get("metrics"), dict):
            raise fields.FieldProblem(column, "an NCU profile needs a 'metrics' dict")
        if not isinstance(parsed.get("rules", {}), dict):
            raise fields.FieldProblem(column, "the NCU profile's 'rules' must be a dict")
    elif kind == "clang_tidy":
        if not isinstance(parsed.get("stdout", ""), str) or "stdout" not in parsed:
            raise fields.FieldProblem(column, "a clang-tidy profile needs a 'stdout' string")


def _experiment(profiles: list[ProfileRecord]) -> str:
    for profile in profiles:
        if profile.kind == "clang_tidy":
            match = _EXPERIMENT_IN_PATH.search(profile.parsed.get("stdout") or "")
            if match:
                return match.group(1)
    return ""
