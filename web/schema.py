"""The OpenAPI schema's view of the site (drf-spectacular; REST_FRAMEWORK["DEFAULT_SCHEMA_CLASS"]):
every operation lists the errors it can answer with, in the one error shape (web/api_errors.py),
and only operations that need a signed-in user or a token carry a security requirement, so the
interactive docs show the lock exactly where authentication is required."""
import re

from drf_spectacular.openapi import AutoSchema
from rest_framework import permissions

from .api_errors import ApiErrorSerializer

ERROR_DESCRIPTIONS = {
    "400": "the request is not valid: `detail` says why, `errors` names each field",
    "401": "authentication required: a token (Authorization: Token ...) or a signed-in session",
    "403": "signed in, but not allowed (or a session request without its CSRF token)",
    "404": "nothing at this address (no such kernel, task, verification or page)",
    "413": "the request body is over ARCHIVE_MAX_UPLOAD_MB",
    "415": "the uploaded file is not of an accepted type",
    "429": "too many requests from this client: wait `retry_after` seconds (also the Retry-After header)",
    "500": "the server failed; it has been logged",
    "503": "the server is busy with other expensive requests: try again after Retry-After seconds",
}
# Path and query parameters many operations share, described once.
PARAMETER_DESCRIPTIONS = {
    "kernel_id": "the kernel's id (as in /kernels/<id>/)",
    "verification_id": "the verification's id (as returned when it was queued)",
    "submission_id": "your submission's id (as in /submissions/<id>/)",
    "level": "KernelBench level (1, 2, 3)",
    "task_number": "the task's number within its level",
    "format": "json or yaml (default: by the Accept header)",
    "lang": "language of the schema's texts",
}
# Downloads throttled by web.throttles.DownloadRateThrottle through the middleware, not the view.
DOWNLOAD_PATHS = re.compile(r"/bundle/$|/api/exports/")
# Expensive doors (archive_site/expensive_requests.EXPENSIVE_DOORS): a cost budget (429) and a cap on how
# many run at once in a process (503), both applied by the middleware.
EXPENSIVE_PATHS = re.compile(r"^/api/(exports|search|map|leaderboard|kernels)/$")


class ArchiveAutoSchema(AutoSchema):
    def get_operation(self, *args, **kwargs):
        operation = super().get_operation(*args, **kwargs)
        for parameter in (operation or {}).get("parameters", []):
            if not parameter.get("description") and parameter["name"] in PARAMETER_DESCRIPTIONS:
                parameter["description"] = PARAMETER_DESCRIPTIONS[parameter["name"]]
        return operation

    def get_auth(self):
        if self._is_public():
            return []
        return [requirement for requirement in super().get_auth() if requirement]  # no "or anonymous" {}

    def _is_public(self) -> bool:
        perms = [type(p) for p in self.view.get_permissions()]
        if all(p is permissions.AllowAny for p in perms):
            return True
        return self.method in permissions.SAFE_METHODS and all(
            p in (permissions.AllowAny, permissions.IsAuthenticatedOrReadOnly) for p in perms)

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        for code in self._error_codes(responses):
            declared = responses.get(code, {})
            shaped = self._get_response_for_code(ApiErrorSerializer, code, direction=direction)
            shaped["description"] = declared.get("description") or ERROR_DESCRIPTIONS[code]
            responses[code] = shaped
        return responses

    def _error_codes(self, responses) -> list[str]:
        codes = {code for code in responses if code in ERROR_DESCRIPTIONS}
        has_body = self.method in ("POST", "PUT", "PATCH") and self.get_request_serializer() is not None
        if has_body or self._get_filter_parameters() or self.get_override_parameters() or self.method == "GET":
            codes.add("400")
        if not self._is_public():
            codes.update({"401", "403"})
        if "{" in self.path:
            codes.add("404")
        if has_body:
            codes.add("413")
            if "multipart/form-data" in self.map_parsers():
                codes.add("415")
        if getattr(self.view, "throttle_classes", None) or DOWNLOAD_PATHS.search(self.path):
            codes.add("429")
        if EXPENSIVE_PATHS.search(self.path):
            codes.update({"429", "503"})
        codes.add("500")
        return sorted(codes)
