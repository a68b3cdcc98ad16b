"""URLs of a verification-only host (archive_site/settings_gpu_worker.py): it serves no pages."""
urlpatterns = []
