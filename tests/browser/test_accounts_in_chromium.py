"""Issue #19, accounts, in Chromium: a researcher signs up, follows the mailed link, signs in,
makes an API token that the API takes, queues a re-verification from a kernel page and signs
out, all from the site's own pages (never the admin's)."""
import json
import re
import urllib.request

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.core.cache import cache
from rest_framework.authtoken.models import Token

from kernels.models import Kernel, Verification
from kernels.services import archive_import_file

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "kernels are fun 2026"


def test_sign_up_mail_verify_sign_in_token_and_reverify(live_server, watched_page, archive_path, monkeypatch, settings):
    cache.clear()
    settings.SITE_URL = live_server.url  # mailed links start with the configured site address
    archive_import_file(path=archive_path, hardware="NVIDIA H100")
    queued = []
    monkeypatch.setattr("evaluator.tasks.run_verification", queued.append)  # the worker's queue, recorded
    kernel, other = Kernel.objects.filter(claimed_correct=True).order_by("id")[:2]
    page = watched_page.page

    # A kernel page sends a visitor to this site's sign-up, not the admin.
    page.goto(f"{live_server.url}/kernels/{kernel.id}/")
    assert "/admin/" not in page.get_attribute("#reverify-sign-in", "href")
    page.click("#nav-sign-up")
    page.fill("#id_username", "ada")
    page.fill("#id_email", "ada@example.org")
    page.fill("#id_password1", PASSWORD)
    page.fill("#id_password2", PASSWORD)
    watched_page.screenshot("account_sign_up")
    page.click("#sign-up-form button[type=submit]")
    page.wait_for_selector("#mail-sent")
    assert "ada@example.org" in page.inner_text("#mail-sent")
    assert not User.objects.get(username="ada").is_active

    # The mail (Django's locmem backend in tests) carries the link.
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["ada@example.org"]
    link = re.search(r"https?://\S+/accounts/verify/\S+/", mail.outbox[0].body).group(0)
    page.goto(link)
    assert "/accounts/login/" in page.url and "verified" in page.inner_text("#account-messages")
    assert page.input_value("#id_username") == "ada"
    page.fill("#id_password", PASSWORD)
    page.click("#sign-in-form button[type=submit]")
    page.wait_for_selector("#nav-account")
    assert page.url.endswith("/accounts/") and page.inner_text("#nav-account") == "ada"

    # The API token page: create one; the API accepts it.
    page.click("#nav-token")
    page.click("#token-create")
    token = page.inner_text("#api-token").strip()
    assert token == Token.objects.get(user__username="ada").key
    watched_page.screenshot("account_api_token")
    request = urllib.request.Request(f"{live_server.url}/api/kernels/{other.id}/reverify/", method="POST",
                                     headers={"Authorization": f"Token {token}"})
    with urllib.request.urlopen(request) as response:
        assert response.status == 202 and json.load(response)["status"] == "queued"

    # The kernel page's button queues a re-verification (evaluator's service), followed on the page.
    page.goto(f"{live_server.url}/kernels/{kernel.id}/")
    page.click("#reverify-button")
    page.wait_for_selector("#verification-progress")
    run = Verification.objects.get(kernel=kernel)
    assert run.requested_by.username == "ada" and run.status == "queued"
    assert sorted(queued) == sorted(Verification.objects.values_list("id", flat=True))
    watched_page.screenshot("kernel_reverify_requested")
    page.goto(f"{live_server.url}/accounts/")
    assert kernel.name in page.inner_text("#verification-requests")

    # Sign out from the navigation.
    page.click("#nav-sign-out")
    page.click("#sign-out-form button[type=submit]")
    page.wait_for_selector("#nav-sign-in")
    watched_page.assert_clean()
