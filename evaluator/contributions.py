"""Contributed verifications: a signed-in user registers their key and uploads the signed
result of running a downloaded bundle on their own GPU (page and API). The import is the same
all-or-nothing service as import_verifications, restricted to the uploader's own keys; the
result shows as "verified by <key owner> on <GPU>" beside the site's own, never moving
rankings (docs/verification_records.md)."""
import tempfile
from pathlib import Path

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import permissions, serializers, status
from rest_framework.decorators import api_view, parser_classes, permission_classes
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response

from kernels.models import VerifierKey
from web.api_errors import ApiError

from .verification_import import VerificationImportError, verification_import_file
from .verifier_keys import KeyRefused, verifier_key_register

SUFFIXES = (".jsonl", ".ndjson", ".parquet")


class KeySerializer(serializers.Serializer):
    public_key = serializers.CharField(max_length=2000, help_text="base64 of the raw 32-byte Ed25519 key, or PEM")
    owner_name = serializers.CharField(max_length=255, required=False, allow_blank=True,
                                       help_text="how your results are credited (default: your user name)")


class UploadSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="signed records (.jsonl or .parquet), e.g. from evaluator.sign_result")


def _import_upload(upload, user):
    """(summary, None) or (None, problems)."""
    suffix = Path(upload.name or "").suffix.lower()
    if suffix not in SUFFIXES:
        return None, [f"the file must be .jsonl or .parquet, not {suffix or 'without a suffix'!r}"]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"upload{suffix}"  # never the uploader's file name
        with path.open("wb") as handle:
            for chunk in upload.chunks():
                handle.write(chunk)
        try:
            return verification_import_file(path=path, contributor=user), None
        except VerificationImportError as refused:
            return None, refused.problems


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
    summary, problems = _import_upload(data.validated_data["file"], request.user)
    if problems:
        raise ApiError("refused: nothing was imported", code="records_refused",
                       errors=[{"field": None, "message": problem} for problem in problems])
    return Response({"records_read": summary.records_read, "added": summary.added,
                     "already_present": summary.already_present, "by_origin": summary.by_origin})


@login_required
def contribute_page(request):
    return render(request, "evaluator/contribute.html", {
        "keys": VerifierKey.objects.filter(user=request.user), "problems": request.session.pop("contribute_problems", []),
    })


@login_required
@require_POST
def contribute_key_page(request):
    try:
        key = verifier_key_register(user=request.user, public_key=request.POST.get("public_key", ""),
                                    owner_name=request.POST.get("owner_name", ""),
                                    trusted_keys_file=settings.TRUSTED_KEYS_FILE)
        messages.info(request, f"Key {key.key_id} registered for {key.owner_name}.")
    except KeyRefused as refused:
        messages.error(request, str(refused))
    return redirect("contribute")


@login_required
@require_POST
def contribute_upload_page(request):
    upload = request.FILES.get("file")
    if upload is None:
        messages.error(request, "choose a file of signed records to upload")
        return redirect("contribute")
    summary, problems = _import_upload(upload, request.user)
    if problems:
        request.session["contribute_problems"] = problems[:200]
        messages.error(request, "Refused: nothing was imported.")
    else:
        messages.info(request, f"{summary.added} verification(s) added, {summary.already_present} already there.")
    return redirect("contribute")
