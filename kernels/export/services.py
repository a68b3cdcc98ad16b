"""An export as one call: every split of the filtered archive written in one format, the
dataset card beside it, swapped into place atomically; and the push to the hub."""
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from django.db.models import Count

from .card import CardFacts, dataset_card
from .rows import DEFAULT_BATCH_SIZE, archive_row_batches
from .schema import split_name
from .selectors import ExportFilters, export_levels, kernels_for_export
from .writers import check_replaceable, replace_folder, split_file_name, staging_folder, write_dataset_dict, \
    write_split_file

EXPORT_FORMATS = ("hf", "parquet", "jsonl", "csv")


@dataclass
class ExportSummary:
    out: Path
    file_format: str
    split_rows: dict[str, int] = field(default_factory=dict)

    @property
    def total_rows(self) -> int:
        return sum(self.split_rows.values())

    def lines(self) -> list[str]:
        splits = ", ".join(f"{split}: {rows}" for split, rows in self.split_rows.items())
        return [f"wrote {self.total_rows} kernels as {self.file_format} to {self.out}", f"splits: {splits}"]


class _RowCounter:
    """Counts rows as batches pass through, for the card's split sizes."""

    def __init__(self, batches):
        self.batches = batches
        self.rows = 0

    def __iter__(self) -> Iterator[list[dict]]:
        for rows in self.batches:
            self.rows += len(rows)
            yield rows


def dataset_export(
    *, out: Path, file_format: str = "hf", filters: ExportFilters = ExportFilters(), archive_compatible: bool = False,
    progress=None, batch_size: int = DEFAULT_BATCH_SIZE,
) -> ExportSummary:
    """Write the splits (level_1, level_2, level_3, ...) of the filtered archive to `out`.

    A previous export at `out` is replaced only once the new one is complete."""
    if file_format not in EXPORT_FORMATS:
        raise ValueError(f"unknown format {file_format!r}; one of {', '.join(EXPORT_FORMATS)}")
    out = Path(out).absolute()
    check_replaceable(out)  # refuse early, before minutes of work
    staging = staging_folder(out, "partial")
    scratch = staging_folder(out, "scratch") if file_format == "hf" else None
    summary = ExportSummary(out=out, file_format=file_format)
    try:
        arrow_files = {}
        for level in export_levels(filters):
            split = split_name(level)
            batches = _RowCounter(archive_row_batches(
                kernels_for_export(filters, level=level), archive_compatible=archive_compatible,
                batch_size=batch_size, progress=progress,
            ))
            if file_format == "hf":
                # Arrow stream files first, then `datasets` lays out its own folder from them.
                arrow_files[split] = scratch / split_file_name(split, "arrow")
                write_split_file(arrow_files[split], "arrow", batches, archive_compatible=archive_compatible)
            else:
                write_split_file(staging / split_file_name(split, file_format), file_format, batches,
                                 archive_compatible=archive_compatible)
            summary.split_rows[split] = batches.rows
        if file_format == "hf":
            write_dataset_dict(staging, arrow_files)
        card = CardFacts(file_format=file_format, split_rows=summary.split_rows, archive_compatible=archive_compatible,
                         filters=filters.describe(), source_archives=_source_archives(filters))
        (staging / "README.md").write_text(dataset_card(card), encoding="utf-8")
        replace_folder(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    return summary


def export_kernel_count(filters: ExportFilters) -> int:
    """Kernels an export will read (the verified filter may still drop flagged ones)."""
    return kernels_for_export(filters).count()


def _source_archives(filters: ExportFilters) -> dict[str, int]:
    counts = kernels_for_export(filters).order_by().values("source_archive").annotate(n=Count("id"))
    return {row["source_archive"]: row["n"] for row in counts.order_by("source_archive")}


class HubPushError(Exception):
    pass


def hub_token() -> str | None:
    """HF_TOKEN, else a token saved by `huggingface-cli login`."""
    from huggingface_hub import get_token

    return os.environ.get("HF_TOKEN") or get_token()


def push_export_to_hub(*, folder: Path, repo_id: str, token: str | None = None) -> str:
    """Upload an export folder to a dataset repository (created if missing); returns its URL."""
    import httpx2  # huggingface_hub's HTTP client: its transport errors are not OSErrors
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError

    token = token or hub_token()
    if not token:
        raise HubPushError("no HuggingFace token: set HF_TOKEN (a token with write access) or run `hf auth login`")
    api = HfApi(token=token)
    try:
        api.create_repo(repo_id, repo_type="dataset", exist_ok=True)
        api.upload_folder(folder_path=str(folder), repo_id=repo_id, repo_type="dataset",
                          commit_message="Export from the kernel archive")
    except (HfHubHTTPError, httpx2.HTTPError, OSError, ValueError) as exc:
        raise HubPushError(f"could not push {folder} to {repo_id}: {exc}") from exc
    return f"https://huggingface.co/datasets/{repo_id}"
