"""Search and map pages."""
from django.urls import path

from . import views

urlpatterns = [
    path("search/", views.search_page, name="search"),
    path("map/", views.map_page, name="map"),
]
