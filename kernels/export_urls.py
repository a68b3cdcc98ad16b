"""Dataset exports (mounted under /api/exports/)."""
urlpatterns = []
