"""What torch.profiler (kineto, CUPTI) records for a call on this GPU: every event's name, kind,
times and correlation ids, for calls made of aten ops, a raw launch with no aten op around it
(torch.cuda._sleep), a synchronize inside the call (.item()), a side stream and a host copy.
Writes JSON to argv[1]. Used to design the kernel-time clock (verifier/kernel_time.py)."""
import json
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile, record_function


def call(x, s):
    y = torch.relu(x @ x)
    torch.cuda._sleep(20000)
    v = float(y.sum().item())  # waits for the device inside the call
    with torch.cuda.stream(s):
        z = x * 2.0
    torch.cuda.current_stream().wait_stream(s)
    w = (y + z).cpu()
    return v, w


FIELDS = ("name", "device_type", "start_ns", "duration_ns", "correlation_id", "linked_correlation_id",
          "device_index", "device_resource_id", "is_user_annotation", "start_thread_id", "is_async", "external_id")


def dump(e):
    found = {}
    for name in FIELDS:
        try:
            value = getattr(e, name)()
            found[name] = value if isinstance(value, (int, float, bool, str)) else str(value)
        except Exception as exc:  # not every torch has every field
            found[name] = "unavailable: %s" % type(exc).__name__
    return found


def main():
    out = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name()}
    x = torch.randn(1024, 1024, device="cuda")
    s = torch.cuda.Stream()
    call(x, s)
    torch.cuda.synchronize()
    costs = []
    for _ in range(3):
        t0 = time.perf_counter()
        p = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        p.__enter__()
        t1 = time.perf_counter()
        for i in range(3):
            with record_function("kb_call_%d" % i):
                call(x, s)
            torch.cuda.synchronize()
        t2 = time.perf_counter()
        p.__exit__(None, None, None)
        t3 = time.perf_counter()
        evs = p.profiler.kineto_results.events()
        t4 = time.perf_counter()
        costs.append({"start_ms": (t1 - t0) * 1e3, "calls_ms": (t2 - t1) * 1e3, "stop_ms": (t3 - t2) * 1e3,
                      "events_ms": (t4 - t3) * 1e3, "n_events": len(evs)})
    out["costs"] = costs
    out["events"] = [dump(e) for e in evs]
    # Profiler started without CPU activity: are annotations and runtime calls still there?
    p = profile(activities=[ProfilerActivity.CUDA])
    with p:
        with record_function("kb_cuda_only"):
            call(x, s)
        torch.cuda.synchronize()
    out["cuda_only_events"] = [dump(e) for e in p.profiler.kineto_results.events()]
    json.dump(out, open(sys.argv[1], "w"), indent=1)
    print("events", len(out["events"]), "cuda-only", len(out["cuda_only_events"]), "costs", costs)


main()
