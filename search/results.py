"""The search page's reads: one box for code (exact text, regular expression) and meaning,
filters, a sort and pages. Code search uses the code index (search/code_search.py); meaning uses
the embeddings (search/selectors.py), cut at MIN_SIMILARITY.

Auto mode: a single token with no spaces (`__shfl_xor_sync`, `float4`, `cp.async`) is code, so it
finds exactly the kernels whose code contains it; anything else (a description, pasted code) is
searched by meaning. When a token is in no kernel's code, meaning takes over and the page says so.
"""
import re
from dataclasses import dataclass, field

from django.core.paginator import EmptyPage, PageNotAnInteger, Paginator
from django.db.models import Case, F, When
from django.http import Http404

from kernels.models import Kernel

from . import selectors
from .code_query import CodePattern, InvalidPattern, exact_pattern, regex_pattern
from .code_search import exact_matches, regex_matches
from .embedding import looks_like_code
from .hits import HIT_FIELDS, KernelHit, hit_from_kernel

MODES = {"auto": "code for a single token, else meaning", "meaning": "by meaning (semantic)",
         "exact": "code containing the exact text", "regex": "code matching a regular expression"}
SORTS = {"relevance": "relevance", "speedup": "speedup (re-measured where there is one, else claimed)",
         "runtime": "runtime (re-measured where there is one, else claimed)", "task": "level and task"}
PAGE_SIZE = 20
# Semantic hits are shown when their cosine similarity is at least MIN_SIMILARITY and within
# MAX_GAP_FROM_BEST of the query's best hit: right answers score differently per query (0.55 for
# "softmax", 0.3 for "convolution"), so a floor alone drops whole queries or lets noise in.
# Measured with 11 labelled queries on the shared sample and the demo archive (116 kernels,
# bench/bench_search_cutoff.py, figures in bench/README.md): precision 0.83, recall 0.74 per
# query on average, against 0.69 precision for the top 20 without a cut-off.
MIN_SIMILARITY = 0.25
MAX_GAP_FROM_BEST = 0.20
# Semantic results looked at before the cut-off (kernels above it rarely number more).
MAX_MEANING_HITS = 200
_TOKEN = re.compile(r"^\S{3,}$")
_QUERY_WORD = re.compile(r"[A-Za-z_]\w{2,}")
_STOP_WORDS = {"the", "and", "with", "for", "using", "kernel", "kernels", "that", "from", "into"}


class SearchMode:
    AUTO, MEANING, EXACT, REGEX = "auto", "meaning", "exact", "regex"


@dataclass
class SearchPage:
    mode: str  # the mode that ran (auto resolves to exact or meaning)
    hits: list[KernelHit]
    count: int
    page: object  # django.core.paginator.Page over the result ids
    state: str = selectors.IndexState.READY
    message: str = ""  # the index is rebuilding
    notices: list[str] = field(default_factory=list)  # what the reader should know about these results


def resolve_mode(query: str, mode: str) -> str:
    if mode != SearchMode.AUTO:
        return mode
    if _TOKEN.match(query) and not looks_like_code(query):
        return SearchMode.EXACT
    return SearchMode.MEANING


def search_page(*, query: str, mode: str = SearchMode.AUTO, level: int | None = None, correct_only: bool = False,
                technique: str | None = None, sort: str = "relevance", page: int = 1,
                page_size: int = PAGE_SIZE) -> SearchPage:
    """One page of results. Raises InvalidPattern for a code search that cannot run and Http404
    for a page past the last."""
    query = query.strip()
    ran = resolve_mode(query, mode)
    kernels = selectors.filter_kernels(Kernel.objects.all(), level=level, correct_only=correct_only,
                                       technique=technique)
    notices = []
    if ran in (SearchMode.EXACT, SearchMode.REGEX):
        pattern = exact_pattern(query) if ran == SearchMode.EXACT else regex_pattern(query)
        if ran == SearchMode.EXACT:
            found = exact_matches(pattern, kernels)
            if mode == SearchMode.AUTO and not found.exists():
                notices.append(f"No kernel's code contains “{query}”: kernels similar by meaning instead.")
                return _meaning_page(query, level, correct_only, technique, sort, page, page_size, notices)
            return _exact_page(pattern, found, sort, page, page_size, notices)
        matched = regex_matches(pattern, kernels)
        if matched.notice:
            notices.append(matched.notice)
        return _ids_page(ran, pattern, matched.counts, sort, page, page_size, notices)
    return _meaning_page(query, level, correct_only, technique, sort, page, page_size, notices)


# Best speedup and runtime as the leaderboard reads them: re-measured for verified kernels, else
# claimed for kernels marked correct; nothing for the rest (the archive writes 0 for them).
_BEST_SPEEDUP = Case(When(verified=True, then=F("remeasured_speedup_eager")),
                     When(claimed_correct=True, then=F("claimed_speedup_native")), default=None)
_BEST_RUNTIME = Case(When(verified=True, then=F("remeasured_runtime_ms")),
                     When(claimed_correct=True, then=F("claimed_runtime_ms")), default=None)
_SQL_ORDER = {
    "relevance": (F("code_matches").desc(), "id"),
    "speedup": (F("best_speedup").desc(nulls_last=True), "id"),
    "runtime": (F("best_runtime").asc(nulls_last=True), "id"),
    "task": ("task__level", "task__task_number", F("best_speedup").desc(nulls_last=True), "id"),
}


def _exact_page(pattern: CodePattern, found, sort, page, page_size, notices) -> SearchPage:
    ordered = found.annotate(best_speedup=_BEST_SPEEDUP, best_runtime=_BEST_RUNTIME).order_by(*_SQL_ORDER[sort])
    current = _page_of(ordered.values_list("id", flat=True), page, page_size)
    return SearchPage(mode=SearchMode.EXACT, hits=_hits(list(current), pattern=pattern), count=current.paginator.count,
                      page=current, notices=notices)


def _ids_page(mode, pattern, scores: dict[int, float], sort, page, page_size, notices) -> SearchPage:
    """Results known as {kernel id: relevance}: sorted here (they are at most a few thousand)."""
    rows = {row[0]: row for row in Kernel.objects.filter(id__in=list(scores)).annotate(
        best_speedup=_BEST_SPEEDUP, best_runtime=_BEST_RUNTIME).values_list(
        "id", "best_speedup", "best_runtime", "task__level", "task__task_number")}
    ids = [kernel_id for kernel_id in scores if kernel_id in rows]
    ids.sort(key=_python_order(sort, scores, rows))
    current = _page_of(ids, page, page_size)
    similarity = scores if mode == SearchMode.MEANING else None
    return SearchPage(mode=mode, hits=_hits(list(current), pattern=pattern, similarity=similarity),
                      count=current.paginator.count, page=current, notices=notices)


def _python_order(sort, scores, rows):
    def missing_last(value, descending):
        return (value is None, -(value or 0) if descending else (value or 0))

    if sort == "speedup":
        return lambda i: (*missing_last(rows[i][1], True), i)
    if sort == "runtime":
        return lambda i: (*missing_last(rows[i][2], False), i)
    if sort == "task":
        return lambda i: (rows[i][3], rows[i][4], *missing_last(rows[i][1], True), i)
    return lambda i: (-scores[i], i)


def _meaning_page(query, level, correct_only, technique, sort, page, page_size, notices) -> SearchPage:
    results = selectors.search_kernels(query=query, level=level, correct_only=correct_only, technique=technique,
                                       limit=MAX_MEANING_HITS)
    if results.state != selectors.IndexState.READY:
        empty = _page_of([], 1, page_size)
        return SearchPage(mode=SearchMode.MEANING, hits=[], count=0, page=empty, state=results.state,
                          message=results.message, notices=notices)
    kept = above_cutoff(results.hits, pasted_code=looks_like_code(query))
    if len(kept) < len(results.hits):
        notices.append(f"Less similar kernels are not shown: a hit needs a similarity of at least {MIN_SIMILARITY:.2f} "
                       f"and within {MAX_GAP_FROM_BEST:.2f} of the best hit (a cut-off measured on labelled queries).")
    scores = {hit.kernel_id: hit.similarity for hit in kept}
    folded = {hit.kernel_id: hit.duplicates_folded for hit in kept}
    found = _ids_page(SearchMode.MEANING, _words_pattern(query), scores, sort, page, page_size, notices)
    for hit in found.hits:
        hit.duplicates_folded = folded.get(hit.kernel_id, 0)
    return found


def above_cutoff(hits: list[KernelHit], *, pasted_code: bool = False) -> list[KernelHit]:
    """The hits (best first) that pass the cut-off. Pasted code pins its exact copies at 1.0, so
    only the floor applies to it."""
    if not hits:
        return []
    floor = MIN_SIMILARITY if pasted_code else max(MIN_SIMILARITY, hits[0].similarity - MAX_GAP_FROM_BEST)
    return [hit for hit in hits if hit.similarity >= floor]


def _words_pattern(query: str) -> CodePattern | None:
    """For snippets of semantic hits: lines holding a word of the query (not of pasted code)."""
    if looks_like_code(query):
        return None
    words = sorted({w for w in _QUERY_WORD.findall(query) if w.lower() not in _STOP_WORDS}, key=len, reverse=True)
    if not words:
        return None
    try:
        return regex_pattern("(?i)(?:" + "|".join(re.escape(w) for w in words[:8]) + ")")
    except InvalidPattern:
        return None


def _page_of(object_list, number, page_size):
    paginator = Paginator(object_list, page_size)
    try:
        return paginator.page(number)
    except (EmptyPage, PageNotAnInteger):
        raise Http404(f"Page {number} does not exist: these results have {paginator.num_pages} "
                      f"page{'s' if paginator.num_pages != 1 else ''}.") from None


def _hits(ids: list[int], *, pattern: CodePattern | None, similarity: dict[int, float] | None = None):
    """KernelHits of a page's ids, in that order, with snippets of their matching lines."""
    fields = (*HIT_FIELDS, "code") if pattern is not None else HIT_FIELDS
    kernels = Kernel.objects.filter(id__in=ids).select_related("task").only(*fields).in_bulk()
    hits = []
    for kernel_id in ids:
        kernel = kernels.get(kernel_id)
        if kernel is None:
            continue
        hit = hit_from_kernel(kernel, similarity=similarity.get(kernel_id) if similarity else None)
        if pattern is not None:
            hit.snippets, hit.matched_lines = pattern.snippets(kernel.code)
        hits.append(hit)
    return hits
