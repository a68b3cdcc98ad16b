from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import AuthenticationForm, UserCreationForm
from django.core.exceptions import ValidationError
from django.urls import reverse

from .services import pending_account_with_password


class SignUpForm(UserCreationForm):
    email = forms.EmailField(max_length=254, help_text="We mail a link to this address; the account works once you follow it.")

    class Meta(UserCreationForm.Meta):
        model = get_user_model()
        fields = ("username", "email")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["username"].label = "User name"
        self.fields["username"].widget.attrs.update(autocomplete="username")
        self.fields["email"].widget.attrs.update(autocomplete="email")
        # Django's own sign-up form offers "password-based authentication: disabled"; not here.
        self.fields.pop("usable_password", None)


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
            User = get_user_model()
            if not User.objects.filter(username=username).exists():
                by_email = User.objects.filter(email__iexact=username).order_by("-is_active", "id").first()
                if by_email is not None:
                    self.cleaned_data["username"] = by_email.get_username()
        try:
            return super().clean()
        except ValidationError as error:
            password = self.cleaned_data.get("password")
            if password and pending_account_with_password(username=self.cleaned_data.get("username"), password=password):
                self.pending_resend_url = reverse("account_verify_resend")
                raise ValidationError(self.error_messages["pending"], code="pending") from error
            raise


class ResendForm(forms.Form):
    email = forms.EmailField(max_length=254, label="Email address")
