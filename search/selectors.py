"""Reads for search pages and the API: semantic search, related kernels, the map's points."""
import hashlib
import json
from dataclasses import dataclass

from django.core.cache import cache
from django.db.models import Count, Max, OuterRef, Subquery

from kernels.models import Kernel, Verification
from kernels.page_cache import archive_version, cache_is_shared
from kernels.selectors import of_published_kernels, published
from kernels.techniques import TECHNIQUES, decode_tags

from . import storage
from .embedding import MODEL_NAME, embed_texts, looks_like_code, query_text, vectors_from_bytes
from .hits import HIT_FIELDS, KernelHit, hit_from_kernel
from .index import IndexUnavailable
from .models import KernelEmbedding, MapPoint

# Filters are applied after the vector search, so it fetches more than it shows and widens the
# net until enough kernels pass them (or MAX_CANDIDATES were looked at).
MAX_CANDIDATES = 20_000


class IndexState:
    READY = "ready"
    REBUILDING = "rebuilding"


@dataclass
class SearchResults:
    hits: list[KernelHit]
    state: str
    message: str = ""


def technique_choices() -> list[tuple[str, str]]:
    return [(tag, label_) for tag, (label_, _) in TECHNIQUES.items()]


def filter_kernels(kernels, *, level=None, correct_only=False, technique=None):
    """`kernels` (a Kernel queryset) narrowed to the published ones (kernels.selectors.published:
    never a submission no trusted run has passed, though a full build_index embeds it) and by the
    search filters: task level, kernels marked correct only, a technique tag. Meaning search,
    related kernels and code search (search/results.py) share it."""
    kernels = published(kernels)
    if level:
        kernels = kernels.filter(task__level=level)
    if correct_only:
        kernels = kernels.filter(claimed_correct=True)
    if technique:
        kernels = kernels.filter(technique_tags__contains=f",{technique},")
    return kernels


def _kernels_for(ids, *, level=None, correct_only=False, technique=None) -> dict[int, Kernel]:
    kernels = Kernel.objects.filter(id__in=ids).select_related("task").only(*HIT_FIELDS)
    kernels = filter_kernels(kernels, level=level, correct_only=correct_only, technique=technique)
    return {kernel.id: kernel for kernel in kernels}


def _fold_duplicates(scored, kernels, limit, exclude_sha=None) -> list[KernelHit]:
    """Hits best first, one per distinct code: exact copies add to the kept hit's count."""
    hits: dict[str, KernelHit] = {}
    for kernel_id, similarity in scored:
        kernel = kernels.get(kernel_id)
        if kernel is None or kernel.code_sha256 == exclude_sha:
            continue
        kept = hits.get(kernel.code_sha256)
        if kept is not None:
            kept.duplicates_folded += 1
            continue
        if len(hits) == limit:
            continue  # still counting copies of the hits kept
        hits[kernel.code_sha256] = hit_from_kernel(kernel, similarity=similarity)
    return list(hits.values())


def _nearest(vector, limit, filters, exclude_sha=None, pinned=()) -> list[KernelHit]:
    """`pinned` ids (exact copies of pasted code) come first, with similarity 1."""
    reader = storage.index_reader()
    total = reader.size()
    fetch = min(total, max(limit * 5, 50))
    while True:
        scored = [(kernel_id, 1.0) for kernel_id in pinned]
        scored += [pair for pair in reader.search(vector, fetch)[0] if pair[0] not in pinned]
        kernels = _kernels_for([kernel_id for kernel_id, _ in scored], **filters)
        hits = _fold_duplicates(scored, kernels, limit, exclude_sha)
        if len(hits) >= limit or fetch >= min(total, MAX_CANDIDATES):
            return hits
        fetch = min(fetch * 4, total, MAX_CANDIDATES)


def _kernels_with_code(query: str) -> list[int]:
    """Kernels whose code is exactly the pasted text (as pasted, trimmed, or with Unix newlines):
    the embedding sees only the code's start, so an exact copy is found by its hash instead."""
    if not looks_like_code(query):
        return []
    variants = {query, query.strip(), query.replace("\r\n", "\n"), query.replace("\r\n", "\n").strip()}
    hashes = {hashlib.sha256(text.encode("utf-8")).hexdigest() for text in variants}
    return list(Kernel.objects.filter(code_sha256__in=hashes).order_by("id").values_list("id", flat=True)[:50])


def _rebuilding() -> SearchResults:
    from .services import queue_index_rebuild  # a read that finds the index gone asks for it back

    queue_index_rebuild()
    return SearchResults(hits=[], state=IndexState.REBUILDING,
                         message="The search index is being rebuilt; try again in a few minutes.")


def search_kernels(*, query: str, level: int | None = None, correct_only: bool = False,
                   technique: str | None = None, limit: int = 20) -> SearchResults:
    """Kernels nearest to free text or pasted code, best first, exact duplicates folded."""
    if not query.strip():
        return SearchResults(hits=[], state=IndexState.READY)
    vector = embed_texts([query_text(query)])
    try:
        hits = _nearest(vector, limit, {"level": level, "correct_only": correct_only, "technique": technique},
                        pinned=_kernels_with_code(query))
    except IndexUnavailable:
        return _rebuilding()
    return SearchResults(hits=hits, state=IndexState.READY)


def related_kernels(kernel_id: int, k: int = 10) -> list[KernelHit]:
    """The k kernels most similar to this one, exact copies of it and of each other folded.
    Empty when the kernel has no embedding yet or the index is unavailable."""
    row = KernelEmbedding.objects.filter(kernel_id=kernel_id, model_name=MODEL_NAME).values_list(
        "vector", "kernel__code_sha256").first()
    if row is None:
        return []
    blob, own_sha = row
    try:
        return _nearest(vectors_from_bytes([blob]), k, {}, exclude_sha=own_sha)
    except IndexUnavailable:
        return []


MAP_CACHE_SECONDS = 3600


def map_points_json(*, highlight_ids=()) -> bytes:
    """map_points as JSON bytes. With a shared cache (Redis), which every process's changes
    reach, the bytes are kept until the archive changes (an import or a verification: the
    archive version; a queued or running verification shows once it finishes) or the map is
    rebuilt (its points' newest build time and count). Kept encoded: 30,000 kernels make
    ~6 MB of JSON, whose encoding costs more than the query once the result is cached."""
    key = None
    if cache_is_shared():
        build = MapPoint.objects.aggregate(built=Max("built_at"), points=Count("kernel_id"))
        key = "map_points_json:%s:%s:%s" % (archive_version(), build["built"].isoformat() if build["built"] else "-",
                                            build["points"])
    body = cache.get(key) if key else None
    if body is None:
        data = map_points()
        del data["highlight"]
        body = json.dumps(data, allow_nan=False, separators=(",", ":")).encode()
        if key:
            cache.set(key, body, MAP_CACHE_SECONDS)
    # The highlight is the request's own: written in front of the cached members.
    return b'{"highlight":' + json.dumps([int(i) for i in highlight_ids]).encode() + b"," + body[1:]


def map_points(*, highlight_ids=()) -> dict:
    """Columns for the map (plotly takes arrays): one entry per kernel with a map point."""
    latest_status = Verification.objects.filter(kernel_id=OuterRef("kernel_id")).order_by(
        "-created_at", "-id").values("status")[:1]
    rows = (  # a full build_map places unpublished submissions too: left out here, until published
        of_published_kernels(MapPoint.objects.order_by("kernel_id"))
        .annotate(verification=Subquery(latest_status))
        .values_list("kernel_id", "x", "y", "kernel__name", "kernel__task__level", "kernel__task__task_number",
                     "kernel__task__op_name", "kernel__claimed_speedup_native", "kernel__claimed_correct",
                     "kernel__technique_tags", "verification", "built_at")
    )
    columns = {name: [] for name in ("id", "x", "y", "name", "level", "task", "op_name", "speedup", "correct",
                                     "techniques", "verification")}
    built_at = None
    for (kernel_id, x, y, name, level, task_number, op_name, speedup, correct, tags, verification,
         built) in rows.iterator(chunk_size=5000):
        columns["id"].append(kernel_id)
        columns["x"].append(round(x, 4))
        columns["y"].append(round(y, 4))
        columns["name"].append(name)
        columns["level"].append(level)
        columns["task"].append(f"L{level} T{task_number}")
        columns["op_name"].append(op_name)
        columns["speedup"].append(speedup)
        columns["correct"].append(correct)
        columns["techniques"].append(decode_tags(tags))
        columns["verification"].append(verification or "not verified")
        built_at = built_at or built
    return {
        "count": len(columns["id"]),
        "built_at": built_at.isoformat() if built_at else None,
        "techniques": dict(technique_choices()),
        "highlight": [int(i) for i in highlight_ids],
        "points": columns,
    }
