"""Streamed downloads of the archive, whole or filtered like the leaderboard.

GET /api/exports/?format=parquet|csv|jsonl&level=&correct_only=&verified_only=&q=&technique=
&hardware=&experiment=&archive_compatible=. The body is produced batch by batch while it is sent
(StreamingHttpResponse over the export's encoders), so a 30,000-kernel download never
sits in memory. Bad parameters get a 400 naming each one.
"""
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import JSONRenderer
from rest_framework.views import APIView

from .export.encoders import CONTENT_TYPES, FILE_EXTENSIONS, encode
from .export.links import DOWNLOAD_FORMATS
from .export.rows import archive_row_batches
from .export.selectors import ExportFilters, kernels_for_export
from .techniques import TECHNIQUES


class ExportQuerySerializer(serializers.Serializer):
    format = serializers.ChoiceField(choices=list(DOWNLOAD_FORMATS), default="parquet",
                                     help_text="file format of the download")
    level = serializers.IntegerField(required=False, min_value=1, max_value=99, help_text="KernelBench level")
    correct_only = serializers.BooleanField(default=False, help_text="only kernels the archive claims correct")
    verified_only = serializers.BooleanField(
        default=False, help_text="only kernels whose latest re-verification passed with no blocking flag")
    q = serializers.CharField(required=False, default="", allow_blank=True, max_length=200,
                              help_text="text in the task's op name")
    technique = serializers.ChoiceField(choices=list(TECHNIQUES), required=False, default="", allow_blank=True,
                                        help_text="technique tag detected in the code")
    hardware = serializers.CharField(required=False, default="", allow_blank=True, max_length=128,
                                     help_text="GPU the claims were measured on (exact)")
    experiment = serializers.CharField(required=False, default="", allow_blank=True, max_length=255,
                                       help_text="experiment of the source archive (exact)")
    archive_compatible = serializers.BooleanField(
        default=False, help_text="only the published archive's 19 columns")
    include = serializers.ChoiceField(
        choices=["", "all", "ranked"], required=False, default="", allow_blank=True,
        help_text="ranked: only kernels the leaderboard ranks (not failed, not suspected), as its download links "
                  "ask; empty or all: every kernel")


class _FileFormatIsNotARenderer(DefaultContentNegotiation):
    """`format` names the download's file format here, not one of DRF's renderers (whose
    negotiation would answer 404 to format=parquet); errors are always JSON."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class ExportDownloadView(APIView):
    renderer_classes = [JSONRenderer]
    content_negotiation_class = _FileFormatIsNotARenderer

    @extend_schema(
        parameters=[ExportQuerySerializer],
        responses={(200, CONTENT_TYPES[name].split(";")[0]): OpenApiTypes.BINARY for name in DOWNLOAD_FORMATS},
        summary="Download the archive, or the rows of a leaderboard filter, in the published archive's schema",
    )
    def get(self, request):
        """The archive as a file, in the published archive's schema plus this site's verification
        columns (docs/export.md), streamed; filters as on the leaderboard. Throttled per client with
        every other download."""
        query = ExportQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        filters = ExportFilters(
            level=params.get("level"), correct_only=params["correct_only"], verified_only=params["verified_only"],
            op_name_contains=params["q"].strip(), technique=params["technique"], hardware=params["hardware"],
            experiment=params["experiment"], ranked_only=params["include"] == "ranked",
        )
        file_format = params["format"]
        batches = archive_row_batches(kernels_for_export(filters), archive_compatible=params["archive_compatible"])
        response = StreamingHttpResponse(
            encode(file_format, batches, archive_compatible=params["archive_compatible"]),
            content_type=CONTENT_TYPES[file_format],
        )
        response["Content-Disposition"] = f'attachment; filename="{_file_name(filters, file_format)}"'
        return response


def _file_name(filters: ExportFilters, file_format: str) -> str:
    parts = ["kernel-archive"]
    if filters.level is not None:
        parts.append(f"level_{filters.level}")
    if filters.correct_only:
        parts.append("correct")
    if filters.verified_only:
        parts.append("verified")
    if filters.op_name_contains or filters.technique or filters.hardware or filters.experiment:
        parts.append("filtered")
    return f"{'-'.join(parts)}.{FILE_EXTENSIONS[file_format]}"
