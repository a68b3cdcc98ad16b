"""Issue #37's findings on uploads and signed records, each reproduced against the real site:
the files that took gigabytes to read (memory measured in a fresh process), the record that
posed as the project's and rewrote a cheat's export, unproven keys, the site's own records
through the contributors' door, mistyped fields, and the limits on contributions."""
import base64
import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.utils import timezone

from evaluator.verification_import import verification_import_file, verification_import_records
from evaluator.verification_records import new_private_key, public_key_text
from kernels.models import Kernel, Verification
from kernels.selectors import newest_verifications
from kernels.services import archive_import_file

from .contributor import register_key
from .hostile_uploads import (
    PROJECT_NAME, REPO, SHIPPED, forged_pass, lines_of_ones, parquet_bomb, shipped_record, write_jsonl,
)

pytestmark = pytest.mark.django_db
MB = 1024 * 1024
NOW = lambda: timezone.now().replace(microsecond=0).isoformat().replace("+00:00", "Z")  # noqa: E731

# Runs the contribution endpoint's reading (its limits, the import service) on one file in a
# fresh process and reports how far its peak resident memory rose above where it stood once
# Django was set up (the peak is reset through /proc/self/clear_refs first).
MEASURE = r"""
import json, os, sys
import django
django.setup()
from evaluator.contributions import contribution_limits
from evaluator.verification_import import VerificationImportError, verification_import_file
from kernels.ingest.bounded import ReadLimits

def kib(key):
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(key))

limits = contribution_limits(1000) if sys.argv[2] == "contribution" else ReadLimits(max_line_bytes=1 << 40,
                                                                                      max_chunk_bytes=1 << 40)
with open("/proc/self/clear_refs", "w") as clear:
    clear.write("5")
before = kib("VmRSS:")
try:
    verification_import_file(path=sys.argv[1], limits=limits)
    problems = []
except VerificationImportError as refused:
    problems = refused.problems
print(json.dumps({"growth_mb": (kib("VmHWM:") - before) / 1024, "problems": problems}))
"""


def _read_in_fresh_process(path: Path, limits: str = "contribution") -> dict:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "archive_site.settings"}
    done = subprocess.run([sys.executable, "-c", MEASURE, str(path), limits], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---- 1. one small upload took gigabytes ----------------------------------------------------

def test_ten_megabytes_of_ones_is_refused_within_100_mb(tmp_path):
    measured = _read_in_fresh_process(lines_of_ones(tmp_path / "ones.jsonl"))
    assert measured["growth_mb"] < 100, measured["growth_mb"]
    problems = measured["problems"]
    assert len(problems) == 51 and problems[-1].startswith("... and ") and problems[-1].endswith("more problem(s) not listed")
    assert "a record must be a JSON object" in problems[0]


@pytest.mark.parametrize("rows", [10, 20])
def test_a_parquet_bomb_is_refused_from_its_footer_within_100_mb(tmp_path, rows):
    bomb = parquet_bomb(tmp_path / "bomb.parquet", rows=rows)
    assert bomb.stat().st_size < 10_000  # a few KB on disk, 1-2 GiB decoded
    measured = _read_in_fresh_process(bomb)
    assert measured["growth_mb"] < 100, measured["growth_mb"]
    assert measured["problems"] == ["bomb.parquet row group 1: column 'record' decodes to 100.0 MiB, over the "
                                    "32.0 MiB read at once; write smaller row groups or smaller cells"]


def test_the_measurement_sees_a_bomb_read_without_the_caps(tmp_path):
    """The control: the same reader with its caps lifted decodes a two-row bomb (200 MiB of
    cells) and the fresh process's peak shows it, so the bounds above are measured, not assumed."""
    measured = _read_in_fresh_process(parquet_bomb(tmp_path / "bomb.parquet", rows=2), limits="none")
    assert measured["growth_mb"] > 150, measured["growth_mb"]


def test_the_endpoint_answers_the_lines_file_with_a_short_400_and_writes_nothing(tmp_path, client):
    client.force_login(User.objects.create_user("mallory"))
    with lines_of_ones(tmp_path / "ones.jsonl").open("rb") as handle:
        response = client.post("/api/verifications/contribute/", {"file": handle})
    assert response.status_code == 400 and len(response.content) < 20_000  # was a 424 MB body
    messages = [error["message"] for error in response.json()["errors"]]
    assert len(messages) == 51 and "and 951 more problem(s)" in messages[-1]
    assert not Verification.objects.exists()


def test_the_endpoint_refuses_a_parquet_bomb_naming_no_server_path(tmp_path, client):
    client.force_login(User.objects.create_user("mallory"))
    with parquet_bomb(tmp_path / "bomb.parquet", rows=20).open("rb") as handle:
        response = client.post("/api/verifications/contribute/", {"file": handle})
    assert response.status_code == 400
    assert "column 'record' decodes to 100.0 MiB" in response.json()["errors"][0]["message"]
    garbage = tmp_path / "garbage.parquet"
    garbage.write_bytes(b"PAR1" + b"\0" * 64 + b"PAR1")
    with garbage.open("rb") as handle:
        response = client.post("/api/verifications/contribute/", {"file": handle})
    message = response.json()["errors"][0]["message"]
    assert response.status_code == 400 and message.startswith("upload.parquet: not a readable Parquet file")
    assert "/tmp" not in response.content.decode() and str(tmp_path) not in response.content.decode()


def test_a_line_over_the_record_cap_is_refused_without_being_held(tmp_path, client, settings):
    settings.CONTRIBUTION_MAX_RECORD_KB = 64
    client.force_login(User.objects.create_user("mallory"))
    long_line = tmp_path / "long.jsonl"
    long_line.write_bytes(b'{"format": "' + b"x" * (200 * 1024) + b'"}\n')
    with long_line.open("rb") as handle:
        response = client.post("/api/verifications/contribute/", {"file": handle})
    assert response.status_code == 400
    assert response.json()["errors"][0]["message"] == (
        "upload.jsonl line 1: longer than 64.0 KiB, the most one line may hold")


# ---- limits on contributions -------------------------------------------------------------

@pytest.fixture
def demo():
    cache.clear()
    archive_import_file(path=REPO / "evaluator" / "demo_archive" / "demo_archive.jsonl")
    verification_import_file(path=SHIPPED)
    return {kernel.name: kernel for kernel in Kernel.objects.select_related("task")}


@pytest.fixture
def contributor(client):
    """A signed-in user with a proven key of their own, credited as "Mallory"."""
    user, key = User.objects.create_user("mallory"), new_private_key()
    client.force_login(user)
    assert register_key(client, key, "Mallory").status_code == 201
    return user, key


def _upload(client, path: Path):
    with path.open("rb") as handle:
        return client.post("/api/verifications/contribute/", {"file": handle})


def test_the_daily_quota_and_the_size_cap_refuse_before_reading(demo, contributor, client, tmp_path, settings):
    _, key = contributor
    settings.CONTRIBUTION_DAILY_RECORDS = 1
    first = write_jsonl(tmp_path / "one.jsonl", [forged_pass(key, verified_at=NOW(), name="Mallory")])
    assert _upload(client, first).status_code == 200
    second = write_jsonl(tmp_path / "two.jsonl", [forged_pass(key, "relu_cached_by_pointer", verified_at=NOW())])
    response = _upload(client, second)
    assert response.status_code == 429 and response.json()["code"] == "quota_exceeded"
    assert "ARCHIVE_CONTRIBUTION_DAILY_RECORDS" in response.json()["errors"][0]["message"]
    settings.CONTRIBUTION_DAILY_RECORDS, settings.CONTRIBUTION_MAX_MB = 100, 1
    big = tmp_path / "big.jsonl"
    big.write_bytes(b"\n" * (2 * MB))
    response = _upload(client, big)
    assert response.status_code == 413 and "ARCHIVE_CONTRIBUTION_MAX_MB" in response.json()["errors"][0]["message"]
    assert Verification.objects.filter(origin="contributed").count() == 1


def test_uploads_are_rate_limited_per_user(client, tmp_path, settings):
    cache.clear()
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {
        **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "contribute": "2/hour"}}
    client.force_login(User.objects.create_user("mallory"))
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{}\n")
    assert [_upload(client, bad).status_code for _ in range(3)] == [400, 400, 429]
    client.force_login(User.objects.create_user("alice"))  # another user has a bucket of their own
    assert _upload(client, bad).status_code == 400


# ---- 2 and 3. a contributed record posed as the project's ---------------------------------

def _newest_table(client) -> str:
    cache.clear()
    html = client.get("/").content.decode()
    return html[html.index('id="newest-verifications"'):html.index("</table>", html.index('id="newest-verifications"'))]


def _export(client) -> bytes:
    return b"".join(client.get("/api/exports/", {"format": "jsonl", "include": "all"}).streaming_content)


def test_a_forged_pass_of_a_known_cheat_changes_neither_the_export_nor_the_home_page(demo, client, tmp_path):
    export_before, home_before = _export(client), _newest_table(client)
    client.force_login(User.objects.create_user("mallory"))
    key = new_private_key()
    # The project's name is reserved, in any case; the name the finding used is refused.
    for name in (PROJECT_NAME, PROJECT_NAME.upper(), f"  {PROJECT_NAME.replace(' ', '  ')} "):
        response = register_key(client, key, name)
        assert response.status_code == 400 and response.json()["detail"].startswith("owner_name:"), name
    assert register_key(client, key, "Mallory").status_code == 201
    # Dated 2099 as in the finding: refused, naming the field.
    response = _upload(client, write_jsonl(tmp_path / "2099.jsonl", [forged_pass(key, verified_at="2099-12-31T00:00:00Z")]))
    assert response.status_code == 400
    assert "verified_at '2099-12-31T00:00:00Z' is in the future" in response.json()["errors"][0]["message"]
    # Dated now it is taken, as a contribution: shown beside the site's results, leading nothing.
    response = _upload(client, write_jsonl(tmp_path / "now.jsonl", [forged_pass(key, verified_at=NOW())]))
    assert response.status_code == 200 and response.json()["by_origin"] == {"contributed": 1}
    assert _export(client) == export_before
    assert _newest_table(client) == home_before
    cheat = Kernel.objects.get(name="relu_stale_memory")
    assert (cheat.verdict, cheat.verified, cheat.remeasured_speedup_eager) == ("failed", False, None)
    page = client.get(f"/kernels/{cheat.id}/").content.decode()
    assert "verified by Mallory" in page and '<span class="badge">contribution</span>' in page


def test_a_contribution_is_dated_when_it_arrived_and_badged_where_it_leads(demo, contributor, client, tmp_path):
    """A kernel with no trusted run: its contribution is the export's latest, says so, and the
    home page lists it after every trusted run, badged."""
    _, key = contributor
    kernel = demo["relu_stale_memory"]
    Verification.objects.filter(kernel=kernel).delete()  # as staff deleting the project's run would
    response = _upload(client, write_jsonl(tmp_path / "old.jsonl", [forged_pass(key, verified_at="2026-01-01T00:00:00Z")]))
    assert response.status_code == 200, response.content
    run = Verification.objects.get(origin="contributed")
    assert run.claimed_at.isoformat() == "2026-01-01T00:00:00+00:00"
    # Received now: created and dated (finished_at) on arrival, not on the signer's word.
    assert timezone.now() - run.created_at < timedelta(minutes=5)
    assert abs(run.finished_at - run.created_at) < timedelta(minutes=1)
    row = next(json.loads(line) for line in _export(client).splitlines() if json.loads(line)["Kernel_ID"] == kernel.id)
    assert (row["Verification_Status"], row["Verification_Origin"], row["Verification_Verifier"], row["Verified"]) == (
        "passed", "contributed", "Mallory", False)
    # The home page lists every trusted run before it, and badges it where it shows.
    assert [v.origin for v in newest_verifications(limit=100)][-1] == "contributed"
    Verification.objects.exclude(origin="contributed").delete()
    assert '<span class="badge contribution">contribution</span> Mallory' in _newest_table(client)


def test_the_sites_own_record_cannot_come_back_through_the_contributors_door(demo, contributor, client, tmp_path):
    kernel = demo["relu_stale_memory"]
    Verification.objects.filter(kernel=kernel).delete()  # staff deleted the project's run
    trusted_line = next(line for line in SHIPPED.read_text().splitlines()
                        if json.loads(line)["kernel"]["name"] == "relu_stale_memory")
    records = tmp_path / "theirs.jsonl"
    records.write_text(trusted_line + "\n")
    response = _upload(client, records)
    assert response.status_code == 400
    assert "one of this site's trusted keys: the site's own results are not taken as contributions" in (
        response.json()["errors"][0]["message"])
    assert not Verification.objects.filter(kernel=kernel).exists()


def test_a_key_is_registered_only_with_proof_of_its_private_half(client):
    alice, mallory = User.objects.create_user("alice"), User.objects.create_user("mallory")
    alices_key = new_private_key()
    client.force_login(mallory)
    # Mallory posts Alice's published public key, signing the challenge with a key of her own.
    response = register_key(client, alices_key, "Alice", sign_with=new_private_key())
    assert response.status_code == 400 and response.json()["detail"].startswith("signature:")
    # A challenge issued to Alice does not serve Mallory, even signed by the right key.
    client.force_login(alice)
    challenge = client.get("/api/verifier-keys/challenge/").json()["challenge"]
    client.force_login(mallory)
    signature = base64.b64encode(alices_key.sign(challenge.encode())).decode()
    response = client.post("/api/verifier-keys/", {"public_key": public_key_text(alices_key.public_key()),
                                                   "challenge": challenge, "signature": signature})
    assert response.status_code == 400 and "issued to another user" in response.json()["detail"]
    response = client.post("/api/verifier-keys/", {"public_key": public_key_text(alices_key.public_key()),
                                                   "challenge": "forged:challenge", "signature": signature})
    assert response.status_code == 400 and "not one this site issued" in response.json()["detail"]
    client.force_login(alice)
    assert register_key(client, alices_key, "Alice").status_code == 201


def test_an_owner_name_belongs_to_its_first_user(client):
    client.force_login(User.objects.create_user("alice"))
    assert register_key(client, new_private_key(), "Alice Example").status_code == 201
    assert register_key(client, new_private_key(), "Alice Example").status_code == 201  # her second key
    client.force_login(User.objects.create_user("mallory"))
    response = register_key(client, new_private_key(), "alice EXAMPLE")
    assert response.status_code == 400 and "already another contributor's name" in response.json()["detail"]


# ---- typed checks: a mistyped field is a 400 naming it, never a 500 ------------------------

@pytest.mark.parametrize("field, value, named", [
    ("timings", "fast", "result.timings must be an object"),
    ("timings", {"candidate": ["0.1"]}, "result.timings.candidate"),
    ("speedup", [41.7], "result.speedup must be an object"),
    ("versions", ["H200"], "result.versions must be an object"),
    ("task_flags", ["stale_memory"], "result.task_flags[0]"),
    ("trials", [{"seed": "one"}], "result.trials[0].seed"),
    ("flags", [{"name": "x", "blocking": "yes"}], "result.flags[0].blocking"),
    ("device", {"cuda": 0}, "result.device must be text or null"),
])
def test_a_mistyped_result_field_is_a_400_naming_it(demo, contributor, client, tmp_path, field, value, named):
    _, key = contributor
    record = forged_pass(key, verified_at=NOW(), **{field: value})
    response = _upload(client, write_jsonl(tmp_path / "typed.jsonl", [record]))
    assert response.status_code == 400, response.content
    assert named in response.json()["errors"][0]["message"]


WRONG_VALUES = (None, 7, "text", [], {}, True, [1, "x"], {"a": [None]})


def _paths(value, prefix=()):
    """Every field of a record down to the third level, as key paths."""
    if isinstance(value, dict) and len(prefix) < 3:
        for key, item in value.items():
            yield prefix + (key,)
            yield from _paths(item, prefix + (key,))


def test_any_mistyped_field_is_refused_by_name_or_stored_and_shown_safely(demo, contributor, client):
    """Every field of a real record, each replaced by values of every JSON type: the import either
    refuses the record naming what is wrong, or stores it; then every page, the API and the
    export that show it still answer (a record that was stored but breaks a page is a 500 later)."""
    user, key = contributor
    base = shipped_record("relu_float4_grid_stride")
    stored, refused, crashed = 0, 0, []
    for path in [p for p in _paths(base) if p[0] not in ("signature", "verifier")]:
        for wrong in WRONG_VALUES:
            record = json.loads(json.dumps(base))
            target = record
            for step in path[:-1]:
                target = target[step]
            target[path[-1]] = wrong
            record.pop("signature")
            record["verifier"] = {"name": "Mallory", "key_id": base["verifier"]["key_id"]}
            try:
                signed = forged_record_signed(record, key)
                verification_import_records(records=[("fuzz line 1", signed)], contributor=user)
                stored += 1
            except Exception as exc:  # noqa: BLE001 - what is wrong must be a refusal naming a field
                if type(exc).__name__ != "VerificationImportError" or "fuzz line 1" not in str(exc):
                    crashed.append((".".join(path), repr(wrong), repr(exc)[:200]))
                refused += 1
    assert not crashed, crashed[:10]
    assert refused > 100 and stored > 0
    kernel = Kernel.objects.get(name="relu_float4_grid_stride")
    for url in (f"/kernels/{kernel.id}/", "/", f"/api/kernels/{kernel.id}/verifications/", "/leaderboard/"):
        assert client.get(url).status_code == 200, url
    assert _export(client)
    for run in Verification.objects.filter(origin="contributed")[:50]:
        assert client.get(f"/api/verifications/{run.id}/").status_code == 200


def forged_record_signed(record: dict, key) -> dict:
    from evaluator.verification_records import key_id_of, sign_record

    record["verifier"]["key_id"] = key_id_of(key.public_key())
    return sign_record(record, key)
