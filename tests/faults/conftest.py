"""Fixtures of the fault tests."""
import pytest


@pytest.fixture
def generous_throttles(settings):
    """Throttling answers 429, which is fine, but it would stop a test from reaching the view."""
    rest = dict(settings.REST_FRAMEWORK)
    rest["DEFAULT_THROTTLE_RATES"] = {scope: "100000/minute" for scope in rest.get("DEFAULT_THROTTLE_RATES", {})}
    settings.REST_FRAMEWORK = rest
