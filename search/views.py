"""Search and map pages: validate, call one selector, render."""
from django.shortcuts import render

from web.throttles import throttled_search_page

from . import selectors
from .code_query import InvalidPattern
from .forms import MapForm, SearchForm
from .results import MIN_SIMILARITY, search_page as search_results


def search_page(request):
    form = SearchForm(request.GET or None)
    results, status = None, 200
    if form.is_valid() and form.cleaned_data["q"]:
        if throttled := throttled_search_page(request):
            return throttled
        try:
            results = search_results(**form.search_arguments())
        except InvalidPattern as problem:
            form.add_error("q", str(problem))
            status = 400
    elif form.is_bound and not form.is_valid():
        status = 400
    return render(request, "search/search.html", {"form": form, "results": results, "min_similarity": MIN_SIMILARITY},
                  status=status)


def map_page(request):
    form = MapForm(request.GET or None)
    highlight, query = None, ""
    if form.is_valid():
        highlight, query = form.cleaned_data["highlight"], form.cleaned_data["q"]
    return render(request, "search/map.html", {"highlight": highlight, "query": query,
                                               "techniques": selectors.technique_choices()})
