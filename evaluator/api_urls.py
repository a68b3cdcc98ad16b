from django.urls import path

from . import api

urlpatterns = [
    path("kernels/<int:kernel_id>/bundle/", api.kernel_bundle, name="api_kernel_bundle"),
    path("kernels/<int:kernel_id>/reverify/", api.kernel_reverify, name="api_kernel_reverify"),
    path("verifications/<int:verification_id>/", api.verification_detail, name="api_verification_detail"),
    path("verifications/contribute/", api.verification_contribute, name="api_verification_contribute"),
    path("verifier-keys/", api.verifier_key_create, name="api_verifier_keys"),
    path("verifier-keys/challenge/", api.verifier_key_challenge, name="api_verifier_key_challenge"),
]
