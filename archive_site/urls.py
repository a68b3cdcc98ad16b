from django.contrib import admin
from django.urls import include, path

from kernels.upload_api import ArchiveImportUpload

urlpatterns = [
    path("admin/", admin.site.urls),
    # Researcher accounts: sign-up with a mailed link, sign-in, the API token (accounts/).
    path("accounts/", include("accounts.urls")),
    path("api/exports/", include("kernels.export_urls")),
    path("api/submissions/", include("submissions.api_urls")),
    # Staff upload an archive file; it is imported at once (docs/security.md).
    path("api/imports/", ArchiveImportUpload.as_view(), name="api-imports"),
    path("api/", include("evaluator.api_urls")),
    path("api/", include("search.api_urls")),
    path("api/", include("kernels.api_urls")),
    path("submissions/", include("submissions.urls")),  # researchers submit kernels (docs/submissions.md)
    path("", include("evaluator.urls")),
    path("", include("search.urls")),
    path("", include("kernels.urls")),
]

# Styled pages with the site's navigation; JSON ({"detail": ...}) under /api/ (archive_site/errors.py).
handler400 = "archive_site.errors.bad_request"
handler404 = "archive_site.errors.not_found"
handler500 = "archive_site.errors.server_error"
