"""2-D map coordinates of embeddings with UMAP. No ORM.

Cosine metric because the vectors are compared by cosine everywhere else. n_neighbors=15 keeps
local structure (kernels of one task and technique cluster); no random_state, because fixing it
makes UMAP run single-threaded, and the map is rebuilt as a whole anyway.
"""
import numpy as np

MIN_POINTS_FOR_UMAP = 5


def umap_coordinates(vectors: np.ndarray, *, n_neighbors: int = 15, min_dist: float = 0.1,
                     verbose: bool = False) -> np.ndarray:
    """(n, 2) float32 coordinates for n vectors; tiny collections get a plain PCA layout."""
    vectors = np.asarray(vectors, dtype=np.float32)
    n = len(vectors)
    if n == 0:
        return np.zeros((0, 2), dtype=np.float32)
    if n < MIN_POINTS_FOR_UMAP:
        return _pca_2d(vectors)
    import umap  # imported late: it compiles numba code and takes seconds to import

    reducer = umap.UMAP(
        n_components=2, n_neighbors=min(n_neighbors, n - 1), min_dist=min_dist, metric="cosine",
        low_memory=True, verbose=verbose,
        # Spectral initialisation fails on graphs with many disconnected parts (duplicates).
        init="spectral" if n > 50 else "random",
    )
    return np.asarray(reducer.fit_transform(vectors), dtype=np.float32)


def _pca_2d(vectors: np.ndarray) -> np.ndarray:
    centred = vectors - vectors.mean(axis=0)
    if len(vectors) < 2:
        return np.zeros((len(vectors), 2), dtype=np.float32)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    coords = centred @ vt[:2].T
    if coords.shape[1] < 2:
        coords = np.hstack([coords, np.zeros((len(coords), 2 - coords.shape[1]))])
    return coords.astype(np.float32)
