"""The claims page (/claims/): claimed vs re-measured speedups per source and GPU, and the kernels
behind any of its counts (?outcome=...). Validate the query, call the selectors, render."""
from django.shortcuts import render

from .claims_chart import claims_scatter
from .claims_query import OUTCOMES, parse_claims_list_query
from .claims_selectors import claims_kernel_page, claims_overview
from .leaderboard_query import InvalidQuery
from .page_cache import cached_for_anonymous


@cached_for_anonymous
def claims_vs_remeasured(request):
    try:
        listing = parse_claims_list_query(request.GET)
    except InvalidQuery as problem:
        return render(request, "kernels/bad_request.html", {"problem": str(problem)}, status=400)
    overview = claims_overview()
    return render(request, "kernels/claims.html", {
        "overview": overview,
        "scatter_chart": claims_scatter(overview["points"]) if overview["points"] else None,
        "listing": listing, "listing_label": OUTCOMES[listing.outcome] if listing else "",
        "page": claims_kernel_page(listing) if listing else None,
    })
