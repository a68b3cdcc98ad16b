"""Search, related kernels and map data API (mounted under /api/)."""
from django.urls import path

from . import api

urlpatterns = [
    path("search/", api.search, name="api-search"),
    path("kernels/<int:kernel_id>/related/", api.related, name="api-kernel-related"),
    path("map/", api.map_data, name="api-map"),
]
