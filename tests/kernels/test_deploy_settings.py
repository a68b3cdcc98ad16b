"""`manage.py check --deploy` with production settings, run as an operator would: a fresh
process with DJANGO_DEBUG=0, a real secret key and the allowed hosts from the environment."""
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def run_in_production_env(tmp_path, *args, **env):
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith(("DJANGO_", "ARCHIVE_", "DATABASE_URL", "REDIS_URL"))}
    environment.update({"DJANGO_SETTINGS_MODULE": "archive_site.settings", "DJANGO_DEBUG": "0",
                        "DJANGO_SECRET_KEY": secrets.token_urlsafe(64),
                        "DJANGO_ALLOWED_HOSTS": "kernels.example.org",
                        "ARCHIVE_SITE_URL": "https://kernels.example.org",
                        "ARCHIVE_DATA_DIR": str(tmp_path / "data")})
    environment.update(env)
    environment = {key: value for key, value in environment.items() if value is not None}
    return subprocess.run([sys.executable, *args], cwd=REPO, env=environment, capture_output=True,
                          text=True, timeout=180)


def test_check_deploy_is_clean_with_production_settings(tmp_path):
    result = run_in_production_env(tmp_path, "manage.py", "check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout, result.stdout + result.stderr
    assert "WARNINGS" not in result.stderr + result.stdout


def test_check_deploy_flags_the_development_key_and_plain_http(tmp_path):
    result = run_in_production_env(tmp_path, "manage.py", "check", "--deploy", "--fail-level", "WARNING",
                                   DJANGO_SECRET_KEY=None)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "archive.W001" in output and "DJANGO_SECRET_KEY" in output
    assert "security.W008" in output  # no SSL redirect without a real key: not production


PRINT_SETTINGS = (
    "import django, json; django.setup(); from django.conf import settings as s; print(json.dumps({k: getattr(s, k, None) "
    "for k in ['DEBUG', 'SECURE_SSL_REDIRECT', 'SESSION_COOKIE_SECURE', 'CSRF_COOKIE_SECURE', 'SECURE_HSTS_SECONDS', "
    "'SECURE_PROXY_SSL_HEADER', 'X_FRAME_OPTIONS', 'ARCHIVE_MAX_UPLOAD_MB', 'FILE_UPLOAD_MAX_MEMORY_SIZE']}))"
)


def production_settings(tmp_path, **env) -> dict:
    import json

    result = run_in_production_env(tmp_path, "-c", PRINT_SETTINGS, **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_production_settings_are_https_only_and_env_controllable(tmp_path):
    prod = production_settings(tmp_path)
    assert prod["DEBUG"] is False and prod["SECURE_SSL_REDIRECT"] is True
    assert prod["SESSION_COOKIE_SECURE"] is True and prod["CSRF_COOKIE_SECURE"] is True
    assert prod["SECURE_HSTS_SECONDS"] >= 31536000 and prod["X_FRAME_OPTIONS"] == "DENY"
    assert prod["SECURE_PROXY_SSL_HEADER"] is None  # X-Forwarded-Proto is not trusted by default
    assert prod["ARCHIVE_MAX_UPLOAD_MB"] == 200 and prod["FILE_UPLOAD_MAX_MEMORY_SIZE"] <= 2_621_440

    behind_proxy = production_settings(tmp_path, DJANGO_SECURE_PROXY_SSL_HEADER="1",
                                       DJANGO_SECURE_SSL_REDIRECT="0", ARCHIVE_MAX_UPLOAD_MB="50")
    assert behind_proxy["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    assert behind_proxy["SECURE_SSL_REDIRECT"] is False and behind_proxy["SESSION_COOKIE_SECURE"] is True
    assert behind_proxy["ARCHIVE_MAX_UPLOAD_MB"] == 50


@pytest.mark.django_db
def test_production_redirects_plain_http_and_sends_hsts_over_https(settings, client):
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 31536000
    settings.ALLOWED_HOSTS = ["kernels.example.org"]
    plain = client.get("/api/tasks/", HTTP_HOST="kernels.example.org")
    assert plain.status_code == 301 and plain["Location"] == "https://kernels.example.org/api/tasks/"
    secure = client.get("/api/tasks/", HTTP_HOST="kernels.example.org", secure=True)
    assert secure.status_code == 200 and secure["Strict-Transport-Security"].startswith("max-age=31536000")
