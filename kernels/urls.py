from django.urls import path

from . import claims_views, views

urlpatterns = [
    path("", views.home, name="home"),
    path("leaderboard/", views.leaderboard, name="leaderboard"),
    path("claims/", claims_views.claims_vs_remeasured, name="claims_vs_remeasured"),
    path("tasks/<int:level>/<int:task_number>/", views.task_detail, name="task_detail"),
    path("kernels/<int:kernel_id>/", views.kernel_detail, name="kernel_detail"),
    path("kernels/<int:kernel_id>/source/", views.kernel_source, name="kernel_source"),
]
