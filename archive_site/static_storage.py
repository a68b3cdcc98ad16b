"""Static files under names that carry a hash of their content, so browsers keep them.

collectstatic (`make demo`, a deployment) writes each file under a hashed name beside a
manifest, compressed (gzip) by whitenoise; whitenoise serves hashed names with a ten-year
max-age and "immutable", so a browser fetches plotly once and never asks again, and a
changed file gets a new name. Where collectstatic has not run (the test suite, runserver
from a fresh checkout), there is no manifest and {% static %} names the plain file, which
the finders serve, instead of failing every page with "Missing staticfiles manifest entry".
"""
from whitenoise.storage import CompressedManifestStaticFilesStorage


class HashedStaticFilesStorage(CompressedManifestStaticFilesStorage):
    def stored_name(self, name):
        try:
            return super().stored_name(name)
        except ValueError:  # no manifest, or a file added since collectstatic ran
            return name
