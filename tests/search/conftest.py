"""Fixtures of the search tests: the real model, loaded once, and the 102 sample kernels
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
def sample_archive(db, sample_path):
    return archive_import_file(path=sample_path, hardware="NVIDIA H100")


@pytest.fixture
def indexed_sample(sample_archive, embed_once):
    """The sample imported, embedded and indexed, the way `build_index` does it."""
    size = services.search_index_rebuild()
    assert size == KernelEmbedding.objects.count() == 102
    return sample_archive
