"""Search and map pages."""
urlpatterns = []
