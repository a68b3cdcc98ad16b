"""Reading an archive by its HuggingFace hub id (SakanaAI/AI-CUDA-Engineer-Archive) with
`datasets.load_dataset`, when the machine can reach the hub or holds the dataset in its cache.
Offline, a clear error says so and what to do instead; nothing is written."""
import os
import re

_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.\-]{0,95}$")
_FILE_SUFFIXES = (".jsonl", ".json", ".ndjson", ".parquet", ".csv")


class HubUnavailable(ValueError):
    """The dataset could not be loaded from the hub (offline, unknown id, no access)."""


def looks_like_hub_id(text: str) -> bool:
    return bool(_HUB_ID.match(text)) and not text.lower().endswith(_FILE_SUFFIXES)


def load_hub_dataset(hub_id: str):
    """The dataset's splits, sorted by name: [(split, Dataset)]."""
    from datasets import Dataset, DatasetDict, load_dataset

    try:
        loaded = load_dataset(hub_id)
    except Exception as exc:  # datasets raises many kinds: ConnectionError, FileNotFoundError, HfHubHTTPError...
        offline = " HF_HUB_OFFLINE is set: this machine works offline." if os.environ.get("HF_HUB_OFFLINE") else ""
        raise HubUnavailable(
            f"{hub_id}: cannot load this dataset from the HuggingFace hub ({type(exc).__name__}: "
            f"{str(exc).strip()[:300]}).{offline} Import it from a copy instead: on a machine with a network, "
            f"datasets.load_dataset({hub_id!r}).save_to_disk(FOLDER), then import_archive FOLDER."
        ) from None
    if isinstance(loaded, DatasetDict):
        return sorted(loaded.items())
    assert isinstance(loaded, Dataset)
    return [("train", loaded)]
