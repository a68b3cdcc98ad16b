"""Writes of search data: embeddings in the database, the index file, map coordinates, and the
jobs that keep them current. Reads are in selectors.py."""
import logging
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from kernels.models import Kernel
from kernels.techniques import decode_tags

from . import storage
from .embedding import MODEL_NAME, embed_texts, kernel_text, text_sha256, vector_to_bytes, vectors_from_bytes
from .index import IndexUnavailable, add_to_index_file, build_index_file
from .umap_layout import umap_coordinates
from .models import KernelEmbedding, MapPoint

logger = logging.getLogger(__name__)
CHUNK = 2000


@dataclass
class EmbeddingSummary:
    kernels: int = 0
    embedded: int = 0
    unchanged: int = 0


def _kernel_chunks(kernel_ids=None):
    kernels = Kernel.objects.order_by("id").select_related("task").only(
        "id", "name", "code", "technique_tags", "task__op_name"
    )
    if kernel_ids is not None:
        wanted = sorted(set(kernel_ids))
        for start in range(0, len(wanted), CHUNK):
            yield list(kernels.filter(id__in=wanted[start:start + CHUNK]))
        return
    last_id = 0
    while True:  # keyset pagination: constant memory on any archive size
        chunk = list(kernels.filter(id__gt=last_id)[:CHUNK])
        if not chunk:
            return
        yield chunk
        last_id = chunk[-1].id


def kernel_embeddings_update(*, kernel_ids=None, progress=None) -> EmbeddingSummary:
    """Embed the kernels (all, or these ids) whose text or model changed since last time."""
    summary = EmbeddingSummary()
    for chunk in _kernel_chunks(kernel_ids):
        stored = dict(
            KernelEmbedding.objects.filter(kernel_id__in=[k.id for k in chunk], model_name=MODEL_NAME)
            .values_list("kernel_id", "text_sha256")
        )
        stale, texts = [], []
        for kernel in chunk:
            text = kernel_text(kernel.task.op_name, kernel.name, decode_tags(kernel.technique_tags), kernel.code)
            sha = text_sha256(text)
            if stored.get(kernel.id) != sha:
                stale.append((kernel.id, sha))
                texts.append(text)
        summary.kernels += len(chunk)
        summary.unchanged += len(chunk) - len(stale)
        if stale:
            vectors = embed_texts(texts)
            KernelEmbedding.objects.bulk_create(
                [
                    KernelEmbedding(kernel_id=kernel_id, vector=vector_to_bytes(vector), model_name=MODEL_NAME,
                                    text_sha256=sha, updated_at=timezone.now())
                    for (kernel_id, sha), vector in zip(stale, vectors)
                ],
                update_conflicts=True, unique_fields=["kernel"],
                update_fields=["vector", "model_name", "text_sha256", "updated_at"],
            )
            summary.embedded += len(stale)
        if progress:
            progress(len(chunk))
    return summary


def stored_embeddings(kernel_ids=None, progress=None):
    """(ids, vectors) of the stored embeddings of the current model, in kernel id order."""
    rows = KernelEmbedding.objects.filter(model_name=MODEL_NAME).order_by("kernel_id")
    if kernel_ids is not None:
        rows = rows.filter(kernel_id__in=list(kernel_ids))
    ids, blobs = [], []
    for kernel_id, blob in rows.values_list("kernel_id", "vector").iterator(chunk_size=CHUNK):
        ids.append(kernel_id)
        blobs.append(blob)
        if progress and len(ids) % CHUNK == 0:
            progress(CHUNK)
    if progress:
        progress(len(ids) % CHUNK)
    return ids, vectors_from_bytes(blobs)


def search_index_rebuild(*, embed: bool = True, embed_progress=None, load_progress=None) -> int:
    """Bring embeddings up to date (unless embed=False), then write a fresh index file from
    every stored embedding and swap it in. Returns the number of vectors indexed."""
    if embed:
        kernel_embeddings_update(progress=embed_progress)
    ids, vectors = stored_embeddings(progress=load_progress)
    size = build_index_file(storage.index_path(), ids, vectors)
    storage.clear_rebuild_request()
    logger.info("search index rebuilt with %d kernels", size)
    return size


def search_index_add(*, kernel_ids) -> int:
    """Embed new kernels and add them to the index; rebuild it whole if there is none."""
    kernel_ids = list(kernel_ids)
    kernel_embeddings_update(kernel_ids=kernel_ids)
    ids, vectors = stored_embeddings(kernel_ids)
    try:
        return add_to_index_file(storage.index_path(), ids, vectors)
    except IndexUnavailable as missing:
        logger.warning("%s: rebuilding the whole index", missing)
        return search_index_rebuild(embed=False)


def map_build(*, load_progress=None, verbose: bool = False) -> int:
    """UMAP over every stored embedding; replaces all map points. Returns how many."""
    ids, vectors = stored_embeddings(progress=load_progress)
    coordinates = umap_coordinates(vectors, verbose=verbose)
    built_at = timezone.now()
    with transaction.atomic():
        MapPoint.objects.all().delete()
        MapPoint.objects.bulk_create(
            [MapPoint(kernel_id=k, x=float(x), y=float(y), built_at=built_at) for k, (x, y) in zip(ids, coordinates)],
            batch_size=CHUNK,
        )
    return len(ids)


def queue_index_update(kernel_ids) -> None:
    """Embed and index these kernels in the worker once the importing transaction commits
    (a rolled-back import queues nothing). Call it inside the import's transaction."""
    kernel_ids = list(kernel_ids)
    if not kernel_ids:
        return
    from .tasks import index_new_kernels

    transaction.on_commit(lambda: index_new_kernels(kernel_ids))


def queue_index_rebuild() -> bool:
    """Queue one full rebuild (the index is missing or corrupt); False if one is pending."""
    if storage.rebuild_requested_recently():
        return False
    storage.mark_rebuild_requested()
    from .tasks import rebuild_index

    rebuild_index()
    return True
