"""KernelBench-style pairs -> KernelRecord.

One JSON object per row: level_id, task_id, ref_code (Model, get_inputs,
get_init_inputs), custom_code (a module defining ModelNew), plus optional measured
fields under the spellings public archives use (docs/formats.md lists them).
"""
import re

from . import fields
from .records import KernelRecord, code_sha256

NAME_FIELDS = ("kernel_name", "name", "run_name")
OP_NAME_FIELDS = ("op_name", "problem_name")
CORRECT_FIELDS = ("correct", "score_correct", "correctness")
RUNTIME_FIELDS = ("runtime_ms", "runtime", "custom_runtime_ms")
NATIVE_FIELDS = ("native_runtime_ms", "ref_runtime_ms", "baseline_runtime_ms", "ref_runtime")
COMPILE_FIELDS = ("compile_runtime_ms", "ref_compile_runtime_ms")
SPEEDUP_NATIVE_FIELDS = ("speedup_native", "score_speedup", "speedup")
SPEEDUP_COMPILE_FIELDS = ("speedup_compile", "score_speedup_compile")

_CLASS_NAME = re.compile(r"^class\s+ModelNew\b", re.MULTILINE)


def defines_model_new(code: str) -> bool:
    return bool(_CLASS_NAME.search(code))


def looks_like_kernelbench_row(row: dict) -> bool:
    return "custom_code" in row and "ref_code" in row


def kernelbench_row_to_record(row: dict, *, hardware: str = "") -> KernelRecord:
    if not isinstance(row, dict):
        raise fields.FieldProblem("(row)", f"expected a JSON object, got {type(row).__name__}")
    level = fields.integer(row, "level_id", minimum=1, maximum=fields.LEVEL_MAX)
    task_number = fields.integer(row, "task_id", minimum=1, maximum=fields.TASK_NUMBER_MAX)
    reference_code = fields.text(row, "ref_code")
    if "custom_code" in row and row["custom_code"] is None:
        raise fields.NotAKernel("custom_code", "is null: no kernel in this row")
    code = fields.text(row, "custom_code")
    if not defines_model_new(code):
        raise fields.NotAKernel("custom_code", "defines no `class ModelNew`")

    name_field = fields.first_present(row, *NAME_FIELDS)
    op_field = fields.first_present(row, *OP_NAME_FIELDS)
    runtime = _number(row, RUNTIME_FIELDS)
    native = _number(row, NATIVE_FIELDS)
    compiled = _number(row, COMPILE_FIELDS)
    correct_field = fields.first_present(row, *CORRECT_FIELDS)
    correct = fields.boolean(row, correct_field) if correct_field else False
    return KernelRecord(
        level=level,
        task_number=task_number,
        op_name=fields.text(row, op_field, max_length=255) if op_field else f"level{level}_task{task_number}",
        reference_code=reference_code,
        functional_code="",
        name=fields.text(row, name_field, max_length=255) if name_field else f"kernel_{code_sha256(code)[:12]}",
        kind="model_new",
        code=code,
        experiment=fields.text(row, "experiment", required=False, allow_empty=True, max_length=255) or "",
        claimed_runtime_ms=runtime,
        claimed_native_runtime_ms=native,
        claimed_compile_runtime_ms=compiled,
        claimed_speedup_native=_number(row, SPEEDUP_NATIVE_FIELDS) or _ratio(native, runtime, correct),
        claimed_speedup_compile=_number(row, SPEEDUP_COMPILE_FIELDS) or _ratio(compiled, runtime, correct),
        claimed_correct=correct,
        claimed_max_diff=fields.number(row, "max_diff"),
        error_text=fields.text(row, "error", required=False, allow_empty=True) or "",
        hardware=fields.text(row, "hardware", required=False, allow_empty=True, max_length=128) or hardware,
        profiles=[],
    )


def _number(row: dict, names: tuple[str, ...]) -> float | None:
    name = fields.first_present(row, *names)
    return fields.number(row, name) if name else None


def _ratio(baseline: float | None, runtime: float | None, correct: bool) -> float | None:
    # The archive's convention: speedup = baseline / kernel runtime, only for correct kernels.
    if not correct or not baseline or not runtime:
        return None
    return baseline / runtime
