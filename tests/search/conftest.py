"""Fixtures of the search tests: the real model, loaded once, and the archive's kernels
embedded once per session (later tests reuse the vectors by text)."""
import numpy as np
import pytest

from kernels.services import archive_import_file
from search import embedding, services
from search.models import KernelEmbedding

_vectors_by_text: dict[str, np.ndarray] = {}


def cached_embed_texts(texts, **kwargs):
    missing = [text for text in dict.fromkeys(texts) if text not in _vectors_by_text]
    if missing:
        for text, vector in zip(missing, embedding.embed_texts(missing, **kwargs)):
            _vectors_by_text[text] = vector
    return np.vstack([_vectors_by_text[text] for text in texts]) if texts else embedding.embed_texts([])


@pytest.fixture(scope="session")
def model():
    return embedding.load_model()


@pytest.fixture
def embed_once(monkeypatch, model):
    """The real model, but each distinct text is embedded once per test session."""
    monkeypatch.setattr(services, "embed_texts", cached_embed_texts)


@pytest.fixture
def huey_immediate(monkeypatch):
    from huey.contrib.djhuey import HUEY

    monkeypatch.setattr(HUEY, "immediate", True)
    yield HUEY
    # The property setter swapped in in-memory storage; the monkeypatch puts the flag back.


@pytest.fixture
def imported_archive(db, archive_path):
    return archive_import_file(path=archive_path, hardware="NVIDIA H100")


@pytest.fixture
def indexed_archive(imported_archive, embed_once, archive_rows):
    """The test archive imported, embedded and indexed, the way `build_index` does it."""
    size = services.search_index_rebuild()
    assert size == KernelEmbedding.objects.count() == len(archive_rows)
    return imported_archive


@pytest.fixture
def indexed_shared_sample(db, sample_path, embed_once):
    """The shared sample's 102 kernels (3 tasks, 34 each), imported and indexed."""
    archive_import_file(path=sample_path, hardware="NVIDIA H100")
    assert services.search_index_rebuild() == 102
