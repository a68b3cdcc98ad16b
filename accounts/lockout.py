"""What a sign-in page answers once django-axes has counted too many failures (settings.AXES_*):
the site's 429 page with Retry-After, the same on /accounts/login/ and /admin/login/, saying
neither whether the password was right nor whether the user exists."""
from axes.helpers import get_cool_off

from web.throttles import limit_response


def locked_out_response(request, original_response=None, credentials=None):
    cool_off = get_cool_off(request)
    wait_s = int(cool_off.total_seconds()) if cool_off else 3600
    minutes = max(1, wait_s // 60)
    return limit_response(request, status=429, wait_s=wait_s, detail=(
        f"Too many failed sign-ins from your address or for this account; try again in {minutes} minutes."))
