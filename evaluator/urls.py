from django.urls import path

from . import api, contributions

urlpatterns = [
    path("kernels/<int:kernel_id>/bundle/", api.kernel_bundle_page, name="kernel_bundle"),
    path("kernels/<int:kernel_id>/reverify/", api.kernel_reverify_page, name="kernel_reverify"),
    path("verifications/contribute/", contributions.contribute_page, name="contribute"),
    path("verifications/contribute/key/", contributions.contribute_key_page, name="contribute_key"),
    path("verifications/contribute/upload/", contributions.contribute_upload_page, name="contribute_upload"),
]
