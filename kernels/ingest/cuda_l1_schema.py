"""CUDA-L1's published kernels (deepreinforce-ai/CUDA-L1, `optimized_cuda_code/<gpu>.json`) ->
KernelRecord.

One JSON object per line: level_id, task_id, ref_code (the KernelBench reference it was
measured against), custom_code (a ModelNew module; null, the text "None" or a module without
ModelNew where CUDA-L1 published no kernel for the task), cuda_graph_code and cudnn_code (the
code of two of its baselines) and five claimed speedups, one per baseline, measured on the GPU
the file is named after. The dump holds only kernels its authors call correct.
"""
import re

from . import fields
from .kernelbench_schema import defines_model_new
from .records import KernelRecord

# CUDA-L1's score columns and the baseline each is measured against (Claim.Baseline values).
SCORE_BASELINES = {
    "score_default": "eager",
    "score_torch_compile_default": "torch_compile",
    "score_torch_compile_reduce_overhead": "torch_compile_reduce_overhead",
    "score_cuda_graph": "cuda_graph",
    "score_cudnn": "cudnn",
}
BASELINE_CODE_COLUMNS = {"cuda_graph_code": "cuda_graph", "cudnn_code": "cudnn"}
# The GPUs CUDA-L1 publishes files for, by the name their file starts with.
GPU_NAMES = {"h100": "NVIDIA H100", "a100": "NVIDIA A100", "l40": "NVIDIA L40", "3090": "NVIDIA GeForce RTX 3090",
             "rtx3090": "NVIDIA GeForce RTX 3090", "h20": "NVIDIA H20"}
_GPU_IN_NAME = re.compile(r"^(h100|a100|l40|rtx3090|3090|h20)(?![0-9a-z])", re.IGNORECASE)


def looks_like_cuda_l1_row(row: dict) -> bool:
    return "custom_code" in row and "ref_code" in row and "score_default" in row


def gpu_from_file_name(name: str) -> str:
    """"h100.json", "a100_subset.jsonl" -> the GPU's name; "" when the name does not say."""
    match = _GPU_IN_NAME.match(name)
    return GPU_NAMES[match.group(1).lower()] if match else ""


def cuda_l1_row_to_record(row: dict, *, hardware: str = "") -> KernelRecord:
    if not isinstance(row, dict):
        raise fields.FieldProblem("(row)", f"expected a JSON object, got {type(row).__name__}")
    level = fields.integer(row, "level_id", minimum=1, maximum=fields.LEVEL_MAX)
    task_number = fields.integer(row, "task_id", minimum=1, maximum=fields.TASK_NUMBER_MAX)
    reference_code = fields.text(row, "ref_code")
    speedups = {baseline: _score(row, column) for column, baseline in SCORE_BASELINES.items()}
    code = _kernel_code(row)
    if not hardware:
        raise fields.FieldProblem("(file)", "the GPU is not known: name the file after it (h100.json) or pass --hardware")
    from ..task_catalog import catalog_task  # names only; no ORM

    known = catalog_task(level, task_number)
    op_name = known.op_name if known else f"level{level}_task{task_number}"
    gpu_slug = hardware.split()[-1].lower()
    return KernelRecord(
        level=level, task_number=task_number, op_name=op_name, reference_code=reference_code, functional_code="",
        name=f"cuda_l1_{gpu_slug}_{op_name}"[:255], kind="model_new", code=code, experiment="CUDA-L1",
        claimed_speedup_native=speedups.pop("eager"), claimed_speedup_compile=speedups.pop("torch_compile"),
        # The published dump holds only the kernels its authors call correct.
        claimed_correct=True, hardware=hardware, extra_speedups=speedups,
        baseline_code={baseline: text for column, baseline in BASELINE_CODE_COLUMNS.items()
                       if (text := fields.text(row, column, required=False, allow_empty=True))},
    )


def _kernel_code(row: dict) -> str:
    value = row.get("custom_code")
    if value is None:
        raise fields.NotAKernel("custom_code", "is null: CUDA-L1 published no kernel for this task")
    code = fields.text(row, "custom_code", allow_empty=True)
    if code.strip() in {"", "None", "null"}:
        raise fields.NotAKernel("custom_code", f"is {code.strip()!r}: CUDA-L1 published no kernel for this task")
    if not defines_model_new(code):
        raise fields.NotAKernel("custom_code", "defines no `class ModelNew`")
    return code


def _score(row: dict, column: str) -> float | None:
    """A claimed speedup: CUDA-L1 writes them as numbers or as numeric strings; null when not measured."""
    value = row.get(column)
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise fields.FieldProblem(column, f"expected a speedup (a number), got {value[:40]!r}") from None
        row = {column: value}
    return fields.number(row, column)
