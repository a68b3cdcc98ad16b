"""Stand-ins for timing on two clocks on the CPU (test_timing_clocks.py, test_kernel_time.py): a
task, a model that takes HOST_MS a call, a stand-in for the GPU-time caller, an in-process stand-in
for the runner that can forge its reports, the `two_clocks` fixture that puts the CUDA clocks on
the CPU, and the real judge loop (verifier/core/judge_timing.py) run over a runner. A test module that
uses `two_clocks` imports it from here (`# noqa: F401`: a fixture)."""
import contextlib
import time

import pytest
import torch

from verifier.core import judge_timing, kernel_time, timing, timing_report, timing_setup
from verifier.core import inputs as inp

HOST_MS = 20.0  # every call's own time: long beside this loaded 2-core host's scheduling noise (~4 ms)


class Task:
    """A task module: one 64x64 input, output 2x."""

    @staticmethod
    def get_inputs():
        return [torch.randn(64, 64)]


class Doubler(torch.nn.Module):
    def forward(self, x):
        time.sleep(HOST_MS / 1e3)
        return x * 2


class StandInQueuedCaller:
    """The GPU-time caller's contract (timing.Clock) on the CPU: a wait the figure leaves out (the
    spin; at most 1 ms here), then the call, timed; host time around both; launch hidden."""

    clock = "gpu_time"
    profiling = False

    def __init__(self, device, spin_us, flusher=None):
        self.device, self.spin_us = device, spin_us

    def prepare(self):
        pass

    def batch(self):
        return contextlib.nullcontext()

    def finish(self, answer):
        return answer

    def call(self, fn, inputs):
        h0 = time.perf_counter()
        time.sleep(min(self.spin_us, 1000.0) / 1e6)
        t0 = time.perf_counter()
        with torch.no_grad():
            out = fn(inputs)
        t1 = time.perf_counter()
        return timing.CallResult(out, (t1 - t0) * 1e3, (t1 - h0) * 1e3, (t1 - h0) * 1e3, True)


class FakeRunner:
    """Answers the judge's timing requests as verifier/core/runner.py does, in this process; ``forge``
    rewrites a batch's answer (clock name, answer, outputs kept) before it goes back."""

    queued_caller = StandInQueuedCaller

    def __init__(self, fn, forge=None):
        self.fn, self.forge, self.clocks_asked, self.outputs, self.prepared = fn, forge, [], [], None

    def frozen(self):
        return contextlib.nullcontext()

    def caller_for(self, clock):
        if clock.get("clock") == "gpu_time":
            caller = self.queued_caller("cpu", clock.get("spin_us"))
            return kernel_time.QueuedBusyCaller(caller) if clock.get("busy") is True else caller
        if clock.get("clock") == "kernel_time":
            return kernel_time.KernelTimeCaller("cpu")
        return timing.TimedCaller("cpu")

    def request(self, kind, values=None, tensors=(), expect=None):
        values = values or {}
        if kind == "timing_setup":
            self.make = lambda seed: inp.make_timing_inputs(Task, seed, "cpu", values["inputs_on_device"])
            self.weights = timing.FingerprintWeights(values["weight_seed"], "cpu")
            return {}, []
        if kind == "prepare":  # a profiled clock's batch: its profile starts before the batch's seeds come
            self.prepared = self.caller_for(values.get("clock") or {})
            self.prepared.prepare()
            return {}, []
        if kind == "batch":
            self.clocks_asked.append(dict(values["clock"]) if values.get("clock") else None)  # as sent, not as mutated
            caller, self.prepared = self.prepared or self.caller_for(values.get("clock") or {}), None
            self.outputs = []
            answer = timing.run_batch(self.fn, self.make, values["calls"], caller, self.weights, keep=self.outputs)
            answer["clock"] = caller.clock  # as the runner's time_batch says which clock it used
            self.kernel_batch = (caller, list(answer["ms"])) if caller.profiling else None
            if self.forge:
                self.forge(caller.clock, answer, self.outputs)
            return answer, []
        if kind == "kernel_times":  # a profiled batch's figures, asked for after the batch
            caller, ms = self.kernel_batch
            figures = caller.finish({"ms": ms})
            if self.forge:
                self.forge("kernel_times", figures, None)
            return figures, []
        if kind == "fetch":
            leaves = self.outputs[values["index"]]
            return {"leaves": [{"tensor": i} for i in range(len(leaves))]}, [t.clone() for t in leaves]
        raise AssertionError("unexpected request %r" % kind)


class NoHold:
    @contextlib.contextmanager
    def alone(self):
        yield


@pytest.fixture
def two_clocks(monkeypatch):
    """The CUDA clocks, on the CPU: the stand-in caller for GPU time, small batches; the CPU's
    allowance for unaccounted time (5 ms or 100 % of the median) absorbs this host's noise."""
    monkeypatch.setattr(timing_report, "clocks_for", lambda device: ("gpu_time", "end_to_end"))
    monkeypatch.setattr(timing, "QueuedLaunchCaller", StandInQueuedCaller)
    monkeypatch.setattr(timing_setup, "MAX_BATCH", 4)


def run_timing(runner):
    model = Doubler()
    return judge_timing.time_candidate(
        runner=runner, ref_model=model, ref_mod=Task, device="cpu", tol={"abs": 1e-2, "rel": 1e-3},
        budget_s=1.0, compile_baseline=False, rse_target=None, start_delay_us=None,
        hold=NoHold())
