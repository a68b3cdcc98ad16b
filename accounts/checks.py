"""Deploy checks: sign-up mails its links, so a production site needs a real mail backend and
the address its links start with."""
from django.conf import settings
from django.core import checks

CONSOLE_BACKENDS = {"django.core.mail.backends.console.EmailBackend", "django.core.mail.backends.dummy.EmailBackend"}


@checks.register(checks.Tags.security, deploy=True)
def check_mail_backend(app_configs, **kwargs):
    if settings.EMAIL_BACKEND in CONSOLE_BACKENDS:
        return [checks.Warning(
            f"EMAIL_BACKEND is {settings.EMAIL_BACKEND}: sign-up links are printed, not mailed.",
            hint="Set DJANGO_EMAIL_BACKEND=django.core.mail.backends.smtp.EmailBackend and DJANGO_EMAIL_HOST "
                 "(docs/accounts.md).",
            id="accounts.W001")]
    return []


@checks.register(checks.Tags.security, deploy=True)
def check_site_url_is_set(app_configs, **kwargs):
    # Mailed links start with SITE_URL; the default (127.0.0.1:8000) only suits a development server.
    if not getattr(settings, "SITE_URL_IS_SET", True):
        return [checks.Warning(
            f"ARCHIVE_SITE_URL is not set: sign-up and password-reset links start with {settings.SITE_URL}.",
            hint="Set ARCHIVE_SITE_URL to the address users reach the site at, e.g. https://kernels.example.org "
                 "(docs/accounts.md).",
            id="accounts.W002")]
    return []
