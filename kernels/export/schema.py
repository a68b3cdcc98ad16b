"""Columns of an export: the published archive's 19, in its order and types, then ours.

The published dataset (SakanaAI/AI-CUDA-Engineer-Archive on the HuggingFace hub) is three
Parquet files written by pandas, one per split (level_1, level_2, level_3); its columns
read back in `datasets` as the types below. Code written for it indexes these names and
relies on these types (a float runtime that is NaN/None for incorrect kernels, a bool
`Correct`, profiles as Python-repr strings), so the archive columns are fixed here and
nowhere else. The extra columns carry what this site adds; --archive-compatible drops them.
"""
import pyarrow as pa

# (name, Arrow type, meaning). Order matters: it is the published column order.
ARCHIVE_COLUMNS: list[tuple[str, pa.DataType, str]] = [
    ("Op_Name", pa.string(), "KernelBench task name, e.g. `1_Square_matrix_multiplication_`"),
    ("Level_ID", pa.int64(), "KernelBench level (1: single ops, 2: fused ops, 3: whole models)"),
    ("Task_ID", pa.int64(), "task number within the level"),
    ("Kernel_Name", pa.string(), "the kernel's name in its source archive"),
    ("CUDA_Runtime", pa.float64(), "claimed kernel runtime, ms (null for incorrect kernels)"),
    ("PyTorch_Native_Runtime", pa.float64(), "claimed eager PyTorch runtime, ms"),
    ("PyTorch_Compile_Runtime", pa.float64(), "claimed torch.compile runtime, ms"),
    ("CUDA_Speedup_Native", pa.float64(), "claimed speedup vs eager (baseline / kernel runtime; 0.0 when incorrect)"),
    ("CUDA_Speedup_Compile", pa.float64(), "claimed speedup vs torch.compile"),
    ("CUDA_Code", pa.string(), "the kernel's source (CUDA/C++ exposing `forward`, or a `ModelNew` module)"),
    ("PyTorch_Code_Module", pa.string(), "the task's reference module (`Model`, `get_inputs`, `get_init_inputs`)"),
    ("PyTorch_Code_Functional", pa.string(), "the task's functional form (`module_fn`), null when unknown"),
    ("Correct", pa.bool_(), "claimed correct by the source archive"),
    ("Max_Diff", pa.float64(), "claimed max abs difference to the reference"),
    ("Error", pa.string(), "build or run error log, null when none"),
    ("NCU_Profile", pa.string(), "Nsight Compute metrics and rules, a Python-repr dict string"),
    ("Torch_Profile", pa.string(), "torch.profiler top events, a Python-repr dict string"),
    ("Clang_Tidy", pa.string(), "clang-tidy output, a Python-repr dict string"),
    ("__index_level_0__", pa.int64(), "row index in the source archive's pandas frame; not unique, not a key"),
]

EXTRA_COLUMNS: list[tuple[str, pa.DataType, str]] = [
    ("Kernel_ID", pa.int64(), "this site's kernel id (its page: `/kernels/<id>/`)"),
    ("Kernel_Kind", pa.string(), "`cuda_forward` (called in place of module_fn) or `model_new` (KernelBench ModelNew)"),
    ("Source_Archive", pa.string(), "the archive the kernel was imported from"),
    ("Experiment", pa.string(), "the source archive's experiment, when known"),
    ("Hardware", pa.string(), "GPU the claimed numbers were measured on, when known"),
    ("Technique_Tags", pa.list_(pa.string()), "techniques detected in the code (shared_memory_tiling, warp_shuffle, ...)"),
    ("Verified", pa.bool_(), "the latest finished re-verification passed with no blocking flag"),
    ("Verification_Status", pa.string(), "passed, failed or error: the latest finished re-verification, a trusted one "
     "(this site's worker or a trusted signer) before any contribution; null if none"),
    ("Verification_Origin", pa.string(), "who vouches for it: worker (this site), imported (a trusted signer), "
     "contributed (a user's key: shown, never ranked) or unsigned"),
    ("Verification_Verifier", pa.string(), "the name it is credited to (a contributor's own name for a contribution)"),
    ("Verification_Runtime", pa.float64(), "re-measured kernel runtime, ms (median)"),
    ("Verification_Native_Runtime", pa.float64(), "re-measured eager PyTorch runtime, ms (median, same process)"),
    ("Verification_Compile_Runtime", pa.float64(), "re-measured torch.compile runtime, ms (median, same process)"),
    ("Verification_Speedup_Native", pa.float64(), "re-measured speedup vs eager"),
    ("Verification_Speedup_Compile", pa.float64(), "re-measured speedup vs torch.compile"),
    ("Verification_Timing_Clock", pa.string(), "what the runtimes and speedups above measure: gpu_time (the call's "
     "launch queued behind a spin, no host gaps; since harness 2.4.0 the device's busy time from the profiler, "
     "bounded below by the call's CUDA events; ranks), kernel_time (the device's busy time from the profiler, "
     "for calls that wait for the device inside themselves; ranks), end_to_end (harness before 2.1.0) or host (a CPU run)"),
    ("Verification_End_To_End_Runtime", pa.float64(), "re-measured kernel runtime end to end, ms (CUDA events around "
     "the call launched from Python: the host's launches in it)"),
    ("Verification_End_To_End_Native_Runtime", pa.float64(), "re-measured eager runtime end to end, ms"),
    ("Verification_End_To_End_Speedup_Native", pa.float64(), "re-measured speedup vs eager, end to end"),
    ("Verification_Max_Abs_Error", pa.float64(), "largest abs error over the trials"),
    ("Verification_Max_Rel_Error", pa.float64(), "largest relative-norm error ||out - ref|| / ||ref|| over the trials"),
    ("Verification_GPU", pa.string(), "GPU the re-verification ran on"),
    ("Verification_Harness_Version", pa.string(), "version of the harness that ran it"),
    ("Verification_Versions", pa.string(), "torch, CUDA and driver versions, JSON text"),
    ("Verification_Flags", pa.string(), "hack flags raised, JSON text: [{name, blocking, evidence}]"),
    ("Verification_Bundle_SHA256", pa.string(), "sha256 of the verification bundle that ran (downloadable from the kernel's page)"),
    ("Verification_Finished_At", pa.string(), "when it finished, ISO 8601 UTC"),
]

ARCHIVE_COLUMN_NAMES = [name for name, _, _ in ARCHIVE_COLUMNS]
# Columns whose values are not scalars; CSV carries them as JSON text.
NESTED_COLUMNS = {name for name, kind, _ in EXTRA_COLUMNS if pa.types.is_list(kind)}


def columns(*, archive_compatible: bool) -> list[tuple[str, pa.DataType, str]]:
    return ARCHIVE_COLUMNS if archive_compatible else ARCHIVE_COLUMNS + EXTRA_COLUMNS


def column_names(*, archive_compatible: bool) -> list[str]:
    return [name for name, _, _ in columns(archive_compatible=archive_compatible)]


def arrow_schema(*, archive_compatible: bool) -> pa.Schema:
    """The Arrow schema, with the `datasets` features in its metadata so a saved dataset
    and a Parquet file both read back as exactly these features."""
    return features(archive_compatible=archive_compatible).arrow_schema


def features(*, archive_compatible: bool):
    from datasets import Features

    plain = pa.schema([(name, kind) for name, kind, _ in columns(archive_compatible=archive_compatible)])
    return Features.from_arrow_schema(plain)


def split_name(level: int) -> str:
    return f"level_{level}"


PUBLISHED_LEVELS = (1, 2, 3)
