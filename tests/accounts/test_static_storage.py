"""Hashed static names: from the manifest collectstatic writes, plain names without one."""
import json

from archive_site.static_storage import HashedStaticFilesStorage


def test_hashed_names_from_the_manifest_and_plain_names_without_it(tmp_path):
    bare = HashedStaticFilesStorage(location=str(tmp_path), base_url="/static/")
    assert bare.url("js/plotly-basic.min.js") == "/static/js/plotly-basic.min.js"  # no collectstatic: tests, runserver

    (tmp_path / "staticfiles.json").write_text(json.dumps(
        {"version": "1.1", "hash": "x", "paths": {"js/plotly-basic.min.js": "js/plotly-basic.min.0123456789ab.js"}}))
    collected = HashedStaticFilesStorage(location=str(tmp_path), base_url="/static/")
    assert collected.url("js/plotly-basic.min.js") == "/static/js/plotly-basic.min.0123456789ab.js"
    assert collected.url("js/added-later.js") == "/static/js/added-later.js"  # not in the manifest: plain
