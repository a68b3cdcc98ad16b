"""API and page endpoints of re-verification: bundle download, queue a run, follow it."""
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import permissions, status
from rest_framework.decorators import api_view, permission_classes, throttle_classes
from rest_framework.response import Response
from rest_framework.throttling import UserRateThrottle

from kernels.models import Kernel, Verification
from kernels.serializers import VerificationSerializer
from web.throttles import throttled_page

from . import services
from .kernel_bundles import bundle_filename, bundle_for_kernel, bundle_sha256


class ReverifyThrottle(UserRateThrottle):
    scope = "reverify"


def _bundle_response(kernel: Kernel) -> HttpResponse:
    bundle = bundle_for_kernel(kernel)
    response = HttpResponse(bundle, content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{bundle_filename(kernel)}"'
    response["X-Bundle-SHA256"] = bundle_sha256(bundle)
    return response


@extend_schema(responses={200: OpenApiResponse(description="zip: harness, reference, kernel, claims, README")})
@api_view(["GET"])
@permission_classes([permissions.AllowAny])
def kernel_bundle(request, kernel_id: int):
    """The verification bundle of a kernel (the very files the worker runs). Throttled per client
    with every other download by archive_site.security.DownloadThrottleMiddleware."""
    return _bundle_response(get_object_or_404(Kernel.objects.select_related("task"), id=kernel_id))


@extend_schema(request=None, responses={202: VerificationSerializer, 200: VerificationSerializer})
@api_view(["POST"])
@permission_classes([permissions.IsAuthenticated])
@throttle_classes([ReverifyThrottle])
def kernel_reverify(request, kernel_id: int):
    """Queue a re-verification (or return the run already queued or running for this kernel)."""
    kernel = get_object_or_404(Kernel, id=kernel_id)
    verification, created = services.verification_request(kernel=kernel, user=request.user)
    code = status.HTTP_202_ACCEPTED if created else status.HTTP_200_OK
    return Response(VerificationSerializer(verification).data, status=code)


@extend_schema(responses=VerificationSerializer)
@api_view(["GET"])
@permission_classes([permissions.AllowAny])
def verification_detail(request, verification_id: int):
    """One verification, to follow it from queued to its result."""
    return Response(VerificationSerializer(get_object_or_404(Verification, id=verification_id)).data)


def kernel_bundle_page(request, kernel_id: int):
    return _bundle_response(get_object_or_404(Kernel.objects.select_related("task"), id=kernel_id))


@login_required
@require_POST
def kernel_reverify_page(request, kernel_id: int):
    kernel = get_object_or_404(Kernel, id=kernel_id)
    if throttled := throttled_page(request, [ReverifyThrottle], "re-verification requests"):
        return throttled
    verification, _ = services.verification_request(kernel=kernel, user=request.user)
    messages.info(request, f"Verification {verification.id} is {verification.status}.")
    return redirect("kernel_detail", kernel_id=kernel.id)
