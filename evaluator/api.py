"""JSON API of re-verification (mounted under /api/): bundle download, queue a run, follow it,
register a verifier key, contribute signed results. The pages are in evaluator/views.py."""
from django.conf import settings
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import permissions, serializers, status
from rest_framework.decorators import api_view, parser_classes, permission_classes, throttle_classes
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.throttling import UserRateThrottle

from kernels.models import Kernel, Verification
from kernels.serializers import VerificationSerializer
from web.api_errors import ApiError

from . import services
from .contributions import contribution_import_upload
from .kernel_bundles import bundle_download_response
from .verifier_keys import KeyRefused, verifier_key_register


class ReverifyThrottle(UserRateThrottle):
    scope = "reverify"


class KeySerializer(serializers.Serializer):
    public_key = serializers.CharField(max_length=2000, help_text="base64 of the raw 32-byte Ed25519 key, or PEM")
    owner_name = serializers.CharField(max_length=255, required=False, allow_blank=True,
                                       help_text="how your results are credited (default: your user name)")


class UploadSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="signed records (.jsonl or .parquet), e.g. from evaluator.sign_result")


@extend_schema(responses={200: OpenApiResponse(description="zip: harness, reference, kernel, claims, README")})
@api_view(["GET"])
@permission_classes([permissions.AllowAny])
def kernel_bundle(request, kernel_id: int):
    """The verification bundle of a kernel (the very files the worker runs). Throttled per client
    with every other download by archive_site.security.DownloadThrottleMiddleware."""
    return bundle_download_response(get_object_or_404(Kernel.objects.select_related("task"), id=kernel_id))


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


@extend_schema(request=KeySerializer, responses={201: OpenApiResponse(description="{key_id, owner_name}"),
                                                 400: OpenApiResponse(description="the key is refused (malformed, or already a trusted key)")})
@api_view(["POST"])
@permission_classes([permissions.IsAuthenticated])
def verifier_key_create(request):
    """Register the public half of your Ed25519 key; records you sign with it import as your contributions."""
    data = KeySerializer(data=request.data)
    data.is_valid(raise_exception=True)
    try:
        key = verifier_key_register(user=request.user, public_key=data.validated_data["public_key"],
                                    owner_name=data.validated_data.get("owner_name", ""),
                                    trusted_keys_file=settings.TRUSTED_KEYS_FILE)
    except KeyRefused as refused:
        raise ApiError(str(refused), code="key_refused") from None
    return Response({"key_id": key.key_id, "owner_name": key.owner_name}, status=status.HTTP_201_CREATED)


@extend_schema(request={"multipart/form-data": UploadSerializer},
               responses={200: OpenApiResponse(description="the import summary"),
                          400: OpenApiResponse(description="refused, nothing was imported: `errors` names each record and why")})
@api_view(["POST"])
@permission_classes([permissions.IsAuthenticated])
@parser_classes([MultiPartParser, FormParser])
def verification_contribute(request):
    """Upload signed results of bundles you ran on your GPU, signed with a key you registered."""
    data = UploadSerializer(data=request.data)
    data.is_valid(raise_exception=True)
    summary, problems = contribution_import_upload(data.validated_data["file"], request.user)
    if problems:
        raise ApiError("refused: nothing was imported", code="records_refused",
                       errors=[{"field": None, "message": problem} for problem in problems])
    return Response({"records_read": summary.records_read, "added": summary.added,
                     "already_present": summary.already_present, "by_origin": summary.by_origin})
