"""Issue #37's account findings, each reproduced: reset and sign-up links follow the configured
site address and not the Host header; limits per address and per client on reset mails; both
sign-in pages (the admin's too) lock out after too many failures; a changed password revokes the
API token; sign-up does the same work for a known and a new address; user names cannot be an
email address; sign-up without a mail server neither fails nor half-creates, and a resend works."""
import re
import socket

import pytest
from axes.utils import reset as axes_reset
from django.contrib.auth.models import User
from django.core import mail
from django.core.cache import cache
from rest_framework.authtoken.models import Token

from accounts.limits import POSTS_PER_HOUR
from accounts.models import EmailVerification
from tests.accounts.counting_hasher import CountingHasher

pytestmark = pytest.mark.django_db
PASSWORD = "a long passphrase 42"
SITE = "https://kernels.example.org"


@pytest.fixture(autouse=True)
def _fresh_limits(settings):
    settings.SITE_URL = SITE
    cache.clear()
    axes_reset()
    yield
    cache.clear()
    axes_reset()


def sign_up(client, username="ada", email="ada@example.org", **extra):
    return client.post("/accounts/signup/", {"username": username, "email": email, "password1": PASSWORD,
                                             "password2": PASSWORD}, **extra)


def test_a_reset_asked_with_a_forged_host_mails_the_configured_site(client, settings):
    settings.ALLOWED_HOSTS = ["*"]
    User.objects.create_user("ada", "ada@example.org", PASSWORD)
    response = client.post("/accounts/password/reset/", {"email": "ada@example.org"}, HTTP_HOST="evil.example")
    assert response.status_code == 302
    body = mail.outbox[0].body
    assert "evil.example" not in body
    link = re.search(r"https://kernels\.example\.org(/accounts/password/reset/\S+/)", body).group(1)
    assert client.get(link).status_code == 302  # the token works on the real site


def test_a_sign_up_with_a_forged_host_mails_the_configured_site(client, settings):
    settings.ALLOWED_HOSTS = ["*"]
    sign_up(client, HTTP_HOST="evil.example")
    assert "evil.example" not in mail.outbox[0].body
    assert re.search(r"https://kernels\.example\.org/accounts/verify/\S+/", mail.outbox[0].body)


def test_reset_mails_are_limited_per_address_and_per_client(client):
    User.objects.create_user("ada", "ada@example.org", PASSWORD)
    for _ in range(3):
        assert client.post("/accounts/password/reset/", {"email": "ada@example.org"}).status_code == 302
    assert len(mail.outbox) == 1  # one mail a minute per address, however often it is asked
    for number in range(POSTS_PER_HOUR - 3):
        client.post("/accounts/password/reset/", {"email": f"someone{number}@example.org"})
    refused = client.post("/accounts/password/reset/", {"email": "other@example.org"})
    assert refused.status_code == 429 and "Too many password resets" in refused.content.decode()
    # Another client is not held back by the first one's posts.
    assert client.post("/accounts/password/reset/", {"email": "other@example.org"},
                       REMOTE_ADDR="10.0.0.9").status_code == 302


def test_admin_sign_in_is_locked_after_30_failures_from_one_address(client):
    User.objects.create_superuser("root", "root@example.org", PASSWORD)
    for _ in range(29):
        page = client.post("/admin/login/?next=/admin/", {"username": "root", "password": "guess"})
        assert page.status_code == 200
    assert client.post("/admin/login/?next=/admin/", {"username": "root", "password": "guess"}).status_code == 429
    refused = client.post("/admin/login/?next=/admin/", {"username": "root", "password": PASSWORD})
    assert refused.status_code == 429 and "Too many failed sign-ins" in refused.content.decode()
    assert "Retry-After" in refused and "_auth_user_id" not in client.session
    # The same address is refused on the site's own sign-in page too: one count for both pages.
    assert client.post("/accounts/login/", {"username": "root", "password": PASSWORD}).status_code == 429
    axes_reset()  # the cool-off has passed
    assert client.post("/admin/login/?next=/admin/", {"username": "root", "password": PASSWORD}).status_code == 302


def test_one_user_name_is_locked_whatever_address_the_guesses_come_from(client):
    User.objects.create_user("ada", "ada@example.org", PASSWORD)
    for number in range(30):
        client.post("/accounts/login/", {"username": "ada", "password": "guess"}, REMOTE_ADDR=f"10.1.0.{number}")
    assert client.post("/accounts/login/", {"username": "ada", "password": PASSWORD},
                       REMOTE_ADDR="10.2.0.1").status_code == 429
    # Another user signs in from a fresh address as usual.
    User.objects.create_user("bob", "bob@example.org", PASSWORD)
    assert client.post("/accounts/login/", {"username": "bob", "password": PASSWORD},
                       REMOTE_ADDR="10.2.0.2").status_code == 302


def test_a_password_change_revokes_the_api_token(client):
    user = User.objects.create_user("ada", "ada@example.org", PASSWORD)
    token = Token.objects.create(user=user)
    client.force_login(user)
    response = client.post("/accounts/password/change/", {"old_password": PASSWORD, "new_password1": "another long phrase 7",
                                                          "new_password2": "another long phrase 7"})
    assert response.status_code == 302
    assert not Token.objects.filter(key=token.key).exists()
    api = client.get("/api/tasks/", HTTP_AUTHORIZATION=f"Token {token.key}")
    assert api.status_code == 401


def test_a_password_reset_and_an_admin_change_revoke_the_token_too(client):
    user = User.objects.create_user("ada", "ada@example.org", PASSWORD)
    Token.objects.create(user=user)
    client.post("/accounts/password/reset/", {"email": "ada@example.org"})
    link = re.search(r"https://kernels\.example\.org(/accounts/password/reset/\S+/)", mail.outbox[0].body).group(1)
    form_url = client.get(link)["Location"]
    client.post(form_url, {"new_password1": "a new long passphrase", "new_password2": "a new long passphrase"})
    assert not Token.objects.filter(user=user).exists()

    Token.objects.create(user=user)
    user.refresh_from_db()
    user.set_password("yet another long phrase")  # what the admin's and changepassword's forms do
    user.save()
    assert not Token.objects.filter(user=user).exists()
    user.first_name = "Ada"
    Token.objects.create(user=user)
    user.save()  # any other change keeps the token
    assert Token.objects.filter(user=user).exists()


def test_sign_up_does_the_same_work_for_a_known_and_a_new_address(client, settings):
    settings.PASSWORD_HASHERS = ["tests.accounts.counting_hasher.CountingHasher"]
    User.objects.create_user("ada", "ada@example.org", "x")
    cache.clear()

    CountingHasher.encoded, sent = 0, len(mail.outbox)
    assert sign_up(client, username="ada2", email="ADA@example.org").status_code == 302
    known = (CountingHasher.encoded, len(mail.outbox) - sent)

    CountingHasher.encoded, sent = 0, len(mail.outbox)
    assert sign_up(client, username="bob", email="bob@example.org").status_code == 302
    new = (CountingHasher.encoded, len(mail.outbox) - sent)

    assert known == new == (1, 1)  # one password hashed and one mail sent, either way
    assert not User.objects.filter(username="ada2").exists()
    assert client.get("/accounts/signup/sent/").content.decode().count("Check your mail") >= 1


@pytest.mark.parametrize("username", ["ada@example.org", "ada@lab", "x@y"])
def test_a_user_name_with_at_is_refused(client, username):
    response = sign_up(client, username=username, email="someone@example.org")
    assert response.status_code == 200 and "cannot contain @" in response.content.decode()
    assert not User.objects.filter(email="someone@example.org").exists()


def test_email_sign_in_reaches_the_address_owner_even_past_a_name_that_looks_like_it(client):
    # An account made before names with @ were refused (or by staff) cannot take another's email sign-in.
    owner = User.objects.create_user("ada", "ada@example.org", PASSWORD)
    User.objects.create_user("ada@example.org", "squatter@example.org", PASSWORD)
    response = client.post("/accounts/login/", {"username": "ada@example.org", "password": PASSWORD})
    assert response.status_code == 302 and int(client.session["_auth_user_id"]) == owner.id


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nothing listens once the probe is closed


def test_sign_up_without_a_mail_server_keeps_a_whole_waiting_account_and_a_resend_works(client, settings):
    settings.DEBUG = False
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"  # the production default
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", _closed_port(), 5
    response = sign_up(client)
    assert response.status_code == 302  # no 500
    page = client.get(response["Location"]).content.decode()
    assert "We could not send the mail" in page and "/accounts/verify/resend/" in page
    user = User.objects.get(username="ada")
    assert not user.is_active and EmailVerification.objects.get(user=user).is_pending  # whole, waiting

    # The same sign-up again does not create a second account nor fail.
    assert sign_up(client).status_code == 200  # the name is taken: the form says so
    assert User.objects.filter(email__iexact="ada@example.org").count() == 1

    # Once mail works, a resend goes out at once (the failed mail did not start the one-a-minute interval).
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    assert client.post("/accounts/verify/resend/", {"email": "ada@example.org"}).status_code == 302
    assert len(mail.outbox) == 1
    link = re.search(r"https://kernels\.example\.org(/accounts/verify/\S+/)", mail.outbox[0].body).group(1)
    client.get(link)
    user.refresh_from_db()
    assert user.is_active


def test_signing_up_again_with_a_waiting_address_mails_its_link_again(client):
    sign_up(client)
    cache.clear()  # a minute later
    sign_up(client, username="ada_again")
    assert len(mail.outbox) == 2 and "/accounts/verify/" in mail.outbox[1].body
    assert not User.objects.filter(username="ada_again").exists()


def test_deploy_check_warns_while_the_site_url_is_not_configured(settings):
    from accounts.checks import check_site_url_is_set

    settings.SITE_URL_IS_SET = False
    assert [warning.id for warning in check_site_url_is_set(None)] == ["accounts.W002"]
    settings.SITE_URL_IS_SET = True
    assert check_site_url_is_set(None) == []
