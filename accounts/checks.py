"""Deploy check: sign-up mails its links, so a production site needs a real mail backend."""
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
