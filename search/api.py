"""JSON API of search, related kernels and the map (mounted under /api/)."""
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.decorators import api_view, renderer_classes, throttle_classes
from rest_framework.response import Response

from kernels.models import Kernel
from kernels.selectors import published
from web.api_errors import ApiError, form_errors
from web.renderers import EscapedJSONRenderer
from web.throttles import SEARCH_THROTTLES

from . import selectors
from .code_query import InvalidPattern
from .forms import MapForm, SearchForm
from .results import MIN_SIMILARITY, MODES, PAGE_SIZE, SORTS, search_page


@extend_schema(
    parameters=[OpenApiParameter("q", str, description="free text, pasted code, an identifier or a regular expression"),
                OpenApiParameter("mode", str, enum=list(MODES), description="; ".join(f"{k}: {v}" for k, v in MODES.items())),
                OpenApiParameter("level", int, description="only kernels of this KernelBench level"),
                OpenApiParameter("correct", bool, description="only kernels their archive marks correct"),
                OpenApiParameter("technique", str, description="only kernels with this technique tag"),
                OpenApiParameter("sort", str, enum=list(SORTS), description="order of the results"),
                OpenApiParameter("page", int, description="page number (404 past the last)"),
                OpenApiParameter("limit", int, description=f"results per page (default {PAGE_SIZE}, at most 100)")],
    responses={200: dict},
)
@api_view(["GET"])
@renderer_classes([EscapedJSONRenderer])  # archive text (names, code snippets) never reads as markup
@throttle_classes(SEARCH_THROTTLES)
def search(request):
    """Search kernels by meaning (embeddings), by code (identifiers, text, regular expressions) or
    both; a page of hits with the snippet that matched. Throttled per client (per user when signed in)."""
    form = SearchForm(request.GET)
    if not form.is_valid():
        raise ApiError("invalid search parameters", errors=form_errors(form.errors))
    try:
        found = search_page(**form.search_arguments())
    except InvalidPattern as problem:
        raise ApiError(str(problem), code="invalid_pattern", errors=[{"field": "q", "message": str(problem)}]) from None
    return Response({"state": found.state, "message": found.message, "mode": found.mode, "count": found.count,
                     "page": found.page.number, "pages": found.page.paginator.num_pages, "notices": found.notices,
                     "min_similarity": MIN_SIMILARITY if found.mode == "meaning" else None,
                     "results": [hit.as_dict() for hit in found.hits]})


@extend_schema(parameters=[OpenApiParameter("k", int, description="how many related kernels (1 to 50, default 10)")],
               responses={200: dict})
@api_view(["GET"])
@renderer_classes([EscapedJSONRenderer])
def related(request, kernel_id: int):
    """The kernels nearest to this one by embedding (cosine similarity), exact copies folded;
    empty until the index has embedded it."""
    get_object_or_404(published(Kernel.objects.only("id")), pk=kernel_id)  # an unpublished submission: 404
    try:
        k = min(max(int(request.GET.get("k", 10)), 1), 50)
    except ValueError:
        raise ApiError("k: an integer from 1 to 50", errors=[{"field": "k", "message": "an integer from 1 to 50"}]) from None
    hits = selectors.related_kernels(kernel_id, k=k)
    return Response({"kernel": kernel_id, "related": [hit.as_dict() for hit in hits]})


@extend_schema(parameters=[OpenApiParameter("highlight", int, description="a kernel id to mark on the map")],
               responses={200: dict})
@api_view(["GET"])
def map_data(request):
    """Every kernel's point on the map (2-D UMAP of the embeddings) with its task, name and state."""
    form = MapForm(request.GET)
    if not form.is_valid():
        raise ApiError("invalid map parameters", errors=form_errors(form.errors))
    highlight = form.cleaned_data["highlight"]
    return HttpResponse(selectors.map_points_json(highlight_ids=[highlight] if highlight else []),
                        content_type="application/json")
