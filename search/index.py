"""The FAISS index over kernel embeddings, as a file. No ORM: callers pass ids and vectors.

Ids are Kernel primary keys; vectors are unit length, so inner product is cosine similarity.
Up to FLAT_LIMIT vectors the index is exact (IndexIDMap2 over IndexFlatIP): at 30,000 kernels a
query scans 46 MB in a few milliseconds. Beyond that an IVF index (inverted lists over k-means
cells, IVF_NPROBE cells visited per query) keeps queries under the latency goal at a million
vectors; bench/bench_search.py measures both, with IVF's recall against exact search.

Writers build into a temporary file beside the index and os.replace() it into place, so a
reader either sees the old file or the new one, never a torn one, and a query during a rebuild
is answered from the old index. Writers serialise on a lock file. Readers reload when the
file's identity (inode, mtime, size) changes, which is how a web process sees a rebuild or an
incremental add made by the worker.
"""
import fcntl
import logging
import math
import os
import threading
from contextlib import contextmanager
from pathlib import Path

import numpy as np

# faiss logs at INFO which CPU-specific build it picked (DD dispatch); not news for operators.
logging.getLogger("faiss.loader").setLevel(logging.WARNING)
import faiss  # noqa: E402

FLAT_LIMIT = 200_000
IVF_NPROBE = 24
IVF_TRAINING_SAMPLE = 100_000


class IndexUnavailable(Exception):
    """The index file is missing or unreadable; the caller should say so and queue a rebuild."""


def _as_ids(ids) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(ids, dtype=np.int64))


def _as_vectors(vectors) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(vectors, dtype=np.float32))


def new_index(dim: int, expected_size: int, training_vectors: np.ndarray | None = None) -> faiss.Index:
    """An empty index fit for `expected_size` vectors: exact below FLAT_LIMIT, IVF above it."""
    if expected_size <= FLAT_LIMIT:
        return faiss.IndexIDMap2(faiss.IndexFlatIP(dim))
    # ~4*sqrt(n) cells is FAISS's usual advice; visiting IVF_NPROBE of them keeps recall@10 high.
    nlist = int(4 * math.sqrt(expected_size))
    quantizer = faiss.IndexFlatIP(dim)
    index = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_INNER_PRODUCT)
    sample = training_vectors
    if sample is None or len(sample) < nlist:
        raise ValueError(f"an IVF index of {nlist} cells needs at least {nlist} training vectors")
    if len(sample) > IVF_TRAINING_SAMPLE:
        pick = np.random.default_rng(0).choice(len(sample), IVF_TRAINING_SAMPLE, replace=False)
        sample = sample[np.sort(pick)]
    index.train(_as_vectors(sample))
    index.nprobe = IVF_NPROBE
    return index


@contextmanager
def writer_lock(path: Path):
    """One writer at a time (the build_index command and the worker's incremental adds)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{path}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _write_atomically(index: faiss.Index, path: Path) -> None:
    temporary = path.with_name(f"{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    faiss.write_index(index, str(temporary))
    with open(temporary, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def build_index_file(path: Path, ids, vectors) -> int:
    """Write a fresh index of exactly these vectors to `path`, atomically. Returns its size."""
    ids, vectors = _as_ids(ids), _as_vectors(vectors)
    dim = vectors.shape[1] if vectors.ndim == 2 and len(vectors) else 384
    index = new_index(dim, len(ids), training_vectors=vectors)
    if len(ids):
        index.add_with_ids(vectors, ids)
    with writer_lock(path):
        _write_atomically(index, path)
    return index.ntotal


def _read(path: Path) -> faiss.Index:
    if not path.exists():
        raise IndexUnavailable(f"no index file at {path}")
    try:
        index = faiss.read_index(str(path))
    except (RuntimeError, MemoryError) as error:
        # RuntimeError: FAISS's read errors (truncated file, bad magic). MemoryError: std::bad_alloc
        # from a garbled size field asking for an impossible allocation.
        raise IndexUnavailable(f"the index file {path} is unreadable: {error or type(error).__name__}") from None
    ivf = faiss.try_extract_index_ivf(index)
    if ivf is not None:
        ivf.nprobe = IVF_NPROBE
    return index


def add_to_index_file(path: Path, ids, vectors) -> int:
    """Add (or replace) these vectors in the index at `path`, atomically. Returns its new size.

    Raises IndexUnavailable when there is no readable index to extend: a full rebuild is due."""
    ids, vectors = _as_ids(ids), _as_vectors(vectors)
    with writer_lock(path):
        index = _read(path)
        if len(ids) and vectors.shape[1] != index.d:
            raise IndexUnavailable(f"the index at {path} holds {index.d}-d vectors, not {vectors.shape[1]}-d")
        if len(ids):
            index.remove_ids(ids)  # a re-embedded kernel replaces its old vector
            index.add_with_ids(vectors, ids)
        _write_atomically(index, path)
        return index.ntotal


def _file_identity(path: Path):
    stat = path.stat()
    return stat.st_ino, stat.st_mtime_ns, stat.st_size


class IndexReader:
    """A loaded index shared by a process's threads, reloaded when the file is replaced."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._index = None
        self._identity = None

    def index(self) -> faiss.Index:
        try:
            identity = _file_identity(self.path)
        except FileNotFoundError:
            raise IndexUnavailable(f"no index file at {self.path}") from None
        with self._lock:
            if identity != self._identity:
                # A corrupt file raises here and the identity stays stale, so the next call retries.
                self._index = _read(self.path)
                self._identity = identity
            return self._index

    def search(self, vectors, k: int) -> list[list[tuple[int, float]]]:
        """Per query vector, up to k (kernel id, cosine similarity) pairs, best first."""
        index = self.index()
        queries = _as_vectors(vectors)
        if queries.shape[-1] != index.d:  # an index of another model's vectors answers nonsense
            raise IndexUnavailable(f"the index at {self.path} holds {index.d}-d vectors, "
                                   f"the queries are {queries.shape[-1]}-d")
        queries = queries.reshape(-1, index.d)
        k = min(k, index.ntotal)
        if k <= 0:
            return [[] for _ in range(len(queries))]
        scores, ids = index.search(queries, k)
        return [
            [(int(i), float(s)) for i, s in zip(id_row, score_row) if i != -1]
            for id_row, score_row in zip(ids, scores)
        ]

    def size(self) -> int:
        return self.index().ntotal
