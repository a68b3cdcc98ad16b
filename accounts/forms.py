from urllib.parse import urlsplit

from django import forms
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import AuthenticationForm, PasswordResetForm, UserCreationForm
from django.core.exceptions import ValidationError
from django.urls import reverse

from .limits import mail_allowed
from .services import pending_account_with_password


class SignUpForm(UserCreationForm):
    email = forms.EmailField(max_length=254, help_text="We mail a link to this address; the account works once you follow it.")

    class Meta(UserCreationForm.Meta):
        model = get_user_model()
        fields = ("username", "email")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["username"].label = "User name"
        self.fields["username"].help_text = "150 characters or fewer: letters, digits and . + - _ (no @)."
        self.fields["username"].widget.attrs.update(autocomplete="username")
        self.fields["email"].widget.attrs.update(autocomplete="email")
        # Django's own sign-up form offers "password-based authentication: disabled"; not here.
        self.fields.pop("usable_password", None)

    def clean_username(self):
        # Sign-in takes a user name or an email address: a name that is, or could be, someone's
        # address would take their email sign-in, so names have no @ and are nobody's address.
        username = super().clean_username()
        if username and "@" in username:
            raise ValidationError("A user name cannot contain @ (sign-in also takes email addresses).",
                                  code="username_has_at")
        if username and get_user_model().objects.filter(email__iexact=username).exists():
            raise ValidationError("This user name is not available.", code="username_is_an_email")
        return username


class SignInForm(AuthenticationForm):
    """Sign in with a user name or an email address. An account still waiting for its mailed
    link is told so (when the password is right) instead of 'wrong password'."""

    error_messages = {
        **AuthenticationForm.error_messages,
        "pending": "This account's email address is not verified yet: follow the link we mailed you, "
                   "or ask for a new one.",
    }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["username"].label = "User name or email"

    def clean(self):
        username = self.cleaned_data.get("username") or ""
        if "@" in username:
            # The address's owner first: an older account whose name looks like an address
            # cannot take someone's email sign-in.
            by_email = get_user_model().objects.filter(email__iexact=username).order_by("-is_active", "id").first()
            if by_email is not None:
                self.cleaned_data["username"] = by_email.get_username()
        try:
            return super().clean()
        except ValidationError as error:
            if getattr(self.request, "axes_locked_out", False):
                raise  # locked out (accounts/lockout.py answers): no password is checked at all
            password = self.cleaned_data.get("password")
            if password and pending_account_with_password(username=self.cleaned_data.get("username"), password=password):
                self.pending_resend_url = reverse("account_verify_resend")
                raise ValidationError(self.error_messages["pending"], code="pending") from error
            raise


class ResendForm(forms.Form):
    email = forms.EmailField(max_length=254, label="Email address")


class SiteUrlPasswordResetForm(PasswordResetForm):
    """Django's reset form whose mailed link starts with settings.SITE_URL, whatever Host the
    request named, and which mails an address at most once a minute (accounts/limits.py)."""

    def save(self, **kwargs):
        if not mail_allowed(self.cleaned_data["email"]):
            return
        site = urlsplit(settings.SITE_URL)
        kwargs.update(domain_override=site.netloc, use_https=site.scheme == "https",
                      extra_email_context={**(kwargs.get("extra_email_context") or {}), "site_url": settings.SITE_URL})
        super().save(**kwargs)
