"""The index file: atomic rebuilds, incremental adds, reloads, IVF for large collections."""
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from search import index as search_index
from search.index import IndexReader, IndexUnavailable, add_to_index_file, build_index_file


def unit_vectors(n, seed=0, dim=384):
    vectors = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_build_search_and_incremental_add(tmp_path):
    path = tmp_path / "kernels.faiss"
    vectors = unit_vectors(50)
    assert build_index_file(path, range(100, 150), vectors) == 50
    reader = IndexReader(path)
    best_id, similarity = reader.search(vectors[7], 3)[0][0]
    assert best_id == 107 and similarity == pytest.approx(1.0, abs=1e-5)

    extra = unit_vectors(5, seed=1)
    assert add_to_index_file(path, range(500, 505), extra) == 55
    assert reader.search(extra[2], 1)[0][0][0] == 502  # the reader saw the new file
    # Re-adding an id replaces its vector instead of duplicating it.
    assert add_to_index_file(path, [500], vectors[:1]) == 55
    assert [i for i, _ in reader.search(vectors[0], 2)[0]] in ([100, 500], [500, 100])
    assert not [p for p in os.listdir(tmp_path) if ".tmp-" in p]


def test_index_survives_a_restart(tmp_path):
    path = tmp_path / "kernels.faiss"
    vectors = unit_vectors(20)
    build_index_file(path, range(1, 21), vectors)
    np.save(tmp_path / "query.npy", vectors[4:5])
    script = (
        "import sys, numpy as np; from search.index import IndexReader;"
        f"r = IndexReader({str(path)!r}); print(r.size(), r.search(np.load({str(tmp_path / 'query.npy')!r}), 1)[0][0][0])"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    assert out.stdout.split() == ["20", "5"]


def test_missing_or_corrupt_file_is_unavailable(tmp_path):
    path = tmp_path / "kernels.faiss"
    with pytest.raises(IndexUnavailable):
        IndexReader(path).search(unit_vectors(1), 3)
    with pytest.raises(IndexUnavailable):
        add_to_index_file(path, [1], unit_vectors(1))
    path.write_bytes(b"not a faiss index")
    with pytest.raises(IndexUnavailable):
        IndexReader(path).size()


def test_queries_are_answered_while_the_index_is_rebuilt(tmp_path):
    path = tmp_path / "kernels.faiss"
    vectors = unit_vectors(3000)
    build_index_file(path, range(1, 3001), vectors)
    reader = IndexReader(path)
    stop, rebuilds, errors = threading.Event(), [], []

    def rebuild_repeatedly():
        try:
            while not stop.is_set():
                build_index_file(path, range(1, 3001), vectors)
                rebuilds.append(1)
        except Exception as error:  # surfaced below: a rebuild must never break
            errors.append(error)

    thread = threading.Thread(target=rebuild_repeatedly)
    thread.start()
    # Queries go on until two rebuilds have swapped the file under them (however slow the host),
    # so every pass after the first overlaps a rebuild.
    deadline, passes = time.monotonic() + 120, 0
    try:
        while (len(rebuilds) < 2 or passes < 2) and time.monotonic() < deadline and not errors:
            answers = [reader.search(vectors[i], 5)[0] for i in range(0, 3000, 10)]
            assert all(answer[0][0] == 1 + i * 10 for i, answer in enumerate(answers))
            passes += 1
    finally:
        stop.set()
        thread.join()
    assert not errors and len(rebuilds) >= 2


def test_large_collections_get_an_ivf_index(tmp_path, monkeypatch):
    monkeypatch.setattr(search_index, "FLAT_LIMIT", 1000)
    path = tmp_path / "kernels.faiss"
    vectors = unit_vectors(4000)
    build_index_file(path, range(1, 4001), vectors)
    reader = IndexReader(path)
    assert "IVF" in type(reader.index()).__name__
    hits = reader.search(vectors[:50], 1)
    assert sum(hit[0][0] == i + 1 for i, hit in enumerate(hits)) >= 48
