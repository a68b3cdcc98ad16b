"""One reader of the environment for settings (archive_site/env.py), one boolean rule; no product
module outside it reads the site's configuration from os.environ."""
import ast
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from archive_site import env

ROOT = Path(__file__).resolve().parents[1]
# Variables that are not the site's settings: a library's, the process's (docs in archive_site/env.py).
NOT_SETTINGS = {"HF_TOKEN", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "CUDA_VISIBLE_DEVICES",
                "DJANGO_SETTINGS_MODULE"}


@pytest.mark.parametrize("value, expected", [("1", True), ("true", True), (" Yes ", True), ("ON", True),
                                             ("0", False), ("false", False), ("no", False), ("off", False),
                                             ("", False)])
def test_one_boolean_rule(monkeypatch, value, expected):
    monkeypatch.setenv("ARCHIVE_TEST_FLAG", value)
    assert env.boolean("ARCHIVE_TEST_FLAG", not expected) is expected


def test_a_boolean_it_cannot_read_stops_the_start_naming_the_variable(monkeypatch):
    monkeypatch.setenv("ARCHIVE_TEST_FLAG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="ARCHIVE_TEST_FLAG='maybe'"):
        env.boolean("ARCHIVE_TEST_FLAG", True)
    monkeypatch.delenv("ARCHIVE_TEST_FLAG")
    assert env.boolean("ARCHIVE_TEST_FLAG", True) is True


def test_numbers_lists_and_paths(monkeypatch):
    monkeypatch.setenv("ARCHIVE_TEST_N", "12")
    monkeypatch.setenv("ARCHIVE_TEST_LIST", " a, ,b ")
    assert env.integer("ARCHIVE_TEST_N", 3) == 12 and env.number("ARCHIVE_TEST_N", 1.0) == 12.0
    assert env.comma_list("ARCHIVE_TEST_LIST") == ["a", "b"]
    assert env.integer("ARCHIVE_TEST_UNSET", 3) == 3 and str(env.path("ARCHIVE_TEST_UNSET", "/x")) == "/x"
    monkeypatch.setenv("ARCHIVE_TEST_N", "twelve")
    with pytest.raises(ImproperlyConfigured, match="ARCHIVE_TEST_N"):
        env.integer("ARCHIVE_TEST_N", 3)


def _environment_reads(path: Path):
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            target = node.func.value
            reads = (node.func.attr in ("get", "setdefault") and isinstance(target, ast.Attribute)
                     and target.attr == "environ") or node.func.attr == "getenv"
            if reads and isinstance(node.args[0], ast.Constant):
                yield node.lineno, node.args[0].value


def test_settings_are_read_only_through_the_reader():
    found = []
    for package in ("kernels", "search", "evaluator", "archive_site", "web", "accounts"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == ROOT / "archive_site" / "env.py":
                continue
            found += [f"{path.relative_to(ROOT)}:{line} reads {name}" for line, name in _environment_reads(path)
                      if name not in NOT_SETTINGS]
    assert found == []


@pytest.mark.parametrize("value", ["kernels.example.org", "ftp://kernels.example.org", "https://", "https://a.org/path",
                                   "https://a.org/?q=1"])
def test_a_site_url_that_is_not_one_stops_the_start(monkeypatch, value):
    monkeypatch.setenv("ARCHIVE_TEST_URL", value)
    with pytest.raises(ImproperlyConfigured, match="ARCHIVE_TEST_URL"):
        env.site_url("ARCHIVE_TEST_URL", "http://127.0.0.1:8000")


def test_a_site_url_loses_its_final_slash(monkeypatch):
    monkeypatch.setenv("ARCHIVE_TEST_URL", "https://kernels.example.org/")
    assert env.site_url("ARCHIVE_TEST_URL", "http://x") == "https://kernels.example.org"
    monkeypatch.delenv("ARCHIVE_TEST_URL")
    assert env.site_url("ARCHIVE_TEST_URL", "http://127.0.0.1:8000") == "http://127.0.0.1:8000"


@pytest.mark.parametrize("new, old", sorted(env.RENAMED.items()))
def test_a_renamed_setting_is_read_under_its_new_name_then_its_old_one(monkeypatch, new, old):
    monkeypatch.delenv(new, raising=False)
    monkeypatch.delenv(old, raising=False)
    assert not env.is_set(new) and env.text(new, "default") == "default"
    monkeypatch.setenv(old, "--from-old")
    assert env.is_set(new) and env.text(new) == "--from-old" and env.comma_list(new) == ["--from-old"]
    monkeypatch.setenv(new, "--from-new")
    assert env.text(new) == "--from-new"
    monkeypatch.setenv(new, "")  # set empty is set: the old name is not read
    assert env.text(new, "default") == ""
