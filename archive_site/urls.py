from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/exports/", include("kernels.export_urls")),
    path("api/", include("evaluator.api_urls")),
    path("api/", include("search.api_urls")),
    path("api/", include("kernels.api_urls")),
    path("", include("evaluator.urls")),
    path("", include("search.urls")),
    path("", include("kernels.urls")),
]
