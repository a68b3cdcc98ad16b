"""JSON twin of the claims page (/api/claims/): the same figures from the same selector, with <, >
and & written as \\u escapes like the rest of the API."""
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from web.renderers import EscapedJSONRenderer

from .claims_selectors import claims_overview

FIGURES = ("{baseline, totals, groups: [{source, claimed_gpu, kernels, unverified, unverified_suspected, remeasured, "
           "passed, failed, errors, failed_by_flag, links, by_remeasured_gpu: [{remeasured_gpu, ..., with_both, "
           "median_claimed, median_remeasured, median_ratio}]}], points, weak_tasks}")


class ClaimsVsRemeasured(APIView):
    """Claimed vs re-measured speedups per source archive and claimed GPU, split by the GPU of
    re-measurement: kernels, trusted re-verifications (passed, failed by blocking flag, errors), kernels
    not verified yet and how many of them screening suspects, the medians of both speedups vs PyTorch
    eager over kernels that have both, the scatter's points and the weak tasks. Only trusted finished
    verifications count (this site's worker, records signed by a trusted key). Each count's `links`
    entry is the page listing its kernels."""
    renderer_classes = [EscapedJSONRenderer]

    @extend_schema(responses={200: OpenApiResponse(description=FIGURES)})
    def get(self, request):
        return Response(claims_overview())
