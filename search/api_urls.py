"""Search, related kernels and map data API (mounted under /api/)."""
urlpatterns = []
