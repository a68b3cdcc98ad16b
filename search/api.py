"""JSON API of search, related kernels and the map (mounted under /api/)."""
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.decorators import api_view, throttle_classes
from rest_framework.response import Response

from archive_site.throttles import SEARCH_THROTTLES
from kernels.models import Kernel

from . import selectors
from .forms import MapForm, SearchForm


@extend_schema(
    parameters=[OpenApiParameter("q", str, description="free text or pasted code"),
                OpenApiParameter("level", int), OpenApiParameter("correct", bool),
                OpenApiParameter("technique", str), OpenApiParameter("limit", int)],
    responses={200: dict},
)
@api_view(["GET"])
@throttle_classes(SEARCH_THROTTLES)
def search(request):
    form = SearchForm(request.GET)
    if not form.is_valid():
        return Response({"errors": form.errors}, status=400)
    results = selectors.search_kernels(**form.search_arguments())
    return Response({"state": results.state, "message": results.message,
                     "results": [hit.as_dict() for hit in results.hits]})


@extend_schema(parameters=[OpenApiParameter("k", int)], responses={200: dict})
@api_view(["GET"])
def related(request, kernel_id: int):
    get_object_or_404(Kernel.objects.only("id"), pk=kernel_id)
    try:
        k = min(max(int(request.GET.get("k", 10)), 1), 50)
    except ValueError:
        return Response({"errors": {"k": ["an integer from 1 to 50"]}}, status=400)
    hits = selectors.related_kernels(kernel_id, k=k)
    return Response({"kernel": kernel_id, "related": [hit.as_dict() for hit in hits]})


@extend_schema(parameters=[OpenApiParameter("highlight", int)], responses={200: dict})
@api_view(["GET"])
def map_data(request):
    form = MapForm(request.GET)
    if not form.is_valid():
        return Response({"errors": form.errors}, status=400)
    highlight = form.cleaned_data["highlight"]
    return HttpResponse(selectors.map_points_json(highlight_ids=[highlight] if highlight else []),
                        content_type="application/json")
