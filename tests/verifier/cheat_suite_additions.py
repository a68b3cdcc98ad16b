"""Which cheat-suite entries later harnesses added (verifier/cheat_suite/manifest.json), so that a
GPU run recorded before them is compared with the suite as it stood then."""
from .cheat_suite_halves import ENTRIES

# The GPU-only entries of harness 2.3.0's kernel-time clock: their H200 results are in
# tests/fixtures/h200/kernel_time_2_3_0.json (tests/verifier/test_kernel_time.py).
ADDED_WITH_KERNEL_TIME = {"honest_waits_inside_cu", "kernel_time_forge_py"}
# Harness 2.6.0's early launches and the honest kernels of their size: their H200 results are in
# tests/fixtures/h200/judge_2_6_0_outside_work.json (tests/verifier/test_outside_work.py).
ADDED_WITH_OUTSIDE_WORK = {e["name"] for e in ENTRIES if e.get("family") == "work_outside_call" or
                           e["task"] in ("matmul_512", "relu_small")}
