"""The verification's wall-clock budget: every verification ends within it, whatever the kernel does.

The budget counts from the moment the runner says the candidate is loaded (its build has a limit
of its own, ``--runner-timeout``), less the time spent waiting for the device (other kernels'
timings on a shared GPU are not this kernel's doing) and the reference's first timed calls (its
torch.compile): correctness trials, probes, timing and the floors share ``total_s``, and any one
request to the runner gets at most ``request_s`` of it. Both grow with the task's inputs and
outputs (``allow_for_task``): the verifier's own checks pass over every output element several
times a call, so a task with 1 GB of output costs the verifier, not the kernel, most of a minute
a trial (docs/decisions/verification-budget.md). A kernel that
runs a step past either bound fails with a blocking flag that names the step, never a pass:
``verification_budget_exhausted`` when the whole budget is spent, ``probe_budget_exhausted``
when one request ran past its own bound. The timing loop ends early, with the rounds it has,
when too little of the budget is left for more (judge_timing.py).
"""
from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING

from .result import flag

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

DEFAULT_BUDGET_S = {"cuda": 90.0, "cpu": 180.0}
DEFAULT_PROBE_BUDGET_S = {"cuda": 45.0, "cpu": 90.0}
# What the steps after timing (the bandwidth and compute floors, the runner's end) need.
RESERVE_S = 5.0
# Seconds added per GB of the task's inputs and outputs, to the whole budget and to one request.
PER_GB_S = 180.0
PER_GB_REQUEST_S = 60.0
# Steps named as the judge's stage names them, in words a reader of the evidence knows.
STEP_WORDS = {"candidate_call": "the correctness trials", "runner_probes": "the probes", "timing_setup":
              "the timing set-up", "timing": "the timing", "floors": "the bandwidth and compute floors"}


class BudgetExhausted(Exception):
    """Raised by the judge's own loops when the budget ran out; carries the flag."""

    def __init__(self, entry: dict[str, Any]) -> None:
        super().__init__(entry["evidence"])
        self.flag = entry


class Budget:
    def __init__(self, total_s: float, request_s: float, clock: Callable[[], float] = time.monotonic,
                 uncounted: Callable[[], float] = lambda: 0.0) -> None:
        self.total_s, self.request_s, self.clock = float(total_s), float(request_s), clock
        self.uncounted = uncounted  # seconds waited for the device so far
        self.excluded_s = 0.0  # the reference's own first calls
        self.task_allowance_s = None
        self.started = self.uncounted_at_start = None
        self.step = "candidate_load"
        self.ran_out = None  # the step whose request was cut short by the budget

    @classmethod
    def for_device(cls, device: str, total_s: float | None = None, request_s: float | None = None) -> Budget:
        total = DEFAULT_BUDGET_S[device] if total_s is None else total_s
        request = DEFAULT_PROBE_BUDGET_S[device] if request_s is None else request_s
        return cls(total, min(request, total))

    def start(self) -> None:
        self.started, self.uncounted_at_start = self.clock(), self.uncounted()

    def spent(self) -> float:
        if self.started is None:
            return 0.0
        return self.clock() - self.started - (self.uncounted() - self.uncounted_at_start) - self.excluded_s

    def allow_for_task(self, nbytes: int) -> None:
        """Once, from the task's own inputs and outputs (never the kernel's): more time for the
        checks that scale with them."""
        if self.task_allowance_s is None:
            gb = nbytes / 1e9
            self.task_allowance_s = round(PER_GB_S * gb, 1)
            self.total_s += PER_GB_S * gb
            self.request_s += PER_GB_REQUEST_S * gb

    @contextlib.contextmanager
    def not_counted(self) -> Iterator[None]:
        """Time that is the reference's (its torch.compile), not the kernel's."""
        t0 = self.clock()
        try:
            yield
        finally:
            self.excluded_s += self.clock() - t0

    def remaining(self) -> float:
        return float("inf") if self.started is None else self.total_s - self.spent()

    def request_timeout(self, default_s: float) -> float:
        """The bound on one request: the runner's own timeout before the budget starts, then the
        least of it, the per-request budget and what is left of the whole."""
        if self.started is None:
            return default_s
        return max(0.001, min(default_s, self.request_s, self.remaining()))

    def bounded_by_budget(self, timeout_s: float, default_s: float) -> bool:
        """Was a request's bound the budget's rather than the runner's own timeout?"""
        return self.started is not None and timeout_s < default_s

    def exhausted_flag(self, detail: str = "", whole: bool | None = None) -> dict:
        """The flag for the step now running: the whole budget's when it is spent (or ``whole``),
        else the one request's."""
        words = STEP_WORDS.get(self.step, self.step)
        if whole or (whole is None and self.remaining() <= 0.01):
            name = "verification_budget_exhausted"
            what = ("the verification's %.0f s budget ran out" if self.remaining() <= 0.01 else
                    "too little was left of the verification's %.0f s budget") % self.total_s
        else:
            name, what = "probe_budget_exhausted", "one request to the runner ran past its %.0f s budget" % \
                self.request_s
        return flag(name, True, "during %s: %s after %.1f s%s (the kernel was stopped; a kernel must finish every "
                    "step within the budget to be judged)" % (words, what, self.spent(), "; " + detail if detail else ""),
                    source="judge", step=self.step)

    def report(self) -> dict:
        return {"budget_s": round(self.total_s, 1), "probe_budget_s": round(self.request_s, 1),
                "task_allowance_s": self.task_allowance_s, "not_counted_s": round(self.excluded_s, 3),
                "spent_s": round(self.spent(), 3), "last_step": self.step, "ran_out_in": self.ran_out}
