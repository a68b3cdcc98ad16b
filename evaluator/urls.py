from django.urls import path

from . import views

urlpatterns = [
    path("kernels/<int:kernel_id>/bundle/", views.kernel_bundle_page, name="kernel_bundle"),
    path("kernels/<int:kernel_id>/reverify/", views.kernel_reverify_page, name="kernel_reverify"),
    path("kernels/<int:kernel_id>/gpu-binary.txt", views.kernel_gpu_binary_text, name="kernel_gpu_binary_text"),
    path("verifications/contribute/", views.contribute_page, name="contribute"),
    path("verifications/contribute/key/", views.contribute_key_page, name="contribute_key"),
    path("verifications/contribute/upload/", views.contribute_upload_page, name="contribute_upload"),
]
