"""The verifier's core: this package is what a verification bundle ships and what the worker
runs (``python -m verifier.core.judge``). Everything in it ships, nothing outside it does (but
``verifier/__init__.py``, a docstring, so that the package imports): a bundle holds every
``*.py`` of this folder, found by listing it (``shipped_files``), and ``versions.harness_sha256``
is the sha256 over exactly those files, so what ran is what can be downloaded (docs/harness.md).
A module here imports only the modules beside it, the standard library, torch and numpy: no
Django, and nothing of the verifier outside this folder (tests/verifier/test_no_django.py).

The judge (judge.py) never runs candidate code; the runner (runner.py) does, confined, and
only reports evidence. result.py owns the document both produce.
"""

# Environment variables under their names of issue #36 (the verifier, its judge, its runner),
# each with the name it had before. The old names are read for one release (verifier/CHANGELOG.md,
# "Unreleased"): environ_get reads the new name, then the old one; whatever sets a variable sets
# the new one. The judge keeps the new names of its caller's environment (runner_start.py). After
# that release the old names go, with the prefixes KB_ and HARNESS_ that let them reach the judge.
RENAMED_VARIABLES = {
    "VERIFIER_BUILD_DIR": "KB_HARNESS_BUILD_DIR",
    "VERIFIER_TEST_BUILD_DIR": "KB_HARNESS_TEST_BUILD_DIR",
    "VERIFIER_PCH_DIR": "KB_HARNESS_PCH_DIR",
    "VERIFIER_NO_CPU_CACHING_ALLOCATOR": "KB_HARNESS_NO_CPU_CACHING_ALLOCATOR",
    "VERIFIER_LINT_CACHE_DIR": "KB_LINT_CACHE_DIR",
    "VERIFIER_DEVICE_LOCK_DIR": "KB_DEVICE_LOCK_DIR",
    "VERIFIER_TIMING_CPUS": "KB_TIMING_CPUS",
    "JUDGE_SERVER_SOCKET": "KB_JUDGE_SERVER",
    "JUDGE_STAGE_FILE": "HARNESS_STAGE_FILE",
    "CHEAT_SUITE_JOBS": "KB_CHEAT_SUITE_JOBS",
}


def environ_get(name: str, default: str | None = None) -> str | None:
    """os.environ.get for a variable of RENAMED_VARIABLES: its new name, else its old one, else
    ``default``. Any other name is read as it is."""
    from os import environ  # imported here: this module imports nothing when the package loads

    value = environ.get(name)
    if value is None and name in RENAMED_VARIABLES:
        value = environ.get(RENAMED_VARIABLES[name])
    return default if value is None else value


def environ_names(name: str) -> tuple[str, ...]:
    """The names a variable is read under (the new one and, while it is read, its old one, given
    either): what to remove to unset it, or to keep it from a child process."""
    for new, old in RENAMED_VARIABLES.items():
        if name in (new, old):
            return new, old
    return (name,)


def shipped_files(verifier_dir: str | None = None) -> list[str]:
    """The verifier's files a bundle ships and ``versions.harness_sha256`` covers, as paths under
    ``verifier_dir`` (the folder of the package ``verifier``; this one's by default), sorted: its
    ``__init__.py`` and every module of ``core/``, found by listing the folder."""
    import os  # imported here, as in environ_get

    if verifier_dir is None:
        verifier_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    core = os.path.join(verifier_dir, "core")
    modules = [name for name in os.listdir(core) if name.endswith(".py") and name[:-3].isidentifier()
               and os.path.isfile(os.path.join(core, name))]
    return sorted(["__init__.py"] + ["core/" + name for name in modules])
