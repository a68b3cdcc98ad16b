"""JSON API of tasks, kernels and the leaderboard (mounted under /api/)."""
from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from . import api
from .claims_api import ClaimsVsRemeasured

urlpatterns = [
    path("tasks/", api.TaskList.as_view(), name="api-tasks"),
    path("tasks/<int:level>/<int:task_number>/", api.TaskDetail.as_view(), name="api-task"),
    path("kernels/", api.KernelList.as_view(), name="api-kernels"),
    path("kernels/<int:kernel_id>/", api.KernelDetail.as_view(), name="api-kernel"),
    path("kernels/<int:kernel_id>/verifications/", api.KernelVerifications.as_view(), name="api-kernel-verifications"),
    path("leaderboard/", api.Leaderboard.as_view(), name="api-leaderboard"),
    path("claims/", ClaimsVsRemeasured.as_view(), name="api-claims"),
]

# OpenAPI schema and Swagger UI; the UI's assets come from drf-spectacular-sidecar (offline).
# The split view serves the UI's start-up script as a file, not inline (the CSP forbids inline scripts).
urlpatterns += [
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
]
