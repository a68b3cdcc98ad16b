from django.apps import AppConfig


class ArchiveSiteConfig(AppConfig):
    """The site itself: registers its system checks (archive_site/security.py)."""
    name = "archive_site"
    verbose_name = "Kernel archive site"

    def ready(self):
        from . import security  # noqa: F401  the deploy check of the secret key
