from django.urls import path

from . import api

urlpatterns = [
    path("kernels/<int:kernel_id>/bundle/", api.kernel_bundle_page, name="kernel_bundle"),
    path("kernels/<int:kernel_id>/reverify/", api.kernel_reverify_page, name="kernel_reverify"),
]
