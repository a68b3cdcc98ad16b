from django.apps import AppConfig


class AccountsConfig(AppConfig):
    """Researcher accounts: sign-up verified by a mailed link, sign-in, the API token page."""
    name = "accounts"
    verbose_name = "Researcher accounts"

    def ready(self):
        from . import checks  # noqa: F401  the deploy checks of the mail backend and the site URL
        from . import signals  # noqa: F401  a changed password revokes the API token
