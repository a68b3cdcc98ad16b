"""Dataset exports (mounted under /api/exports/). Pages link here through
kernels.export.links.download_links(request.GET)."""
from django.urls import path

from .export_views import ExportDownloadView

urlpatterns = [
    path("", ExportDownloadView.as_view(), name="export-download"),
]
