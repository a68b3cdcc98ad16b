"""Pages of submissions (archive_site/urls.py mounts them at /submissions/)."""
from django.urls import path

from . import views

urlpatterns = [
    path("", views.submission_list, name="submission_list"),
    path("new/", views.submission_new, name="submission_new"),
    path("<int:submission_id>/", views.submission_detail, name="submission_detail"),
]
