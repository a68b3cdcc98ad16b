"""The archive formats an import understands, and how each is told apart (docs/formats.md).

Each format names its row schema (row -> KernelRecord), the source name its kernels get when
the import does not name one, the GPU its claims were measured on when the rows do not say,
and whether rows that hold no kernel are refused (our own schema) or skipped (foreign dumps
that publish placeholder rows, as CUDA-L1 does for tasks it has no kernel for).
"""
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .archive_schema import archive_row_to_record, looks_like_archive_row
from .cuda_l1_schema import cuda_l1_row_to_record, gpu_from_file_name, looks_like_cuda_l1_row
from .errors import IngestError, UnknownFormat
from .kernelbench_folders import LEADERBOARD_GPU, leaderboard_row_to_record, run_row_to_record
from .kernelbench_schema import kernelbench_row_to_record, looks_like_kernelbench_row
from .readers import ImportOptions, Source, UnreadableRow

__all__ = ["SCHEMAS", "ImportOptions", "detect_schema", "rows_without_kernel_default"]


@dataclass(frozen=True)
class Format:
    to_record: Callable
    rows_without_kernel: str  # "refuse" or "skip"
    default_source: Callable[[Source], str]
    default_hardware: Callable[[Source], str] = lambda source: ""

    def source_name(self, source: Source) -> str:
        return self.default_source(source)

    def hardware_for(self, source: Source, options: ImportOptions) -> str:
        """--hardware wins; else what the format says (a file name, a page's title)."""
        return options.hardware or self.default_hardware(source)


def _stem(source: Source) -> str:
    return source.path.stem if source.container != "hub" else str(source.path)


SCHEMAS = {
    "archive": Format(archive_row_to_record, "refuse", _stem),
    "kernelbench": Format(kernelbench_row_to_record, "refuse", _stem),
    "cuda_l1": Format(cuda_l1_row_to_record, "skip", lambda source: "CUDA-L1",
                      lambda source: gpu_from_file_name(source.path.name)),
    "kernelbench_leaderboard": Format(leaderboard_row_to_record, "skip", lambda source: "KernelBench leaderboard",
                                      lambda source: LEADERBOARD_GPU),
    "kernelbench_run": Format(run_row_to_record, "skip",
                              lambda source: f"KernelBench run {source.path.name}",
                              lambda source: source.run_hardware()),
}


def rows_without_kernel_default(schema: str) -> str:
    return SCHEMAS[schema].rows_without_kernel


def detect_schema(source: Source) -> str:
    """Folders say their format by their files; rows by their columns (the first row's, read
    ahead on the source's own reader, which the import then goes on with)."""
    if source.container in {"kernelbench_leaderboard", "kernelbench_run"}:
        return source.container
    try:
        row = source.first_row()
    except UnreadableRow as unreadable:
        raise IngestError([unreadable.error]) from None
    if isinstance(row, dict) and looks_like_archive_row(row):
        return "archive"
    if isinstance(row, dict) and looks_like_cuda_l1_row(row):
        return "cuda_l1"
    if isinstance(row, dict) and looks_like_kernelbench_row(row):
        return "kernelbench"
    raise UnknownFormat(
        f"{source.path}: cannot tell the format from the first row (no CUDA_Code/Kernel_Name columns of the archive "
        "schema, no ref_code/custom_code of KernelBench pairs, no score_* of CUDA-L1)"
    )

