"""Files of an export: one file per split, or a `datasets` DatasetDict folder; and the
swap that makes a re-run replace the previous export in one step.

Everything is written into a staging folder beside OUT and renamed into place at the
end, so a reader never sees half an export and a failed run leaves the old one intact.
"""
import os
import shutil
import tempfile
import uuid
from pathlib import Path

from .encoders import FILE_EXTENSIONS, Batches, encode

# Written into every card; only a folder carrying it (or an empty one) is ever replaced,
# so a mistyped OUT such as the home folder is refused rather than deleted.
EXPORT_MARKER = "<!-- written by kernel-archive export_dataset -->"
HF_SHARD_SIZE = "500MB"


class ExportTargetError(Exception):
    pass


def split_file_name(split: str, file_format: str) -> str:
    return f"{split}.{FILE_EXTENSIONS[file_format]}"


def write_split_file(path: Path, file_format: str, batches: Batches, *, archive_compatible: bool) -> None:
    with path.open("wb") as handle:
        for chunk in encode(file_format, batches, archive_compatible=archive_compatible):
            handle.write(chunk)


def write_dataset_dict(folder: Path, split_arrow_files: dict[str, Path]) -> None:
    """save_to_disk of a DatasetDict whose splits are memory-mapped Arrow stream files:
    `datasets` copies them table slice by table slice, never holding a split in memory."""
    import datasets

    splits = datasets.DatasetDict(
        {split: datasets.Dataset.from_file(str(path)) for split, path in split_arrow_files.items()}
    )
    # The export shows its own progress bar; `datasets`' per-shard bars would be noise.
    bars_were_on = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        splits.save_to_disk(str(folder), max_shard_size=HF_SHARD_SIZE)
    finally:
        if bars_were_on:
            datasets.enable_progress_bars()


def check_replaceable(out: Path) -> None:
    if not out.exists():
        return
    if not out.is_dir():
        raise ExportTargetError(f"{out} is a file; an export is a folder")
    card = out / "README.md"
    is_previous_export = card.is_file() and EXPORT_MARKER in card.read_text(encoding="utf-8", errors="replace")
    if not is_previous_export and any(out.iterdir()):
        raise ExportTargetError(
            f"{out} is a folder that holds something other than a previous export; "
            "refusing to replace it (pick a new or empty folder)"
        )


def staging_folder(out: Path, purpose: str) -> Path:
    """A fresh folder beside OUT (same file system, so the final rename is atomic)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=f".{out.name}.{purpose}-", dir=out.parent))
    folder.chmod(0o777 & ~_umask())  # mkdtemp makes it private; the export is an ordinary folder
    return folder


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def replace_folder(staging: Path, out: Path) -> None:
    """Move `staging` to `out`. With no previous export this is one atomic rename; with
    one, the old folder is renamed aside first, so `out` is missing only between two
    renames and is never a mixture of both."""
    check_replaceable(out)
    if not out.exists():
        staging.rename(out)
        return
    retired = out.with_name(f".{out.name}.replaced-{uuid.uuid4().hex[:8]}")
    out.rename(retired)
    try:
        staging.rename(out)
    except OSError:
        retired.rename(out)
        raise
    shutil.rmtree(retired, ignore_errors=True)
