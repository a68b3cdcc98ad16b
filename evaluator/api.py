"""JSON API of re-verification (mounted under /api/): bundle download, queue a run, follow it,
register a verifier key, contribute signed results. The pages are in evaluator/views.py."""
from django.conf import settings
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import permissions, serializers, status
from rest_framework.decorators import api_view, parser_classes, permission_classes, throttle_classes
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.throttling import UserRateThrottle

from kernels.models import Kernel, Verification
from kernels.selectors import of_published_kernels, published
from kernels.serializers import VerificationSerializer
from web.api_errors import ApiError

from . import services
from .contributions import ContributionRefused, contribution_import_upload
from .kernel_bundles import bundle_download_response
from .key_challenges import CHALLENGE_MAX_AGE_S, key_challenge_issue
from .verifier_keys import KeyRefused, verifier_key_register


class ReverifyThrottle(UserRateThrottle):
    scope = "reverify"


class ContributeThrottle(UserRateThrottle):
    """Contribution uploads and key registrations, per user (ARCHIVE_THROTTLE_CONTRIBUTE), the
    rate read when a request is checked so a changed setting takes effect."""
    scope = "contribute"

    def get_rate(self):
        return api_settings.DEFAULT_THROTTLE_RATES[self.scope]


class KeySerializer(serializers.Serializer):
    public_key = serializers.CharField(max_length=2000, help_text="base64 of the raw 32-byte Ed25519 key, or PEM")
    owner_name = serializers.CharField(max_length=255, required=False, allow_blank=True,
                                       help_text="how your results are credited (default: your user name); "
                                                 "the site's trusted verifiers' names and other contributors' "
                                                 "are taken")
    challenge = serializers.CharField(max_length=500, help_text="from GET /api/verifier-keys/challenge/")
    signature = serializers.CharField(max_length=200, help_text="base64 Ed25519 signature of the challenge's "
                                                               "UTF-8 bytes by the key's private half")


class UploadSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="signed records (.jsonl or .parquet), e.g. from evaluator.sign_result")


@extend_schema(responses={200: OpenApiResponse(description="zip: harness, reference, kernel, claims, README")})
@api_view(["GET"])
@permission_classes([permissions.AllowAny])
def kernel_bundle(request, kernel_id: int):
    """The verification bundle of a kernel (the very files the worker runs); 404 for a submission
    no trusted run has passed (kernels.selectors.published). Throttled per client with every other
    download by archive_site.security.DownloadThrottleMiddleware."""
    return bundle_download_response(get_object_or_404(published(Kernel.objects.select_related("task")), id=kernel_id))


@extend_schema(request=None, responses={202: VerificationSerializer, 200: VerificationSerializer})
@api_view(["POST"])
@permission_classes([permissions.IsAuthenticated])
@throttle_classes([ReverifyThrottle])
def kernel_reverify(request, kernel_id: int):
    """Queue a re-verification (or return the run already queued or running for this kernel)."""
    kernel = get_object_or_404(published(Kernel.objects.all()), id=kernel_id)  # unpublished: as if missing
    verification, created = services.verification_request(kernel=kernel, user=request.user)
    code = status.HTTP_202_ACCEPTED if created else status.HTTP_200_OK
    return Response(VerificationSerializer(verification).data, status=code)


@extend_schema(responses=VerificationSerializer)
@api_view(["GET"])
@permission_classes([permissions.AllowAny])
def verification_detail(request, verification_id: int):
    """One verification, to follow it from queued to its result; 404 while its kernel is an
    unpublished submission."""
    return Response(VerificationSerializer(
        get_object_or_404(of_published_kernels(Verification.objects.all()), id=verification_id)).data)


@extend_schema(request=None, responses={200: OpenApiResponse(description="{challenge, expires_in_s, sign_with}")})
@api_view(["GET"])
@permission_classes([permissions.IsAuthenticated])
def verifier_key_challenge(request):
    """A challenge to sign with your key's private half; the key's registration carries the signature."""
    return Response({"challenge": key_challenge_issue(request.user), "expires_in_s": CHALLENGE_MAX_AGE_S,
                     "sign_with": "python manage.py verifier_key prove my_key.pem CHALLENGE"})


@extend_schema(request=KeySerializer, responses={201: OpenApiResponse(description="{key_id, owner_name}"),
                                                 400: OpenApiResponse(description="the key is refused (malformed, or already a trusted key)")})
@api_view(["POST"])
@permission_classes([permissions.IsAuthenticated])
@throttle_classes([ContributeThrottle])
def verifier_key_create(request):
    """Register the public half of your Ed25519 key, with its signature of a challenge from
    GET /api/verifier-keys/challenge/; records you sign with it import as your contributions."""
    data = KeySerializer(data=request.data)
    data.is_valid(raise_exception=True)
    try:
        key = verifier_key_register(user=request.user, public_key=data.validated_data["public_key"],
                                    owner_name=data.validated_data.get("owner_name", ""),
                                    challenge=data.validated_data["challenge"],
                                    signature=data.validated_data["signature"],
                                    trusted_keys_file=settings.TRUSTED_KEYS_FILE)
    except KeyRefused as refused:
        raise ApiError(str(refused), code="key_refused") from None
    return Response({"key_id": key.key_id, "owner_name": key.owner_name}, status=status.HTTP_201_CREATED)


@extend_schema(request={"multipart/form-data": UploadSerializer},
               responses={200: OpenApiResponse(description="the import summary"),
                          400: OpenApiResponse(description="refused, nothing was imported: `errors` names each record "
                                                           "and why (the first 50, then how many more)"),
                          413: OpenApiResponse(description="the file is over ARCHIVE_CONTRIBUTION_MAX_MB"),
                          429: OpenApiResponse(description="too many uploads (ARCHIVE_THROTTLE_CONTRIBUTE) or the daily "
                                                           "quota is spent (ARCHIVE_CONTRIBUTION_DAILY_RECORDS)")})
@api_view(["POST"])
@permission_classes([permissions.IsAuthenticated])
@throttle_classes([ContributeThrottle])
@parser_classes([MultiPartParser, FormParser])
def verification_contribute(request):
    """Upload signed results of bundles you ran on your GPU, signed with a key you registered."""
    data = UploadSerializer(data=request.data)
    data.is_valid(raise_exception=True)
    try:
        summary = contribution_import_upload(data.validated_data["file"], request.user)
    except ContributionRefused as refused:
        raise ApiError("refused: nothing was imported", code=refused.code, status_code=refused.status,
                       errors=[{"field": None, "message": problem} for problem in refused.problems]) from None
    return Response({"records_read": summary.records_read, "added": summary.added,
                     "already_present": summary.already_present, "by_origin": summary.by_origin})
