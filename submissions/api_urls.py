"""The submissions API (archive_site/urls.py mounts it at /api/submissions/)."""
from django.urls import path

from . import api

urlpatterns = [
    path("", api.SubmissionList.as_view(), name="api_submissions"),
    path("<int:submission_id>/", api.SubmissionDetail.as_view(), name="api_submission_detail"),
]
