"""Headless Chromium (Debian's /usr/bin/chromium, never a downloaded browser) driven by
playwright against pytest-django's live server. Every page records what would make it
untrustworthy: console errors, uncaught exceptions, dialogs, requests leaving localhost."""
import os
from pathlib import Path
from urllib.parse import urlparse

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
LOCAL_HOSTS = {"localhost", "127.0.0.1"}


@pytest.fixture(scope="module")
def chromium():
    """One browser per module: playwright's sync API keeps an event loop on this thread
    until it stops, and other modules start their own."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing: run `bash scripts/install_chromium.sh` (make browser)")
    from playwright.sync_api import sync_playwright

    # While that loop runs, Django refuses ORM calls on this thread unless told they are
    # safe; the tests' own data set-up is synchronous and is.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            yield browser
            browser.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


class WatchedPage:
    """A page plus what it did that it should not have."""

    def __init__(self, page):
        self.page = page
        self.console_errors: list[str] = []
        self.foreign_requests: list[str] = []
        self.dialogs: list[str] = []
        page.on("console", lambda message: message.type == "error" and self.console_errors.append(message.text))
        page.on("pageerror", lambda error: self.console_errors.append(str(error)))
        page.on("request", self._check_request)
        page.on("dialog", self._refuse_dialog)

    def _check_request(self, request):
        url = urlparse(request.url)
        if url.scheme not in ("data", "blob", "about") and url.hostname not in LOCAL_HOSTS:
            self.foreign_requests.append(request.url)

    def _refuse_dialog(self, dialog):
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def screenshot(self, name: str):
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)

    def assert_clean(self):
        assert self.console_errors == [], self.console_errors
        assert self.foreign_requests == [], self.foreign_requests
        assert self.dialogs == [], self.dialogs


@pytest.fixture
def watched_page(chromium):
    context = chromium.new_context(viewport={"width": 1400, "height": 900})
    page = WatchedPage(context.new_page())
    yield page
    context.close()
