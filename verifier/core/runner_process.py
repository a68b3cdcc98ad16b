"""The judge's handle on the runner process: start it confined, ask it one thing at a time
within a deadline, and turn every way it can misbehave (dying, hanging, writing what was not
asked for, exiting early, leaving processes behind) into a named, blocking flag."""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading

from . import confine
from . import runner_start
from .channel import Channel, ChannelClosed, ProtocolError
from .result import flag

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing: no module only for annotations
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Any

    import torch

    from .judge_budget import Budget

_SIGNAL_FLAGS = {"SIGSEGV": "segfault", "SIGBUS": "segfault", "SIGABRT": "aborted", "SIGKILL": "killed",
                 "SIGXCPU": "cpu_time_limit", "SIGFPE": "arithmetic_fault", "SIGILL": "illegal_instruction"}
LOG_LIMIT = 30000
_CANDIDATE_FAILURES = {"runtime_error", "out_of_memory", "illegal_memory_access"}


class RunnerFailure(Exception):
    """The runner misbehaved or died; carries the flag that says how."""

    def __init__(self, name: str, evidence: str, entry: dict[str, Any] | None = None) -> None:
        super().__init__(evidence)
        self.flag = entry or flag(name, True, evidence, source="judge")


class CandidateRaised(Exception):
    """The candidate raised inside the runner (evidence: the runner's own report)."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.flag = flag(name, True, "the candidate raised: %s" % message[-1500:], source="runner")


def _signal(pid, sig):
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def protected_pids() -> list[int]:
    """This process and its ancestors: the runner may signal none of them."""
    pids, pid = [], os.getpid()
    while pid > 1 and len(pids) < 6:
        pids.append(pid)
        try:
            with open("/proc/%d/stat" % pid) as fh:
                pid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids


class RunnerProcess:
    def __init__(self, *, setup: dict[str, Any], build_dir: str, request_timeout_s: float,
                 budget: Budget | None = None) -> None:
        self.request_timeout_s = request_timeout_s
        self.budget = budget  # judge_budget.Budget: bounds every request once the candidate is loaded
        self.setup = dict(setup, build_dir=build_dir, protected_pids=protected_pids())
        self.scratch = None
        self.proc = None
        self.channel = None
        self.next_id = 1
        self.log_chunks = []
        self.log_bytes = 0
        self.last_flags = []
        self.escaped = []
        self.finished = False

    # --- life cycle ------------------------------------------------------------------------

    def start(self) -> None:
        """Take the runner the judge started early (verifier/core/runner_start.py) or start one, and
        send it its setup: from here on it holds the candidate."""
        spawned = runner_start.take(self.setup["device"])
        self.proc, self.scratch, self.known_children = spawned.proc, spawned.scratch, spawned.known_children
        self.setup.update(scratch_dir=self.scratch, writable_dirs=[self.scratch, self.setup["build_dir"]])
        self.channel = Channel(spawned.read_fd, spawned.write_fd, nonblocking=True)
        self._log_thread = threading.Thread(target=self._collect_log, daemon=True)
        self._log_thread.start()
        self.channel.send({"type": "setup", "id": 0}, values=self.setup, timeout=self.request_timeout_s)

    def _collect_log(self):
        # The runner's stdout and stderr (compiler output, the candidate's prints): kept, bounded.
        for chunk in iter(lambda: self.proc.stdout.read1(65536), b""):
            self.log_chunks.append(chunk)
            self.log_bytes += len(chunk)
            while self.log_bytes > 4 * LOG_LIMIT and len(self.log_chunks) > 1:
                self.log_bytes -= len(self.log_chunks.pop(0))

    def log(self) -> str:
        return b"".join(self.log_chunks).decode("utf-8", "replace")[-LOG_LIMIT:]

    def stop(self) -> tuple[tuple[dict[str, Any], list[torch.Tensor]] | None, list[dict[str, Any]]]:
        """Ask it to finish if it is still serving, make sure it and everything it started is
        gone, and report processes that outlived it. Returns (finish answer or None, flags)."""
        answer, flags = None, []
        if self.proc is None:
            return answer, flags
        if self.proc.poll() is None and not self.finished:
            try:
                answer = self.request("finish", expect="finished", timeout=60)
            except (RunnerFailure, CandidateRaised) as exc:
                flags.append(exc.flag)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            flags.append(flag("tampering", True, "the runner did not exit within 10 s of its last answer",
                              source="judge"))
        self._kill()
        code = self.proc.returncode
        if answer is not None and code not in (0, None):
            flags.append(flag("tampering", True, "the runner exited with status %s after finishing (expected 0)"
                              % code, source="judge"))
        if answer is not None and self._drain():
            flags.append(flag("tampering", True, "the runner wrote to the judge's channel after its last answer",
                              source="judge"))
        self.escaped = confine.reap_orphans(known=self.known_children)
        if self.escaped:
            flags.append(flag("escaped_process", True, "processes started by the runner outlived it and were "
                              "killed: %s" % "; ".join(self.escaped), source="judge"))
        self._log_thread.join(timeout=2)
        for fd in (self.channel.read_fd, self.channel.write_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        subprocess.run(["rm", "-rf", self.scratch], check=False)
        return answer, flags

    @contextlib.contextmanager
    def frozen(self) -> Iterator[None]:
        """The runner and everything it started, stopped (SIGSTOP) while the judge times the
        references: no thread or process of the candidate's can load the CPU to slow the
        baseline and fake a speedup. (Work it already queued on the GPU is not stopped; the
        judge's clock check and the baseline's own spread show it.)"""
        pids = self._tree()
        for pid in pids:
            _signal(pid, signal.SIGSTOP)
        try:
            yield
        finally:
            for pid in pids:
                _signal(pid, signal.SIGCONT)

    def _tree(self):
        """The runner's processes: the judge's descendants that it did not have before."""
        tree, frontier = [], [p for p in confine.children_of(os.getpid()) if p not in self.known_children]
        while frontier and len(tree) < 4096:
            pid = frontier.pop()
            tree.append(pid)
            frontier += list(confine.children_of(pid))
        return tree

    def _kill(self):
        runner_start.kill_group(self.proc)

    def _drain(self):
        try:
            return bool(os.read(self.channel.read_fd, 1 << 16))
        except (BlockingIOError, OSError):
            return False

    # --- requests --------------------------------------------------------------------------

    def wait_ready(self) -> tuple[dict[str, Any], list[torch.Tensor]]:
        """The runner's first message: confined, candidate loaded (or not), in answer to setup."""
        return self._answer("setup", 0, "ready", self.request_timeout_s)

    def request(self, kind: str, values: dict[str, Any] | None = None, tensors: Iterable[torch.Tensor] = (),
                expect: str | None = None, timeout: float | None = None) -> tuple[dict[str, Any], list[torch.Tensor]]:
        """Send one request and read its one answer: (values, tensors)."""
        if timeout is None:
            timeout = self.budget.request_timeout(self.request_timeout_s) if self.budget else self.request_timeout_s
        rid = self.next_id
        self.next_id += 1
        try:
            self.channel.send({"type": kind, "id": rid}, tensors, values=values or {}, timeout=timeout)
        except TimeoutError:
            self._kill()
            raise self._timed_out("did not take request %r within %.1f s (killed)" % (kind, timeout), timeout)
        except ProtocolError as exc:
            failure = self._death_or_tampering(kind, exc)
            self._kill()
            raise failure from None
        answer = self._answer(kind, rid, expect, timeout)
        if kind == "finish":
            self.finished = True
        return answer

    def _answer(self, kind, rid, expect, timeout):
        try:
            header, out = self.channel.recv(timeout=timeout)
        except TimeoutError:
            self._kill()
            raise self._timed_out("did not answer %r within %.1f s (killed)" % (kind, timeout), timeout)
        except ProtocolError as exc:
            failure = self._death_or_tampering(kind, exc)
            self._kill()
            raise failure from None
        answer = header.get("values") if isinstance(header.get("values"), dict) else {}
        if header.get("id") != rid:
            self._kill()
            raise RunnerFailure("tampering", "answer to request %d carried id %r: a message the judge did not ask "
                                "for" % (rid, header.get("id")))
        if isinstance(answer.get("flags"), list):
            self.last_flags = answer["flags"]
        if header["type"] == "failed":
            name = answer.get("failure")
            raise CandidateRaised(name if name in _CANDIDATE_FAILURES else "runtime_error", str(answer.get("error")))
        if expect and header["type"] != expect:
            self._kill()
            raise RunnerFailure("tampering", "asked %r, the runner answered %r" % (kind, header["type"]))
        return answer, out

    def _timed_out(self, what, timeout):
        """``timeout`` past the runner's own limit; past the verification's budget, the budget's flag."""
        if self.budget and self.budget.bounded_by_budget(timeout, self.request_timeout_s):
            self.budget.ran_out = self.budget.step
            return RunnerFailure("", "", self.budget.exhausted_flag("the runner " + what))
        return RunnerFailure("timeout", "the runner " + what)

    def _death_or_tampering(self, kind, exc):
        if isinstance(exc, ChannelClosed):
            try:
                code = self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                code = None
            if code is not None and code >= 128 or (code is not None and code < 0):
                number = code - 128 if code >= 128 else -code
                try:
                    name = signal.Signals(number).name
                except ValueError:
                    name = "signal %d" % number
                log = self.log().lower()
                flag_name = _SIGNAL_FLAGS.get(name, "crashed")
                if "illegal memory access" in log:
                    flag_name = "illegal_memory_access"
                return RunnerFailure(flag_name, "the runner died of %s during %r" % (name, kind))
            return RunnerFailure("tampering", "the runner closed the channel during %r (exit status %s): it exited "
                                 "before the judge finished with it" % (kind, code))
        return RunnerFailure("tampering", "the runner's answer to %r broke the protocol: %s" % (kind, exc))
