"""Search and map pages: validate, call one selector, render."""
from django.shortcuts import render

from archive_site.throttles import throttled_search_page

from . import selectors
from .forms import MapForm, SearchForm


def search_page(request):
    form = SearchForm(request.GET or None)
    results = None
    if form.is_valid() and form.cleaned_data["q"]:
        if throttled := throttled_search_page(request):
            return throttled
        results = selectors.search_kernels(**form.search_arguments())
    return render(request, "search/search.html", {"form": form, "results": results})


def map_page(request):
    form = MapForm(request.GET or None)
    highlight, query = None, ""
    if form.is_valid():
        highlight, query = form.cleaned_data["highlight"], form.cleaned_data["q"]
    return render(request, "search/map.html", {"highlight": highlight, "query": query,
                                               "techniques": selectors.technique_choices()})
