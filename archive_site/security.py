"""Site-wide defences (docs/security.md): the upload size limit, the Content-Security-Policy
header, the throttle of page downloads, gzip where no secret is on the page, and a deploy check
for the development secret key. The limits on expensive requests: archive_site/expensive_requests.py.

Django 5.2 has no built-in CSP, so ContentSecurityPolicyMiddleware sets one on every
response. The pages load only this site's own files (static/js/*.js, the vendored
plotly.min.js, css/*.css) and keep their data in <script type="application/json"> blocks
(json_script), which a CSP does not execute; no page needs inline scripts, and only the
map page needs eval (plotly's WebGL).
"""
from django.conf import settings
from django.core import checks
from django.middleware.gzip import GZipMiddleware

from web.api_errors import error_response
from web.uploads import max_upload_bytes, too_large_message

# The two inline <style> elements the vendored plotly.min.js (v4.1.1) adds, allowed by hash and
# nothing else: the empty <style id="plotly.js-style-global"> it then fills through the CSSOM
# (hover labels, mode bar; an empty element carries nothing an attacker could inject), and
# the maplibre CSS it inserts at load. A new plotly.min.js may change the second hash: the
# test test_csp_allows_exactly_the_vendored_plotly_styles recomputes it.
PLOTLY_STYLE_HASHES = (
    "'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='",  # "" (plotly.js-style-global)
    "'sha256-ji27qzEtxXZW+7dun6UwjHXJ18e6WAin1VvNtkzIE/o='",  # maplibre-gl CSS in plotly.min.js
)
DEFAULT_CSP = "; ".join([
    "default-src 'self'",
    "script-src 'self'",  # no inline scripts, no eval; page data is in json_script blocks
    "style-src 'self' " + " ".join(PLOTLY_STYLE_HASHES),
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "worker-src 'self' blob:",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
])

# The map page only: plotly's WebGL scatter (regl) compiles its draw calls with Function(),
# so the map needs 'unsafe-eval' (without it plotly shows "WebGL is not supported"). Inline
# scripts stay forbidden there too. Plotly's "strict" bundle (plotly-strict.min.js, same
# version) would remove this; see docs/security.md.
EVAL_PAGES = {"map"}
MAP_CSP = DEFAULT_CSP.replace("script-src 'self'", "script-src 'self' 'unsafe-eval'", 1)

DEV_SECRET_KEY_PREFIX = "dev-only-insecure-key"


def content_security_policy(url_name: str | None = None) -> str:
    custom = getattr(settings, "ARCHIVE_CSP", "")
    if custom:
        return custom
    return MAP_CSP if url_name in EVAL_PAGES else DEFAULT_CSP


class ContentSecurityPolicyMiddleware:
    """Sets Content-Security-Policy on every response that has none of its own."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if "Content-Security-Policy" not in response:
            match = getattr(request, "resolver_match", None)
            response["Content-Security-Policy"] = content_security_policy(match.url_name if match else None)
        return response


class UploadSizeLimitMiddleware:
    """Answers 413 to any request whose Content-Length is over ARCHIVE_MAX_UPLOAD_MB,
    before anything (CSRF's form parsing included) reads the body. The import upload's own
    handler (kernels/upload_api.py) also counts the bytes it actually receives."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return error_response(400, "malformed Content-Length header")
        if length > max_upload_bytes():
            response = error_response(413, too_large_message(length))
            response["Connection"] = "close"  # the unread body is not worth draining
            return response
        return self.get_response(request)


# URL names of the downloads served outside DRF's throttled API views: the kernel page's
# bundle link and the dataset export (which the API's own download throttle does not reach).
THROTTLED_DOWNLOADS = {"kernel_bundle", "api_kernel_bundle", "export-download"}


class DownloadThrottleMiddleware:
    """Applies the "downloads" rate (ARCHIVE_THROTTLE_DOWNLOADS) per client to every
    bundle and export download, pages and API alike; 429 with Retry-After past it."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        match = getattr(request, "resolver_match", None)
        if match is None or match.url_name not in THROTTLED_DOWNLOADS:
            return None
        from web.throttles import DownloadRateThrottle

        throttle = DownloadRateThrottle()
        if throttle.allow_request(request, None):
            return None
        wait = int(throttle.wait() or 1)
        return error_response(429, f"too many downloads; try again in {wait} seconds", retry_after=wait,
                              headers={"Retry-After": str(wait + 1)})


@checks.register(checks.Tags.security, deploy=True)
def check_secret_key_is_set(app_configs, **kwargs):
    """`check --deploy` fails while the site runs on the development key."""
    if settings.SECRET_KEY.startswith(DEV_SECRET_KEY_PREFIX):
        return [checks.Warning(
            "SECRET_KEY is the development key: set DJANGO_SECRET_KEY (50+ random characters).",
            hint="python -c 'import secrets; print(secrets.token_urlsafe(64))'",
            id="archive.W001",
        )]
    return []


class CompressionMiddleware(GZipMiddleware):
    """gzip for text (HTML, JSON, CSV), except under /accounts/ and /admin/: those pages show
    secrets (the API token) whose compressed length would leak to BREACH. Elsewhere the only
    secret is the CSRF token, which Django masks afresh in every response (docs/security.md,
    "Compression"). Bundles and parquet files are already compressed: left as they are."""

    UNCOMPRESSED_PREFIXES = ("/accounts/", "/admin/")
    TEXT_TYPES = ("text/", "application/json", "application/javascript", "application/vnd.oai.openapi")

    def process_response(self, request, response):
        content_type = response.get("Content-Type", "")
        if request.path.startswith(self.UNCOMPRESSED_PREFIXES) or not content_type.startswith(self.TEXT_TYPES):
            return response
        return super().process_response(request, response)
