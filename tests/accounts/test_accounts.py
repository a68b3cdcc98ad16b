"""Researcher accounts: sign-up verified by a mailed link, sign-in, sign-out, the API token,
re-verification for signed-in users, and staff-only things staying staff-only."""
import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.core import mail, signing
from django.core.cache import cache
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from accounts.models import EmailVerification
from accounts.services import VERIFY_SALT, verification_token
from kernels.models import Verification
from tests.kernels.kernel_factories import make_kernel, make_task

pytestmark = pytest.mark.django_db
PASSWORD = "a long passphrase 42"


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()  # the mail interval and the per-address post counts live there
    yield
    cache.clear()


def sign_up(client, username="ada", email="ada@example.org", password=PASSWORD):
    return client.post("/accounts/signup/", {"username": username, "email": email,
                                             "password1": password, "password2": password})


def mailed_link(message) -> str:
    # Links start with settings.SITE_URL (ARCHIVE_SITE_URL), never the request's host.
    return re.search(r"http://127\.0\.0\.1:8000(/accounts/verify/[^/\s]+/)", message.body).group(1)


def test_sign_up_mails_a_link_that_activates_the_account_then_sign_in_works(client):
    response = sign_up(client)
    assert response.status_code == 302 and response["Location"] == "/accounts/signup/sent/"
    user = User.objects.get(username="ada")
    assert not user.is_active and not user.is_staff and user.email == "ada@example.org"
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["ada@example.org"]
    assert "ada@example.org" in client.get("/accounts/signup/sent/").content.decode()

    # Not usable before the link: the sign-in page says why.
    page = client.post("/accounts/login/", {"username": "ada", "password": PASSWORD}).content.decode()
    assert "not verified yet" in page and "/accounts/verify/resend/" in page
    assert "_auth_user_id" not in client.session

    response = client.get(mailed_link(mail.outbox[0]))
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    user.refresh_from_db()
    assert user.is_active and EmailVerification.objects.get(user=user).verified_at is not None

    response = client.post("/accounts/login/", {"username": "ada", "password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == "/accounts/"
    assert int(client.session["_auth_user_id"]) == user.id
    page = client.get("/accounts/").content.decode()
    assert "ada@example.org" in page and "/accounts/token/" in page


def test_sign_in_with_the_email_address_and_sign_out_by_post(client):
    user = User.objects.create_user("grace", "Grace@Example.org", PASSWORD)
    response = client.post("/accounts/login/", {"username": "grace@example.org", "password": PASSWORD})
    assert response.status_code == 302 and int(client.session["_auth_user_id"]) == user.id
    assert "Sign out" in client.get("/accounts/logout/").content.decode()  # GET only asks
    assert "_auth_user_id" in client.session
    assert client.post("/accounts/logout/").status_code == 302
    assert "_auth_user_id" not in client.session


def test_wrong_password_does_not_reveal_a_pending_account(client):
    sign_up(client)
    page = client.post("/accounts/login/", {"username": "ada", "password": "wrong one"}).content.decode()
    assert "not verified" not in page and "correct username and password" in page


def test_bad_tampered_and_expired_links_are_refused(client, settings):
    sign_up(client)
    user = User.objects.get(username="ada")
    token = verification_token(user)
    assert client.get(f"/accounts/verify/{token[:-2]}xx/").status_code == 400
    forged = signing.dumps({"u": user.pk, "e": user.email}, salt="another purpose", compress=True)
    assert client.get(f"/accounts/verify/{forged}/").status_code == 400
    settings.ACCOUNT_VERIFY_MAX_AGE_S = -1
    page = client.get(f"/accounts/verify/{token}/")
    assert page.status_code == 400 and "expired" in page.content.decode()
    user.refresh_from_db()
    assert not user.is_active


def test_a_link_no_longer_works_once_the_address_changed(client):
    sign_up(client)
    user = User.objects.get(username="ada")
    token = verification_token(user)
    user.email = "someone-else@example.org"
    user.save()
    assert client.get(f"/accounts/verify/{token}/").status_code == 400
    user.refresh_from_db()
    assert not user.is_active


def test_an_old_link_never_reactivates_an_account_staff_deactivated(client):
    sign_up(client)
    link = mailed_link(mail.outbox[0])
    client.get(link)
    User.objects.filter(username="ada").update(is_active=False)  # staff blocked the account
    client.get(link)
    assert not User.objects.get(username="ada").is_active
    # Nor does a link for an account made in the admin (no sign-up record).
    admin_made = User.objects.create_user("made_by_staff", "staff-made@example.org", PASSWORD, is_active=False)
    assert client.get(f"/accounts/verify/{signing.dumps({'u': admin_made.pk, 'e': admin_made.email}, salt=VERIFY_SALT, compress=True)}/").status_code == 400
    assert not User.objects.get(username="made_by_staff").is_active


def test_an_address_with_an_account_gets_a_mail_and_no_new_account(client):
    User.objects.create_user("ada", "ada@example.org", PASSWORD)
    response = sign_up(client, username="ada2", email="ADA@example.org")
    assert response.status_code == 302 and response["Location"] == "/accounts/signup/sent/"  # same as a new one
    assert not User.objects.filter(username="ada2").exists()
    assert len(mail.outbox) == 1 and "already has one" in mail.outbox[0].body and "ada" in mail.outbox[0].body


def test_sign_up_validates_name_and_password(client):
    User.objects.create_user("ada", "other@example.org", PASSWORD)
    page = sign_up(client, email="new@example.org").content.decode()  # the name is taken
    assert "already exists" in page
    page = sign_up(client, username="newbie", email="new@example.org", password="12345678").content.decode()
    assert "too common" in page or "entirely numeric" in page
    assert not User.objects.filter(username="newbie").exists() and mail.outbox == []


def test_resend_mails_a_new_link_only_to_a_pending_account(client):
    sign_up(client)
    cache.clear()  # past the one-mail-a-minute interval
    client.post("/accounts/verify/resend/", {"email": "ada@example.org"})
    assert len(mail.outbox) == 2 and mailed_link(mail.outbox[1])
    cache.clear()
    User.objects.create_user("active", "active@example.org", PASSWORD)
    response = client.post("/accounts/verify/resend/", {"email": "active@example.org"})
    assert response.status_code == 302 and len(mail.outbox) == 2  # nothing to verify: no mail, same page
    client.post("/accounts/verify/resend/", {"email": "ada@example.org"})
    client.post("/accounts/verify/resend/", {"email": "ada@example.org"})
    assert len(mail.outbox) == 3  # one a minute


def test_an_expired_unused_sign_up_frees_its_name_and_address(client):
    sign_up(client)
    EmailVerification.objects.update(created_at=timezone.now() - timedelta(days=30))
    cache.clear()
    sign_up(client, password="another long passphrase")
    user = User.objects.get(username="ada")
    assert EmailVerification.objects.get(user=user).created_at > timezone.now() - timedelta(minutes=1)
    assert User.objects.count() == 1


def test_the_api_token_page_creates_replaces_and_revokes_the_token(client):
    assert client.get("/accounts/token/")["Location"].startswith("/accounts/login/?next=/accounts/token/")
    user = User.objects.create_user("ada", "ada@example.org", PASSWORD)
    client.force_login(user)
    assert 'id="no-token"' in client.get("/accounts/token/").content.decode()
    client.post("/accounts/token/", {"action": "create"})
    first = Token.objects.get(user=user).key
    assert first in client.get("/accounts/token/").content.decode()

    kernel = make_kernel(make_task(1, 1), 0)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {first}")
    assert api.post(f"/api/kernels/{kernel.id}/reverify/").status_code == 202
    assert Verification.objects.get(kernel=kernel).requested_by == user

    client.post("/accounts/token/", {"action": "create"})
    second = Token.objects.get(user=user).key
    assert second != first
    assert api.get("/api/tasks/").status_code == 401  # the old token is refused
    client.post("/accounts/token/", {"action": "revoke"})
    assert not Token.objects.filter(user=user).exists()


def test_a_signed_up_researcher_is_not_staff(client):
    sign_up(client)
    client.get(mailed_link(mail.outbox[0]))
    client.post("/accounts/login/", {"username": "ada", "password": PASSWORD})
    assert client.get("/admin/")["Location"].startswith("/admin/login/")  # the admin stays staff-only
    response = client.post("/api/imports/", {})
    assert response.status_code == 403


def test_navigation_signs_in_here_not_in_the_admin(client):
    kernel = make_kernel(make_task(1, 1), 0)
    html = client.get(f"/kernels/{kernel.id}/").content.decode()
    assert f'href="/accounts/login/?next=/kernels/{kernel.id}/"' in html and 'href="/accounts/signup/"' in html
    assert "/admin/login/" not in html
    response = client.post(f"/kernels/{kernel.id}/reverify/")
    assert response["Location"] == f"/accounts/login/?next=/kernels/{kernel.id}/reverify/"
    client.force_login(User.objects.create_user("ada", "ada@example.org", PASSWORD))
    html = client.get(f"/kernels/{kernel.id}/").content.decode()
    assert 'id="nav-account"' in html and 'href="/accounts/token/"' in html and 'id="reverify-button"' in html


def test_the_account_page_lists_the_users_re_verification_requests(client):
    user = User.objects.create_user("ada", "ada@example.org", PASSWORD)
    kernel = make_kernel(make_task(1, 1), 0)
    client.force_login(user)
    assert client.post(f"/kernels/{kernel.id}/reverify/").status_code == 302
    run = Verification.objects.get(kernel=kernel, requested_by=user)
    page = client.get("/accounts/").content.decode()
    assert kernel.name in page and run.status in page


def test_password_reset_mails_a_working_link(client):
    User.objects.create_user("ada", "ada@example.org", PASSWORD)
    client.post("/accounts/password/reset/", {"email": "ada@example.org"})
    link = re.search(r"http://127\.0\.0\.1:8000(/accounts/password/reset/\S+/)", mail.outbox[0].body).group(1)
    form_url = client.get(link)["Location"]  # Django swaps the token into the session
    client.post(form_url, {"new_password1": "a new long passphrase", "new_password2": "a new long passphrase"})
    signed_in = client.post("/accounts/login/", {"username": "ada", "password": "a new long passphrase"})
    assert signed_in.status_code == 302 and "_auth_user_id" in client.session


def test_charted_pages_load_plotlys_basic_bundle_the_map_the_full_one_and_a_plain_kernel_page_none(client):
    kernel = make_kernel(make_task(1, 1), 0)
    html = client.get("/tasks/1/1/").content.decode()  # the task page always draws its chart
    assert "js/plotly-basic.min.js" in html and "js/plotly.min.js" not in html
    assert "plotly" not in client.get(f"/kernels/{kernel.id}/").content.decode()  # no profile, no chart
    assert "js/plotly.min.js" in client.get("/map/").content.decode()


def test_sign_in_stops_trying_passwords_after_30_failures_from_one_address(client):
    from axes.utils import reset

    User.objects.create_user("ada", "ada@example.org", PASSWORD)
    for _ in range(29):
        assert client.post("/accounts/login/", {"username": "ada", "password": "guess"}).status_code == 200
    # The 30th failure is the limit (django-axes, ARCHIVE_LOGIN_FAILURE_LIMIT); then even the right password is refused.
    assert client.post("/accounts/login/", {"username": "ada", "password": "guess"}).status_code == 429
    refused = client.post("/accounts/login/", {"username": "ada", "password": PASSWORD})
    assert refused.status_code == 429 and "Too many failed sign-ins" in refused.content.decode()
    assert int(refused["Retry-After"]) == 3600
    assert "_auth_user_id" not in client.session
    reset()  # an hour later (the cool-off drops the counted failures)
    assert client.post("/accounts/login/", {"username": "ada", "password": PASSWORD}).status_code == 302


def test_the_verified_redirect_quotes_the_user_name(client):
    sign_up(client, username="ada+gpu")
    response = client.get(mailed_link(mail.outbox[0]))
    assert response["Location"] == "/accounts/login/?username=ada%2Bgpu"


def test_deploy_check_warns_when_mail_is_printed_not_sent(settings):
    from accounts.checks import check_mail_backend

    settings.EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"
    assert [warning.id for warning in check_mail_backend(None)] == ["accounts.W001"]
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    assert check_mail_backend(None) == []
