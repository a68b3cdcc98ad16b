"""Pages of researcher accounts: sign up, verify, sign in and out, the account and its API token.

Re-verification requests are not here: the kernel page's button posts to evaluator's own
view (evaluator/api.py, kernel_reverify_page), which calls evaluator.services.verification_request.
"""
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.shortcuts import redirect, render
from django.template.response import TemplateResponse
from django.urls import reverse, reverse_lazy
from django.views.decorators.http import require_http_methods
from rest_framework.authtoken.models import Token
from rest_framework.throttling import BaseThrottle

from kernels.models import Verification

from . import services
from .forms import ResendForm, SignInForm, SignUpForm

# Sign-up and re-send forms per client address: this many posts an hour.
POSTS_PER_HOUR = 20
# Failed sign-ins per client address an hour, before the sign-in form stops trying passwords.
FAILED_SIGN_INS_PER_HOUR = 30


def _link_for(request):
    return lambda token: request.build_absolute_uri(reverse("account_verify", args=[token]))


def _client(request) -> str:
    """The client's address as the API's throttles see it (ARCHIVE_NUM_PROXIES: behind a proxy,
    from X-Forwarded-For; else REMOTE_ADDR), so one proxy's address is not everyone's bucket."""
    return BaseThrottle().get_ident(request)


def _too_many_posts(request, what: str) -> bool:
    key = f"accounts:{what}:{_client(request)}"
    cache.add(key, 0, timeout=3600)
    try:
        return cache.incr(key) > POSTS_PER_HOUR
    except ValueError:  # expired between add and incr
        return False


@require_http_methods(["GET", "POST"])
def sign_up(request):
    if request.user.is_authenticated:
        return redirect("account")
    form = SignUpForm()
    if request.method == "POST":
        if _too_many_posts(request, "sign_up"):
            messages.error(request, "Too many sign-ups from your address; try again in an hour.")
            return redirect("account_sign_up")
        services.pending_accounts_purge()  # an expired, unused sign-up frees its name
        form = SignUpForm(request.POST)
        if form.is_valid():
            services.account_sign_up(username=form.cleaned_data["username"], email=form.cleaned_data["email"],
                                     password=form.cleaned_data["password1"], link_for=_link_for(request))
            request.session["accounts_mailed_to"] = form.cleaned_data["email"]
            return redirect("account_sign_up_sent")
    return render(request, "accounts/sign_up.html", {"form": form})


def sign_up_sent(request):
    return render(request, "accounts/sign_up_sent.html", {"email": request.session.get("accounts_mailed_to", "")})


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
        if not _too_many_posts(request, "resend"):
            services.verification_resend(email=form.cleaned_data["email"], link_for=_link_for(request))
        request.session["accounts_mailed_to"] = form.cleaned_data["email"]
        return redirect("account_sign_up_sent")
    return render(request, "accounts/verify_resend.html", {"form": form})


class SignInView(auth_views.LoginView):
    """Django's LoginView with this site's form; after FAILED_SIGN_INS_PER_HOUR wrong passwords
    from one address it stops checking passwords for the rest of the hour."""
    template_name = "accounts/sign_in.html"
    authentication_form = SignInForm
    redirect_authenticated_user = True

    def get_initial(self):
        return {"username": self.request.GET.get("username", "")}

    def _failures_key(self):
        return f"accounts:sign_in_failures:{_client(self.request)}"

    def post(self, request, *args, **kwargs):
        if (cache.get(self._failures_key()) or 0) >= FAILED_SIGN_INS_PER_HOUR:
            refused = "Too many failed sign-ins from your address; try again in an hour."
            return self.render_to_response(self.get_context_data(refused=refused), status=429)
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form):
        key = self._failures_key()
        cache.add(key, 0, timeout=3600)
        try:
            cache.incr(key)
        except ValueError:
            pass
        return super().form_invalid(form)


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
            Token.objects.filter(user=request.user).delete()
            Token.objects.create(user=request.user)
            messages.info(request, "A new token was made; any token you had before no longer works.")
        elif action == "revoke":
            Token.objects.filter(user=request.user).delete()
            messages.info(request, "Your token was revoked: the API no longer accepts it.")
        return redirect("account_token")
    token = Token.objects.filter(user=request.user).first()
    return render(request, "accounts/api_token.html", {
        "token": token, "api_root": request.build_absolute_uri("/api/"),
    })
