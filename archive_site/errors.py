"""Error pages: styled HTML with the site's navigation, or the API's one error shape
({"detail", "code", "errors"}: web/api_errors.py) for /api/ paths, so a client of the API never
has to parse a web page.

The 404 message says what was not found when the view said so (a page number past the last,
a kernel id that does not exist); Django's own resolver message is not shown.
"""
from django.shortcuts import render

from web.api_errors import error_response

API_PREFIX = "/api/"


def _wants_json(request) -> bool:
    return request.path.startswith(API_PREFIX)


def _detail(exception, default: str) -> str:
    # Http404("...") raised by our code carries a sentence for the reader; Django's resolver
    # raises with a dict ({"path": ..., "tried": ...}) that is not for show.
    message = exception.args[0] if exception is not None and exception.args else None
    return message if isinstance(message, str) and message else default


def bad_request(request, exception=None):
    detail = _detail(exception, "The request could not be understood.")
    if _wants_json(request):
        return error_response(400, detail)
    return render(request, "400.html", {"detail": detail}, status=400)


def not_found(request, exception=None):
    detail = _detail(exception, "There is nothing at this address.")
    if _wants_json(request):
        return error_response(404, detail)
    return render(request, "404.html", {"detail": detail, "path": request.path}, status=404)


def server_error(request):
    detail = "Something went wrong on our side; it has been logged."
    if _wants_json(request):
        return error_response(500, detail)
    # No request context: a 500 may come from a broken context processor or database.
    return render(None, "500.html", {"detail": detail}, status=500)
