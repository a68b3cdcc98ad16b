"""Limits on the account doors that send mail or create rows (sign-up, re-send, password reset):
per client address, a number of posts an hour; per mail address, one mail a minute and a few a
day, so the forms cannot flood anyone's mailbox. Counted in the cache (Redis with REDIS_URL,
shared by every web process). Failed sign-ins are django-axes' (accounts/lockout.py)."""
from django.core.cache import cache

from web.throttles import client_address

# Sign-up, re-send and reset forms per client address: this many posts an hour (each form its own count).
POSTS_PER_HOUR = 20
# One mail per address per this many seconds, and at most MAILS_PER_DAY a day (all kinds together).
MAIL_INTERVAL_S = 60
MAILS_PER_DAY = 10


def too_many_posts(request, what: str) -> bool:
    """Counts this post of form `what` from the request's client; True once past POSTS_PER_HOUR."""
    return _count(f"accounts:{what}:{client_address(request)}", 3600) > POSTS_PER_HOUR


def mail_allowed(email: str) -> bool:
    """Whether a mail may go to this address now; counts it when it may."""
    address = email.strip().lower()
    if not cache.add(f"accounts:mail:{address}", 1, timeout=MAIL_INTERVAL_S):
        return False
    if _count(f"accounts:mail_day:{address}", 24 * 3600) > MAILS_PER_DAY:
        return False
    return True


def mail_not_sent(email: str) -> None:
    """The mail could not be sent: it does not count, so asking again works at once."""
    address = email.strip().lower()
    cache.delete(f"accounts:mail:{address}")
    try:
        cache.decr(f"accounts:mail_day:{address}")
    except ValueError:  # the day's count expired meanwhile
        pass


def _count(key: str, timeout: int) -> int:
    cache.add(key, 0, timeout=timeout)
    try:
        return cache.incr(key)
    except ValueError:  # expired between add and incr: a fresh window
        cache.add(key, 1, timeout=timeout)
        return 1
