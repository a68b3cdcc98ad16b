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
                   "runner_start", "sandbox", "shared_baseline", "static_scan", "timing", "timing_report",
                   "trials")
