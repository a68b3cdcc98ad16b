import json
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED = REPO_ROOT.parent / "shared"
SAMPLE_ARCHIVE = SHARED / "data" / "sakana_archive_subset.jsonl"
H200_FIXTURES = SHARED / "fixtures" / "h200"


@pytest.fixture(scope="session")
def sample_path() -> Path:
    if not SAMPLE_ARCHIVE.exists():
        pytest.skip(f"the shared sample archive is not at {SAMPLE_ARCHIVE}")
    return SAMPLE_ARCHIVE


@pytest.fixture(scope="session")
def sample_rows(sample_path) -> list[dict]:
    return [json.loads(line) for line in sample_path.read_text().splitlines() if line.strip()]


@pytest.fixture(autouse=True)
def _data_dir(tmp_path, settings):
    # Derived files (index, map, media) of a test go to its own folder.
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir()
