"""Where the derived search files live (under settings.DATA_DIR) and the per-process index reader."""
import threading
import time
from pathlib import Path

from django.conf import settings

from .index import IndexReader

# A missing index triggers one queued rebuild, not one per search request.
REBUILD_REQUEST_TTL_S = 15 * 60

_readers: dict[Path, IndexReader] = {}
_readers_lock = threading.Lock()


def search_dir() -> Path:
    path = Path(settings.DATA_DIR) / "search"
    path.mkdir(parents=True, exist_ok=True)
    return path


def index_path() -> Path:
    return search_dir() / "kernels.faiss"


def index_reader() -> IndexReader:
    path = index_path()
    with _readers_lock:
        reader = _readers.get(path)
        if reader is None:
            reader = _readers[path] = IndexReader(path)
        return reader


def _rebuild_marker() -> Path:
    return search_dir() / "rebuild-requested"


def rebuild_requested_recently() -> bool:
    try:
        return time.time() - _rebuild_marker().stat().st_mtime < REBUILD_REQUEST_TTL_S
    except FileNotFoundError:
        return False


def mark_rebuild_requested() -> None:
    _rebuild_marker().touch()


def clear_rebuild_request() -> None:
    _rebuild_marker().unlink(missing_ok=True)
