"""Pages of re-verification: the bundle download, the re-verify form's POST, contributions.
The JSON API is in evaluator/api.py."""
from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpResponse
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from kernels.models import Kernel, VerifierKey
from kernels.selectors import published
from web.throttles import throttled_page

from . import selectors, services
from .gpu_binary_page import listing_text
from .api import ContributeThrottle, ReverifyThrottle
from .contributions import ContributionRefused, contribution_import_upload
from .kernel_bundles import bundle_download_response
from .key_challenges import key_challenge_issue
from .verifier_keys import KeyRefused, verifier_key_register


def kernel_bundle_page(request, kernel_id: int):
    # An unpublished submission's bundle (its code) is a 404 for everyone, its submitter too
    # (docs/submissions.md: they read the code on their submission's page).
    return bundle_download_response(get_object_or_404(published(Kernel.objects.select_related("task")), id=kernel_id))


def kernel_gpu_binary_text(request, kernel_id: int):
    """The kernel's whole GPU binary listing (SASS and PTX of each function) as plain text."""
    profile = selectors.kernel_gpu_binary(kernel_id)
    if profile is None or not isinstance(profile.parsed, dict) or profile.parsed.get("unavailable"):
        raise Http404("no GPU binary listing for this kernel")
    response = HttpResponse(listing_text(profile.parsed), content_type="text/plain; charset=utf-8")
    response["Content-Disposition"] = f'inline; filename="kernel-{kernel_id}-gpu-binary.txt"'
    return response


@login_required
@require_POST
def kernel_reverify_page(request, kernel_id: int):
    kernel = get_object_or_404(published(Kernel.objects.all()), id=kernel_id)  # unpublished: as if missing
    if throttled := throttled_page(request, [ReverifyThrottle], "re-verification requests"):
        return throttled
    verification, _ = services.verification_request(kernel=kernel, user=request.user)
    messages.info(request, f"Verification {verification.id} is {verification.status}.")
    return redirect("kernel_detail", kernel_id=kernel.id)


@login_required
def contribute_page(request):
    return render(request, "evaluator/contribute.html", {
        "keys": VerifierKey.objects.filter(user=request.user), "problems": request.session.pop("contribute_problems", []),
        "challenge": key_challenge_issue(request.user),
    })


@login_required
@require_POST
def contribute_key_page(request):
    if throttled := throttled_page(request, [ContributeThrottle], "key registrations and uploads"):
        return throttled
    try:
        key = verifier_key_register(user=request.user, public_key=request.POST.get("public_key", ""),
                                    owner_name=request.POST.get("owner_name", ""),
                                    challenge=request.POST.get("challenge", ""),
                                    signature=request.POST.get("signature", ""),
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
    if throttled := throttled_page(request, [ContributeThrottle], "key registrations and uploads"):
        return throttled
    try:
        summary = contribution_import_upload(upload, request.user)
    except ContributionRefused as refused:
        request.session["contribute_problems"] = refused.problems
        messages.error(request, "Refused: nothing was imported.")
    else:
        messages.info(request, f"{summary.added} verification(s) added, {summary.already_present} already there.")
    return redirect("contribute")
