"""The one order of verifications by who vouches for them, for every "latest verification" a
page, the API or an export shows: this site's worker and trusted signers first, contributions
after them, unsigned records last. A contribution, whatever its date, never stands in front of
a trusted result (issue #37: a contributed "passed, 41.7x" dated 2099 had replaced a cheat's
failure in the export and headed the home page)."""
from django.db.models import Case, F, IntegerField, Value, When
from django.db.models.functions import Coalesce

from .models import TRUSTED_ORIGINS, Verification

TRUST_RANK = Case(When(origin__in=TRUSTED_ORIGINS, then=Value(0)),
                  When(origin=Verification.Origin.CONTRIBUTED, then=Value(1)),
                  default=Value(2), output_field=IntegerField())
# Newest first among equals; a queued run has no finish yet, so its creation dates it. PostgreSQL
# sorts NULLs first in a descending order, so say where they go.
NEWEST = Coalesce(F("finished_at"), F("created_at"))
TRUSTED_THEN_NEWEST = (TRUST_RANK.asc(), NEWEST.desc(nulls_last=True), F("id").desc())
