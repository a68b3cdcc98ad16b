"""The JSON API's one error shape, for every status it answers with (docs/pages.md, "Errors"):

    {"detail": "a sentence for a person", "code": "not_found", "errors": [{"field": "q", "message": "..."}]}

`detail` says what went wrong; `code` is a stable word a program can branch on; `errors` lists the
problems one by one (a field of the request, a row of an uploaded file: then also `file` and
`row`), empty when there is only the one. A 429 also carries `retry_after` (seconds) beside its
Retry-After header; other keys may be added, never removed.

DRF views raise (ValidationError, NotFound, Throttled, ApiError, ...) and api_exception_handler,
set as REST_FRAMEWORK["EXCEPTION_HANDLER"], writes the body; the middleware (413, 429 of
downloads) and Django's own error handlers under /api/ (archive_site/errors.py) write the same
with error_response. Pages keep their styled HTML error pages.
"""
from django.core.exceptions import PermissionDenied
from django.http import Http404, JsonResponse
from rest_framework import exceptions, serializers, status
from rest_framework.views import exception_handler as drf_exception_handler

STATUS_CODES = {400: "bad_request", 401: "not_authenticated", 403: "permission_denied", 404: "not_found",
                405: "method_not_allowed", 406: "not_acceptable", 413: "payload_too_large",
                415: "unsupported_media_type", 429: "throttled", 500: "server_error"}


class ApiError(exceptions.APIException):
    """An error with its problems listed: raise ApiError("invalid search parameters",
    errors=[{"field": "q", "message": "..."}]) from any API view."""
    status_code = status.HTTP_400_BAD_REQUEST
    default_code = "invalid"

    def __init__(self, detail: str, *, code: str | None = None, errors=(), status_code: int | None = None,
                 extra: dict | None = None):
        super().__init__(detail, code)
        self.code = code or self.default_code
        self.errors = list(errors)
        self.extra = extra or {}
        if status_code is not None:
            self.status_code = status_code


def error_body(detail: str, *, code: str, errors=(), **extra) -> dict:
    return {"detail": str(detail), "code": code, "errors": list(errors), **extra}


def error_response(status_code: int, detail: str, *, code: str | None = None, errors=(), headers=None,
                   **extra) -> JsonResponse:
    """The error shape outside DRF's views (middleware, Django's handlers)."""
    response = JsonResponse(error_body(detail, code=code or STATUS_CODES.get(status_code, "error"), errors=errors,
                                       **extra), status=status_code)
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def form_errors(errors: dict) -> list[dict]:
    """A Django form's or a serializer's {field: [messages]} as the shape's list."""
    return [{"field": None if field in ("__all__", "non_field_errors") else field, "message": str(message)}
            for field, messages in _flatten(errors) for message in messages]


def _flatten(errors, prefix=""):
    if isinstance(errors, dict):
        for field, value in errors.items():
            name = f"{prefix}.{field}" if prefix else str(field)
            if isinstance(value, dict):
                yield from _flatten(value, name)
            else:
                yield name, value if isinstance(value, list) else [value]
    else:
        yield prefix or "non_field_errors", errors if isinstance(errors, list) else [errors]


def _validation_detail(errors: list[dict]) -> str:
    if len(errors) == 1:
        field, message = errors[0]["field"], errors[0]["message"]
        return f"{field}: {message}" if field else message
    return "invalid request: " + "; ".join(f"{e['field']}: {e['message']}" if e["field"] else e["message"]
                                           for e in errors)


def api_exception_handler(exc, context):
    """REST_FRAMEWORK["EXCEPTION_HANDLER"]: every error a DRF view raises, in the one shape.
    Anything unexpected is left to Django (a 500 from archive_site/errors.server_error, same shape)."""
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(*(exc.args[:1] if exc.args and isinstance(exc.args[0], str) else ()))
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied(*(exc.args[:1] if exc.args else ()))
    response = drf_exception_handler(exc, context)  # status, headers (Retry-After, WWW-Authenticate)
    if response is None:
        return None
    extra = {}
    if isinstance(exc, ApiError):
        detail, code, errors, extra = str(exc.detail), exc.code, exc.errors, exc.extra
    elif isinstance(exc, exceptions.ValidationError):
        errors = form_errors(exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail})
        detail, code = _validation_detail(errors), "invalid"
    elif isinstance(exc, exceptions.Throttled):
        wait = int(exc.wait or 1)
        detail, code, errors = f"too many requests; try again in {wait} seconds", "throttled", []
        extra = {"retry_after": wait}
        response["Retry-After"] = str(wait)
    else:
        detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        codes = exc.get_codes() if hasattr(exc, "get_codes") else None
        code, errors = codes if isinstance(codes, str) else STATUS_CODES.get(response.status_code, "error"), []
    response.data = error_body(detail, code=code, errors=errors, **extra)
    return response


class ApiErrorItemSerializer(serializers.Serializer):
    field = serializers.CharField(allow_null=True, help_text="the request field (or the file's column) at fault; "
                                                             "null when the problem is the request as a whole")
    message = serializers.CharField()
    file = serializers.CharField(required=False, help_text="uploads: the file, as its client named it")
    row = serializers.CharField(required=False, help_text="uploads: where in the file (\"line 12\")")


class ApiErrorSerializer(serializers.Serializer):
    """The body of every error of the JSON API (web/api_errors.py)."""
    detail = serializers.CharField(help_text="what went wrong, in a sentence")
    code = serializers.CharField(help_text="a stable word to branch on: invalid, not_found, throttled, "
                                           "payload_too_large, unsupported_media_type, server_error, ...")
    errors = ApiErrorItemSerializer(many=True, help_text="each problem on its own; empty when there is one")
    retry_after = serializers.IntegerField(required=False, help_text="429 only: seconds to wait (also Retry-After)")
