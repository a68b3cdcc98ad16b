"""POST /api/imports/: staff upload an archive file and it is imported at once.

The file goes through kernels.services.archive_import_file, the very import of
`manage.py import_archive`: all-or-nothing, one transaction, every bad row named.

What the client sends is never trusted as a path: its file name picks only the format
(.jsonl/.json/.ndjson or .parquet, from a fixed list) and is shown back in messages after
being reduced to safe characters. The bytes are streamed by ArchiveUploadHandler into a
fresh private temporary folder, under a fixed name, and counted: past ARCHIVE_MAX_UPLOAD_MB
the upload stops with 413 (UploadSizeLimitMiddleware refuses an announced oversize body
before it is read). The folder is removed when the request ends, imported or not.
"""
import re
import shutil
import tempfile
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import FileUploadHandler
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import permissions, serializers, status
from rest_framework.exceptions import APIException, ParseError, UnsupportedMediaType
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from web.api_errors import ApiError
from web.renderers import EscapedJSONRenderer
from web.uploads import max_upload_bytes, too_large_message

from .ingest.errors import IngestError
from .ingest.messages import IMPORT_FAILURES, import_failure
from .services import archive_import_file

# Accepted file name endings -> the name the import reads (it picks the reader by suffix).
EXTENSIONS = {".jsonl": "upload.jsonl", ".ndjson": "upload.jsonl", ".json": "upload.jsonl",
              ".parquet": "upload.parquet"}
# Declared part content types accepted per container; browsers and curl often say octet-stream.
CONTENT_TYPES = {
    "upload.jsonl": {"application/jsonl", "application/x-jsonlines", "application/x-ndjson",
                     "application/json", "text/plain", "application/octet-stream", ""},
    "upload.parquet": {"application/vnd.apache.parquet", "application/x-parquet", "application/parquet",
                       "application/octet-stream", ""},
}
ACCEPTED = ".jsonl, .ndjson or .json (JSON lines), or .parquet"
FILE_FIELD = "file"
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


class UploadTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "upload_too_large"


def display_name(client_name: str) -> str:
    """The client's file name for messages and the default source name: its last path
    component, reduced to letters, digits, '.', '_' and '-'. Never used as a path."""
    name = (client_name or "").replace("\x00", "").replace("\\", "/").rsplit("/", 1)[-1]
    name = _SAFE_NAME.sub("_", name).strip("._") or "upload"
    return name[:100]


def stored_name(client_name: str, content_type: str) -> str:
    """The fixed name the upload is stored under, chosen by the client name's ending;
    415 naming the accepted types for anything else."""
    if "\x00" in (client_name or ""):
        raise ParseError("the uploaded file's name contains a NUL byte")
    suffix = Path(display_name(client_name)).suffix.lower()
    name = EXTENSIONS.get(suffix)
    if name is None:
        raise UnsupportedMediaType(content_type or "(none)", detail=(
            f"unsupported file {display_name(client_name)!r}: an archive upload must be {ACCEPTED}"))
    declared = (content_type or "").split(";")[0].strip().lower()
    if declared not in CONTENT_TYPES[name]:
        raise UnsupportedMediaType(declared, detail=(
            f"unsupported content type {declared!r} for {display_name(client_name)!r}: expected one of "
            + ", ".join(sorted(t for t in CONTENT_TYPES[name] if t))))
    return name


class ArchiveUploadHandler(FileUploadHandler):
    """Streams each uploaded file into its own private temporary folder under a fixed
    name, counting bytes against ARCHIVE_MAX_UPLOAD_MB."""

    def __init__(self, request=None):
        super().__init__(request)
        self.folders: list[Path] = []
        self.handles = []
        self.received = 0
        self.limit = max_upload_bytes()

    def handle_raw_input(self, input_data, META, content_length, boundary, encoding=None):
        if content_length and content_length > self.limit:
            raise UploadTooLarge(too_large_message(content_length))

    def new_file(self, field_name, file_name, content_type, content_length, charset=None, content_type_extra=None):
        super().new_file(field_name, file_name, content_type, content_length, charset, content_type_extra)
        name = stored_name(file_name, content_type)
        folder = Path(tempfile.mkdtemp(prefix="archive-upload-", dir=settings.FILE_UPLOAD_TEMP_DIR))
        self.folders.append(folder)
        self.path = folder / name
        self.file = open(self.path, "xb")
        self.handles.append(self.file)

    def receive_data_chunk(self, raw_data, start):
        self.received += len(raw_data)
        if self.received > self.limit:
            self.file.close()
            raise UploadTooLarge(too_large_message())
        self.file.write(raw_data)
        return None

    def file_complete(self, file_size):
        self.file.flush()
        self.file.seek(0)
        upload = UploadedFile(file=self.file, name=display_name(self.file_name),
                              content_type=self.content_type, size=file_size, charset=self.charset)
        upload.archive_path = self.path
        return upload

    def upload_interrupted(self):
        if getattr(self, "file", None):
            self.file.close()

    def cleanup(self):
        for handle in self.handles:
            handle.close()
        for folder in self.folders:
            shutil.rmtree(folder, ignore_errors=True)


class ImportSummarySerializer(serializers.Serializer):
    source_archive = serializers.CharField()
    file = serializers.CharField(help_text="the uploaded file's name, reduced to safe characters")
    format = serializers.CharField()
    rows_read = serializers.IntegerField()
    tasks_added = serializers.IntegerField()
    kernels_added = serializers.IntegerField()
    kernels_already_present = serializers.IntegerField()
    duplicates_in_file = serializers.IntegerField()
    profiles_added = serializers.IntegerField()
    added_kernel_ids = serializers.ListField(child=serializers.IntegerField())


class ImportUploadSerializer(serializers.Serializer):
    file = serializers.FileField(help_text=f"the archive file: {ACCEPTED}")
    format = serializers.ChoiceField(choices=["auto", "archive", "kernelbench"], default="auto",
                                     help_text="row schema; auto tells it from the first row")
    source = serializers.RegexField(r"^[A-Za-z0-9][A-Za-z0-9 ._:/()-]*$", max_length=255, required=False,
                                    help_text="name of the source archive (default: the file's name)")
    hardware = serializers.CharField(max_length=128, required=False, default="",
                                     help_text="GPU the claims were measured on, if the rows don't say")


class ArchiveImportUpload(APIView):
    """Import an archive file (staff only). All-or-nothing: a file with any bad row is
    refused with 400 naming every problem by row and field, and the archive is unchanged."""

    permission_classes = [permissions.IsAdminUser]
    parser_classes = [MultiPartParser]
    renderer_classes = [EscapedJSONRenderer]

    def initialize_request(self, request, *args, **kwargs):
        # Before anything parses the body (session auth's CSRF check may read the form).
        self.upload_handler = ArchiveUploadHandler(request)
        request.upload_handlers = [self.upload_handler]
        return super().initialize_request(request, *args, **kwargs)

    def finalize_response(self, request, response, *args, **kwargs):
        handler = getattr(self, "upload_handler", None)
        if handler is not None:
            handler.cleanup()
        return super().finalize_response(request, response, *args, **kwargs)

    @extend_schema(
        request={"multipart/form-data": ImportUploadSerializer},
        responses={201: ImportSummarySerializer,
                   400: OpenApiResponse(description="bad rows, each named; the archive is unchanged"),
                   413: OpenApiResponse(description="over ARCHIVE_MAX_UPLOAD_MB"),
                   415: OpenApiResponse(description="not " + ACCEPTED)},
    )
    def post(self, request):
        form = ImportUploadSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        upload = form.validated_data["file"]
        path = getattr(upload, "archive_path", None)
        if path is None:  # parsed by another handler: never happens with this view's handler
            raise ParseError("the upload was not received by the archive upload handler")
        name = upload.name
        if upload.size == 0:
            raise ParseError(f"{name}: the file is empty")
        problem = _sniff(path)
        if problem:
            raise UnsupportedMediaType(upload.content_type or "(none)", detail=f"{name}: {problem}")
        source = form.validated_data.get("source") or Path(name).stem
        fmt = form.validated_data["format"]
        try:
            summary = archive_import_file(path=path, schema=fmt, source_archive=source,
                                          hardware=form.validated_data["hardware"])
        except IMPORT_FAILURES as exc:
            failure = import_failure(exc, shown_as=name, path=path, format_option="format=archive|kernelbench",
                                     rename_file=True)
            rows = isinstance(exc, IngestError)
            raise ApiError(failure.message, code="rows_rejected" if rows else "unreadable_archive",
                           errors=[{"file": e.file, "row": e.row, "field": e.field, "message": e.message}
                                   for e in failure.errors],
                           extra={"rows_read": failure.rows_read} if rows else None) from None
        body = {
            "source_archive": summary.source_archive, "file": name, "format": fmt,
            "rows_read": summary.rows_read, "tasks_added": summary.tasks_added,
            "kernels_added": summary.kernels_added, "kernels_already_present": summary.kernels_already_present,
            "duplicates_in_file": summary.duplicates_in_file, "profiles_added": summary.profiles_added,
            "added_kernel_ids": summary.added_kernel_ids,
        }
        return Response(body, status=status.HTTP_201_CREATED if summary.kernels_added else status.HTTP_200_OK)


def _sniff(path: Path) -> str:
    """What is wrong with the file's first bytes for its declared kind, or ''."""
    with open(path, "rb") as handle:
        head = handle.read(4096)
    if path.suffix == ".parquet":
        return "" if head.startswith(b"PAR1") else "not a Parquet file (no PAR1 magic at its start)"
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text.startswith(b"{"):
        return "not JSON lines (the first row does not start with '{')"
    return ""
