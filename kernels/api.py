"""JSON API (DRF): the same selectors and query validation as the pages.

Responses are JSON only, with <, > and & written as \\u escapes so archive text can never
be read as markup even by a client that sniffs content."""
from dataclasses import replace

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics
from rest_framework.exceptions import ParseError
from rest_framework.pagination import PageNumberPagination
from rest_framework.response import Response

from web.renderers import EscapedJSONRenderer

from . import selectors
from .leaderboard_query import MAX_PAGE_SIZE, SORTS, InvalidQuery, parse_leaderboard_query
from .leaderboard_rows import leaderboard_rows
from .models import Kernel, Verification
from .serializers import (
    KernelDetailSerializer,
    KernelListSerializer,
    LeaderboardRowSerializer,
    TaskDetailSerializer,
    TaskSerializer,
    VerificationSerializer,
)
from .techniques import TECHNIQUES


class Pagination(PageNumberPagination):
    page_size = 50
    invalid_page_message = "Page {page_number} does not exist ({message})."
    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE


def _param(name, type_, description, enum=None):
    return OpenApiParameter(name, type_, OpenApiParameter.QUERY, description=description, enum=enum)


KERNEL_FILTERS = [
    _param("level", OpenApiTypes.STR, "level number (1, 2, 3) or level_1, level_2, ..."),
    _param("correct_only", OpenApiTypes.BOOL, "only kernels the archive marks correct"),
    _param("verified_only", OpenApiTypes.BOOL, "only kernels with a passed verification and no blocking flag"),
    _param("hardware", OpenApiTypes.STR, "GPU the claims were measured on (exact)"),
    _param("op_name", OpenApiTypes.STR, "text in the task's op name (case-insensitive)"),
    _param("technique", OpenApiTypes.STR, "technique tag detected in the code", enum=list(TECHNIQUES)),
    _param("experiment", OpenApiTypes.STR, "experiment of the source archive (exact)"),
    _param("sort", OpenApiTypes.STR, "order; sort_by and the archive's column names are accepted too",
           enum=list(SORTS)),
]


class ApiView:
    renderer_classes = [EscapedJSONRenderer]
    pagination_class = Pagination

    def leaderboard_query(self, **overrides):
        try:
            query = parse_leaderboard_query(self.request.query_params)
        except InvalidQuery as problem:
            raise ParseError(str(problem)) from None
        return replace(query, **overrides)


@extend_schema(parameters=[_param("level", OpenApiTypes.INT, "only tasks of this level")])
class TaskList(ApiView, generics.ListAPIView):
    """Tasks with their number of kernels, of correct kernels and best claimed speedup."""
    serializer_class = TaskSerializer

    def get_queryset(self):
        level = self.leaderboard_query().level
        tasks = selectors.tasks_with_counts()
        return tasks.filter(level=level) if level else tasks


class TaskDetail(ApiView, generics.GenericAPIView):
    """A task: its reference (and functional form when known) and every kernel, ranked."""
    serializer_class = TaskDetailSerializer

    def get(self, request, level: int, task_number: int):
        task = selectors.task_by_number(level, task_number)
        context = {**self.get_serializer_context(), "kernels": selectors.task_kernels_ranked(task)}
        return Response(TaskDetailSerializer(task, context=context).data)


@extend_schema(parameters=KERNEL_FILTERS)
class KernelList(ApiView, generics.ListAPIView):
    """Every kernel matching the filters (as the leaderboard with show_kernels=1), paginated."""
    serializer_class = KernelListSerializer

    def get_queryset(self):
        return selectors.matching_kernels(self.leaderboard_query(show_kernels=True))


@extend_schema(parameters=[*KERNEL_FILTERS, _param("show_kernels", OpenApiTypes.BOOL,
                                                   "every kernel instead of each task's best")])
class Leaderboard(ApiView, generics.ListAPIView):
    """Each task version's best matching kernel, then the task versions whose matching kernels are
    all failed or suspected (kernel fields null); every row says what its task holds
    (task_holds). show_kernels=1: every matching kernel instead."""
    serializer_class = LeaderboardRowSerializer

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # drf-spectacular building the schema
            return Kernel.objects.none()
        return leaderboard_rows(self.leaderboard_query())


class KernelDetail(ApiView, generics.RetrieveAPIView):
    """A kernel with its code, claimed numbers, verified state and profiles (raw and parsed)."""
    serializer_class = KernelDetailSerializer

    def get_object(self):
        return selectors.kernel_detail_row(self.kwargs["kernel_id"])


class KernelVerifications(ApiView, generics.ListAPIView):
    """Every verification of a kernel, newest first."""
    serializer_class = VerificationSerializer

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # drf-spectacular building the schema
            return Verification.objects.none()
        kernel = get_object_or_404(selectors.published(Kernel.objects.only("id")), pk=self.kwargs["kernel_id"])
        return selectors.kernel_verifications(kernel.id)
