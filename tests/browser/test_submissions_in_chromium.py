"""Issue #35, submissions, in Chromium at 390 and 1366 px: the form fits the window (nothing
scrolls sideways), submits, and the submission's page follows its status by itself, showing the
verdict with its flags once the run is recorded, without a reload by hand."""
import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from evaluator.services import kernel_verification_state_refresh
from kernels.models import Task, Verification
from submissions.models import Submission
from tests.browser.conftest import WatchedPage
from tests.evaluator.worker_archive import RELU_REFERENCE

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
WIDTHS = (390, 1366)
CODE = """import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.clamp(x, min=0.0)  # width {width}: a long comment line that must scroll inside its box, never the page
"""


def sideways(page) -> dict:
    return page.evaluate("() => ({page: document.documentElement.scrollWidth, viewport: window.innerWidth})")


def signed_in_context(chromium, live_server, user, width: int):
    client = Client()
    client.force_login(user)
    context = chromium.new_context(viewport={"width": width, "height": 900})
    context.add_cookies([{"name": django_settings.SESSION_COOKIE_NAME,
                          "value": client.cookies[django_settings.SESSION_COOKIE_NAME].value, "url": live_server.url}])
    return context


def test_the_form_fits_submits_and_the_page_follows_the_run(live_server, chromium, monkeypatch):
    queued = []
    monkeypatch.setattr("evaluator.tasks.run_verification", queued.append)  # the worker's queue, recorded
    Task.objects.create(level=1, task_number=19, op_name="19_ReLU", reference_code=RELU_REFERENCE)
    user = User.objects.create_user("ada", email="ada@example.org")
    for width in WIDTHS:
        context = signed_in_context(chromium, live_server, user, width)
        watched = WatchedPage(context.new_page())
        page = watched.page
        page.goto(f"{live_server.url}/accounts/")
        page.click("#submit-kernel-link")
        page.wait_for_selector("#submission-form")
        sizes = sideways(page)
        assert sizes["page"] <= sizes["viewport"], (width, sizes)
        page.select_option("#id_task", label="L1 T19 19_ReLU")
        page.select_option("#id_kind", "model_new")
        page.fill("#id_code", CODE.format(width=width))
        watched.screenshot(f"submission_form_{width}")
        page.click("#submission-submit")
        page.wait_for_selector("#submission-status")
        # The code as pasted: the browser's CRLF line ends are the form's to undo.
        submission = Submission.objects.get(kernel__code=CODE.format(width=width))
        assert page.url.endswith(f"/submissions/{submission.id}/")
        assert page.inner_text("#submission-status .status") == "queued"
        run = Verification.objects.get(kernel=submission.kernel)
        assert run.id in queued
        sizes = sideways(page)
        assert sizes["page"] <= sizes["viewport"], (width, sizes)

        # The worker records its verdict; the page's poll (static/js/submission_status.js) shows it.
        Verification.objects.filter(id=run.id).update(
            status="failed", finished_at=timezone.now(), device="cpu",
            flags=[{"name": "wrong_output", "blocking": True, "evidence": "max abs error 3.1 over tolerance 1e-2"}])
        kernel_verification_state_refresh(kernel_id=submission.kernel_id)
        page.wait_for_selector("#verdict", timeout=20_000)
        assert "wrong_output (blocking): max abs error 3.1" in page.inner_text("#verdict-flags")
        sizes = sideways(page)
        assert sizes["page"] <= sizes["viewport"], (width, sizes)
        watched.screenshot(f"submission_failed_{width}")
        watched.assert_clean()
        context.close()
