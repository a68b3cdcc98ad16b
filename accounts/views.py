"""Pages of researcher accounts: sign up, verify, sign in and out, the account and its API token.

Re-verification requests are not here: the kernel page's button posts to evaluator's own
view (evaluator/api.py, kernel_reverify_page), which calls evaluator.services.verification_request.
"""
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.template.response import TemplateResponse
from django.urls import reverse, reverse_lazy
from django.views.decorators.http import require_http_methods
from rest_framework.authtoken.models import Token

from kernels.models import Verification

from . import services
from .forms import ResendForm, SignInForm, SignUpForm, SiteUrlPasswordResetForm
from .limits import too_many_posts


@require_http_methods(["GET", "POST"])
def sign_up(request):
    if request.user.is_authenticated:
        return redirect("account")
    form = SignUpForm()
    if request.method == "POST":
        if too_many_posts(request, "sign_up"):
            messages.error(request, "Too many sign-ups from your address; try again in an hour.")
            return redirect("account_sign_up")
        services.pending_accounts_purge()  # an expired, unused sign-up frees its name
        form = SignUpForm(request.POST)
        if form.is_valid():
            mailed = services.account_sign_up(username=form.cleaned_data["username"], email=form.cleaned_data["email"],
                                               password=form.cleaned_data["password1"])
            return _mail_sent_page(request, form.cleaned_data["email"], mailed)
    return render(request, "accounts/sign_up.html", {"form": form})


def _mail_sent_page(request, email: str, mailed: bool):
    request.session["accounts_mailed_to"] = email
    request.session["accounts_mail_failed"] = not mailed
    return redirect("account_sign_up_sent")


def sign_up_sent(request):
    return render(request, "accounts/sign_up_sent.html", {
        "email": request.session.get("accounts_mailed_to", ""),
        "mail_failed": request.session.get("accounts_mail_failed", False),
    })


def verify(request, token: str):
    try:
        user, activated = services.account_verify(token=token)
    except services.VerificationRefused as refused:
        return render(request, "accounts/verify_failed.html", {"problem": str(refused), "form": ResendForm()}, status=400)
    if activated:
        messages.info(request, f"Your address is verified, {user.get_username()}: sign in.")
    else:
        messages.info(request, "This address was already verified: sign in.")
    return redirect(f"{reverse('login')}?{urlencode({'username': user.get_username()})}")


@require_http_methods(["GET", "POST"])
def verify_resend(request):
    form = ResendForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        # Past the posts limit nothing is sent, and the page is the usual one (it tells no one anything).
        mailed = too_many_posts(request, "resend") or services.verification_resend(email=form.cleaned_data["email"])
        return _mail_sent_page(request, form.cleaned_data["email"], mailed)
    return render(request, "accounts/verify_resend.html", {"form": form})


class SignInView(auth_views.LoginView):
    """Django's LoginView with this site's form. Failed sign-ins are counted by django-axes, here
    and on the admin's sign-in alike (settings.AXES_*; accounts/lockout.py answers past the limit)."""
    template_name = "accounts/sign_in.html"
    authentication_form = SignInForm
    redirect_authenticated_user = True

    def get_initial(self):
        return {"username": self.request.GET.get("username", "")}


class PasswordResetView(auth_views.PasswordResetView):
    """Django's reset by mail, its link built from settings.SITE_URL (never the Host header), at
    most POSTS_PER_HOUR posts per client and one mail a minute per address (accounts/limits.py)."""
    template_name = "accounts/password_reset.html"
    email_template_name = "accounts/email/password_reset.txt"
    subject_template_name = "accounts/email/password_reset_subject.txt"
    form_class = SiteUrlPasswordResetForm

    def post(self, request, *args, **kwargs):
        if too_many_posts(request, "password_reset"):
            form = self.get_form()
            form.add_error(None, "Too many password resets from your address; try again in an hour.")
            return self.render_to_response(self.get_context_data(form=form), status=429)
        return super().post(request, *args, **kwargs)


class SignOutView(auth_views.LogoutView):
    """GET asks (a link in the navigation); POST signs out (Django's LogoutView)."""
    http_method_names = ["get", "post", "options"]
    template_name = "accounts/sign_out.html"
    next_page = reverse_lazy("home")

    def get(self, request, *args, **kwargs):
        if not request.user.is_authenticated:
            return redirect("home")
        return TemplateResponse(request, self.template_name, {})


@login_required
def account(request):
    requests = (Verification.objects.filter(requested_by=request.user).select_related("kernel")
                .order_by("-created_at")[:20])
    return render(request, "accounts/account.html", {
        "has_token": Token.objects.filter(user=request.user).exists(), "verification_requests": requests,
    })


@login_required
@require_http_methods(["GET", "POST"])
def api_token(request):
    """The DRF token the API takes (Authorization: Token KEY): create, replace or revoke it."""
    if request.method == "POST":
        action = request.POST.get("action")
        if action == "create":
            services.api_token_replace(request.user)
            messages.info(request, "A new token was made; any token you had before no longer works.")
        elif action == "revoke":
            services.api_tokens_revoke(request.user)
            messages.info(request, "Your token was revoked: the API no longer accepts it.")
        return redirect("account_token")
    token = Token.objects.filter(user=request.user).first()
    return render(request, "accounts/api_token.html", {
        "token": token, "api_root": request.build_absolute_uri("/api/"),
    })
