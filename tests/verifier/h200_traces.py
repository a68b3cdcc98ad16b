"""A real H200 profiler trace (tests/fixtures/h200/kineto_waiting_calls.json) as the kernel-time
clock reads it (test_kernel_time.py, test_outside_work.py)."""
import json

from tests.conftest import H200_FIXTURES
from verifier.core import kernel_time


def h200_trace():
    """The probe's three calls, their ranges renamed to the labels the caller gives."""
    events = json.loads((H200_FIXTURES / "kineto_waiting_calls.json").read_text())["events"]
    for e in events:
        if e["name"].startswith("kb_call_"):
            e["name"] = kernel_time.LABEL % int(e["name"].rsplit("_", 1)[1])
    return events
