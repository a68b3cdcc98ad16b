"""The verifier: decides whether a machine-generated kernel is correct and how fast it is, and
catches the known ways kernels fake either. No Django here: the worker runs it in a
subprocess and every verification bundle ships it (docs/harness.md).

The judge (judge.py) never runs candidate code; the runner (runner.py) does, confined, and
only reports evidence. result.py owns the document both produce.
"""

# Modules a verification needs, shipped in every bundle (bundle.py) and hashed into
# versions.harness_sha256: what ran is what can be downloaded.
SHIPPED_MODULES = ("__init__", "analysis", "build", "build_pch", "channel", "checks", "compute_floor",
                   "confine", "device_lock", "guard", "inputs", "judge", "judge_budget", "judge_clocks",
                   "judge_options", "judge_outputs", "judge_server", "judge_timing", "kernel_time", "memory",
                   "outside_work", "process_limits", "result", "runner", "runner_process", "runner_session",
                   "runner_start", "sandbox", "shared_baseline", "static_scan", "timed_outputs", "timing",
                   "timing_report", "timing_setup", "trials")

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
