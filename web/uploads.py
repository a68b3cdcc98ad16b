"""The request body size limit (ARCHIVE_MAX_UPLOAD_MB): read by the middleware that refuses an
announced oversize body (archive_site/security.py) and by the import upload's handler that
counts the bytes it actually receives (kernels/upload_api.py)."""
from django.conf import settings


def max_upload_bytes() -> int:
    return int(settings.ARCHIVE_MAX_UPLOAD_MB) * 1024 * 1024


def too_large_message(size: int | None = None) -> str:
    limit = settings.ARCHIVE_MAX_UPLOAD_MB
    told = f" ({size / 1024 / 1024:.1f} MB)" if size is not None else ""
    return (f"request body too large{told}: the limit is {limit} MB (ARCHIVE_MAX_UPLOAD_MB); "
            "import larger archives with `python manage.py import_archive` on a server")
