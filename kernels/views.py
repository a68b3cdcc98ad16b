"""Pages: validate the query, call a selector, render. Bad parameters get a 400 saying why."""
from django.http import HttpResponse
from django.shortcuts import render

from . import selectors
from .charts import claimed_vs_remeasured, speedup_distribution, task_speedups
from .export.links import download_links
from .leaderboard_query import REMEASURED_SORTS, SORTS, InvalidQuery, parse_leaderboard_query
from .highlight import python_source_html
from .kernel_page import kernel_page_context
from .leaderboard_rows import leaderboard_page
from .models import Kernel
from .page_cache import cached_for_anonymous
from .ranking import best_of_ranked, excluded_reason
from .task_page import kernels_by_version, parse_claims_query, task_sources_context
from .techniques import TECHNIQUES
from .trust_selectors import claimed_vs_remeasured_points, trust_overview


def _bad_request(request, problem: InvalidQuery):
    return render(request, "kernels/bad_request.html", {"problem": str(problem)}, status=400)


def home(request):
    overview = selectors.archive_overview()
    return render(request, "kernels/home.html", {
        "overview": overview,
        "trust": trust_overview(),
        "scatter_chart": claimed_vs_remeasured(claimed_vs_remeasured_points()),
        "top_kernels": selectors.top_kernels(),
        "newest_verifications": selectors.newest_verifications(),
        "speedup_chart": speedup_distribution(overview["histogram"]),
    })


@cached_for_anonymous
def leaderboard(request):
    try:
        query = parse_leaderboard_query(request.GET)
    except InvalidQuery as problem:
        return _bad_request(request, problem)
    page = leaderboard_page(query)
    return render(request, "kernels/leaderboard.html", {
        "query": query, "page": page, "sorts": SORTS, "techniques": TECHNIQUES,
        # Rank numbers are re-measured ranks under the default orders; a claim is labelled, not numbered.
        "numbered_by_remeasurement": query.sort in REMEASURED_SORTS,
        "levels": selectors.task_levels(), "hardware_names": selectors.hardware_names(), "rank_offset": page.start_index() - 1,
        # The downloads hold the rows the page ranks: failed and suspected kernels only with include=all.
        "export_links": download_links({**request.GET.dict(), "include": "all" if query.include_all else "ranked"}),
    })


def task_detail(request, level: int, task_number: int):
    try:
        include_all = parse_leaderboard_query(request.GET).include_all
        claims_query = parse_claims_query(request.GET)
    except InvalidQuery as problem:
        return _bad_request(request, problem)
    task = selectors.task_by_number(level, task_number)
    kernels = list(selectors.task_kernels_ranked(task, include_all=include_all))
    sources = task_sources_context(task, claims_query)
    # One ranking: kernels a trusted verification passed, by re-measured speedup. Claims are below it.
    remeasured = [kernel for kernel in kernels if kernel.verified]
    return render(request, "kernels/task_detail.html", {
        **sources, "ranked_by_version": kernels_by_version(remeasured, sources["versions"]),
        "task": task, "include_all": include_all, "kernel_count": len(kernels), "ranked": remeasured,
        "not_ranked": [kernel for kernel in kernels if excluded_reason(kernel)],
        "best_kernel": best_of_ranked(kernels),
        "speedup_chart": task_speedups(kernels),
        "reference_html": python_source_html(task.reference_code),
        "functional_html": python_source_html(task.functional_code, "F") if task.functional_code else "",
    })


def kernel_detail(request, kernel_id: int):
    return render(request, "kernels/kernel_detail.html", kernel_page_context(kernel_id, request.GET))


def kernel_source(request, kernel_id: int):
    """The kernel's code as a download; the file name is ours, never the archive's text."""
    kernel = selectors.kernel_code_only(kernel_id)
    extension = "py" if kernel.kind == Kernel.Kind.MODEL_NEW else "cu"
    response = HttpResponse(kernel.code, content_type="text/plain; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="kernel_{kernel.id}.{extension}"'
    return response
