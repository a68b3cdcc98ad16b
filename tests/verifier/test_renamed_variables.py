"""The verifier's environment variables under one name each (issue #36, verifier/CHANGELOG.md):
``environ_get`` reads the new name, then the old one for one release, and nothing outside the
places that name the aliases still uses an old name."""
import os
import re
from pathlib import Path

import pytest

from archive_site import env as site_env
from verifier.core import RENAMED_VARIABLES, environ_get, environ_names

ROOT = Path(__file__).resolve().parents[2]

# The Django setting renamed with ARCHIVE_VERIFY_HARNESS_ARGS (no alias: only this repository reads it).
OLD_NAMES = sorted(set(RENAMED_VARIABLES.values()) | set(site_env.RENAMED.values()) | {"VERIFY_HARNESS_ARGS"})

# Files that name the old names on purpose: the mappings, the changelog's table, this test.
ALIAS_FILES = {"verifier/core/__init__.py", "verifier/CHANGELOG.md", "archive_site/env.py",
               "tests/verifier/test_renamed_variables.py"}
# Dated logs: they record what ran then, under the names of then.
DATED_LOGS = ("docs/worker_runs.md", "docs/h200_runs.md", "docs/decisions/")
# A document names the alias once, where it introduces the variable: "formerly `KB_...`".
ALIAS_MENTION = r"formerly `\$?"

SCANNED_SUFFIXES = (".py", ".sh", ".md")
PRUNED_DIRS = {"__pycache__", "node_modules"}
PRUNED_TOP = {"artifacts", "data"}  # git-ignored outputs


@pytest.fixture
def clean(monkeypatch):
    for new, old in RENAMED_VARIABLES.items():
        monkeypatch.delenv(new, raising=False)
        monkeypatch.delenv(old, raising=False)
    return monkeypatch


@pytest.mark.parametrize("new, old", sorted(RENAMED_VARIABLES.items()))
def test_environ_get_reads_the_new_name_then_the_old_one(clean, new, old):
    assert environ_get(new) is None and environ_get(new, "default") == "default"
    clean.setenv(new, "from-new")
    assert environ_get(new) == "from-new"
    clean.delenv(new)
    clean.setenv(old, "from-old")
    assert environ_get(new) == "from-old"
    clean.setenv(new, "from-new")
    assert environ_get(new, "default") == "from-new"
    clean.setenv(new, "")  # set empty is set: the old name is not read
    assert environ_get(new, "default") == ""
    assert environ_names(new) == environ_names(old) == (new, old)


def test_a_name_that_was_not_renamed_is_read_as_it_is(clean):
    clean.setenv("VERIFIER_TEST_UNRENAMED", "x")
    assert environ_get("VERIFIER_TEST_UNRENAMED") == "x" and environ_get("VERIFIER_TEST_UNSET", "d") == "d"
    assert environ_names("VERIFIER_TEST_UNRENAMED") == ("VERIFIER_TEST_UNRENAMED",)


def test_the_mapping_is_one_to_one_and_every_pair_is_in_the_changelog():
    assert len(set(RENAMED_VARIABLES.values())) == len(RENAMED_VARIABLES)
    assert not set(RENAMED_VARIABLES) & set(RENAMED_VARIABLES.values())
    changelog = (ROOT / "verifier" / "CHANGELOG.md").read_text()
    for new, old in list(RENAMED_VARIABLES.items()) + list(site_env.RENAMED.items()):
        assert re.search(r"^  \| `%s`[^|]*\| `%s`" % (old, new), changelog, re.M), (old, new)


def _scanned_files():
    for folder, dirs, files in os.walk(ROOT):
        here = Path(folder)
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in PRUNED_DIRS
                   and not (here == ROOT and d in PRUNED_TOP)]
        for name in files:
            if name.endswith(SCANNED_SUFFIXES) or name == "Makefile":
                yield here / name


def test_no_file_uses_an_old_name_outside_the_alias_places():
    old = re.compile(r"(?<![A-Za-z0-9_])(%s)(?![A-Za-z0-9_])" % "|".join(map(re.escape, OLD_NAMES)))
    mention = re.compile(ALIAS_MENTION + r"$")
    found = []
    for path in _scanned_files():
        relative = path.relative_to(ROOT).as_posix()
        if relative in ALIAS_FILES or relative.startswith(DATED_LOGS):
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            for match in old.finditer(line):
                if relative.endswith(".md") and mention.search(line[:match.start()]):
                    continue
                found.append("%s:%d: %s" % (relative, number, match.group(1)))
    assert found == [], "\n".join(found)

