"""Pages of researcher accounts, under /accounts/ (archive_site/urls.py)."""
from django.contrib.auth import views as auth_views
from django.urls import path, reverse_lazy

from . import views

urlpatterns = [
    path("", views.account, name="account"),
    path("signup/", views.sign_up, name="account_sign_up"),
    path("signup/sent/", views.sign_up_sent, name="account_sign_up_sent"),
    path("verify/resend/", views.verify_resend, name="account_verify_resend"),
    path("verify/<str:token>/", views.verify, name="account_verify"),
    path("login/", views.SignInView.as_view(), name="login"),
    path("logout/", views.SignOutView.as_view(), name="logout"),
    path("token/", views.api_token, name="account_token"),
    # Django's own password views, with this site's templates (the reset's mail: views.PasswordResetView).
    path("password/change/", auth_views.PasswordChangeView.as_view(
        template_name="accounts/password_change.html"), name="password_change"),
    path("password/change/done/", auth_views.PasswordChangeDoneView.as_view(
        template_name="accounts/password_change_done.html"), name="password_change_done"),
    path("password/reset/", views.PasswordResetView.as_view(), name="password_reset"),
    path("password/reset/sent/", auth_views.PasswordResetDoneView.as_view(
        template_name="accounts/password_reset_sent.html"), name="password_reset_done"),
    path("password/reset/<uidb64>/<token>/", auth_views.PasswordResetConfirmView.as_view(
        template_name="accounts/password_reset_confirm.html", success_url=reverse_lazy("password_reset_complete")),
         name="password_reset_confirm"),
    path("password/reset/done/", auth_views.PasswordResetCompleteView.as_view(
        template_name="accounts/password_reset_complete.html"), name="password_reset_complete"),
]
