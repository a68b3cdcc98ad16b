from django.shortcuts import render

from . import selectors


def home(request):
    return render(request, "kernels/home.html", {"overview": selectors.archive_overview()})
