"""One judge lane per GPU on a host (`python manage.py run_worker_lanes`, docs/worker.md).

A lane is one `manage.py run_huey` process with CUDA_VISIBLE_DEVICES set to its GPU, its own
timing CPUs and its own lane id (ARCHIVE_WORKER_LANE, in Verification.worker), working the same
database and queue with the same build and lint caches as the others. The device lock files are
named by CUDA_VISIBLE_DEVICES, so each lane's runs share only its own GPU's lock.

The supervisor forwards SIGTERM and SIGINT to every lane (Huey: SIGINT lets running jobs finish,
SIGTERM stops at once), restarts a lane that exits while it is not stopping, after a back-off
that doubles while the lane keeps dying quickly, and returns once every lane has exited.
"""
import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from verifier.core.confine import die_with_parent
from verifier.core.timing_report import reserved_cpus

log = logging.getLogger(__name__)
FIRST_BACKOFF_S = 1.0
# The back-off stops doubling here; a lane that ran this long before it died starts over from the first.
MAX_BACKOFF_S = 60.0
POLL_S = 0.2


class LanePlanError(ValueError):
    """The GPU list or the timing CPUs cannot be split into lanes; the message says why."""


@dataclass(frozen=True)
class Lane:
    index: int
    gpu: str | None  # its CUDA_VISIBLE_DEVICES; None: a lane without a GPU (CPU-device workers)
    timing_cpus: tuple[int, ...]
    cpus: frozenset[int]  # where it starts: the host's CPUs less the other lanes' timing CPUs


def host_gpus(configured: list[str]) -> list[str]:
    """The GPUs to run lanes on: ARCHIVE_VERIFY_GPUS when set, else one per GPU `nvidia-smi -L`
    lists ([] where there is no nvidia-smi or it fails)."""
    if configured:
        return list(configured)
    try:
        listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.info("no GPU found (nvidia-smi: %s)", exc)
        return []
    if listed.returncode != 0:
        log.info("no GPU found (nvidia-smi -L exited %s: %s)", listed.returncode, listed.stderr.strip()[:500])
        return []
    # Only the "GPU <n>: ..." lines: MIG devices are listed indented beneath their GPU.
    return [str(n) for n, _ in enumerate(line for line in listed.stdout.splitlines() if line.startswith("GPU "))]


def split_timing_cpus(spec: str, lanes: int) -> list[tuple[int, ...]]:
    """Each lane's timing CPUs, in lane order. Given per lane with ';' ("0,1;2,3": lane 0 times
    on 0 and 1, lane 1 on 2 and 3), one group per lane; given as one list ("0-3"), divided evenly
    in order (lane 0 gets the lowest), so its length must be a multiple of the lane count.
    Empty: no lane reserves any."""
    spec = spec.strip()
    if not spec:
        return [()] * lanes
    if ";" in spec:
        groups = [tuple(reserved_cpus(part)) for part in spec.split(";")]
        if len(groups) != lanes:
            raise LanePlanError(f"ARCHIVE_VERIFY_TIMING_CPUS={spec!r} names {len(groups)} lanes' CPUs for {lanes} lanes")
        if not all(groups):
            raise LanePlanError(f"ARCHIVE_VERIFY_TIMING_CPUS={spec!r} leaves a lane without CPUs")
    else:
        cpus = reserved_cpus(spec)
        if not cpus or len(cpus) % lanes:
            raise LanePlanError(f"ARCHIVE_VERIFY_TIMING_CPUS={spec!r}: {len(cpus)} CPUs do not divide evenly among "
                                f"{lanes} lanes; give them per lane, e.g. '0,1;2,3'")
        size = len(cpus) // lanes
        groups = [tuple(cpus[i * size:(i + 1) * size]) for i in range(lanes)]
    every = [cpu for group in groups for cpu in group]
    if len(every) != len(set(every)):
        raise LanePlanError(f"ARCHIVE_VERIFY_TIMING_CPUS={spec!r} gives a CPU to two lanes")
    return groups


def plan_lanes(gpus: list[str], timing_cpus: str, host_cpus: set[int]) -> list[Lane]:
    """One lane per GPU, or one lane without a GPU when there is none."""
    slots = list(gpus) or [None]
    groups = split_timing_cpus(timing_cpus, len(slots))
    reserved = {cpu for group in groups for cpu in group}
    lanes = []
    for index, (gpu, own) in enumerate(zip(slots, groups)):
        # Off every other lane's timing CPUs; its own worker then moves off its own (tasks.py).
        cpus = frozenset(set(host_cpus) - (reserved - set(own)))
        if not cpus - set(own):
            raise LanePlanError(f"lane {index} would have no CPU left besides its timing CPUs {list(own)}")
        lanes.append(Lane(index=index, gpu=gpu, timing_cpus=own, cpus=cpus))
    return lanes


def lane_env(lane: Lane, base: dict, *, data_dir: Path, build_cache_dir: Path, lint_cache_dir: Path) -> dict:
    """The lane's environment: the supervisor's (database, queue, settings module) with its own
    GPU, timing CPUs and lane id, and the host's one data folder, build cache and lint cache."""
    env = dict(base, ARCHIVE_WORKER_LANE=str(lane.index), ARCHIVE_VERIFY_TIMING_CPUS=",".join(map(str, lane.timing_cpus)),
               ARCHIVE_DATA_DIR=str(data_dir), ARCHIVE_BUILD_CACHE_DIR=str(build_cache_dir),
               ARCHIVE_LINT_CACHE_DIR=str(lint_cache_dir))
    if lane.gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = lane.gpu
    return env


def lane_command(manage_py: Path, workers: int) -> list[str]:
    # Threads, not Huey's worker processes: a worker's CPU-job order and lint pool are per process.
    return [sys.executable, str(manage_py), "run_huey", "--workers", str(workers), "--worker-type", "thread"]


class Supervisor:
    """Runs the lanes until told to stop (SIGTERM, SIGINT); see the module's docstring."""

    def __init__(self, lanes: list[Lane], command: list[str], envs: list[dict]):
        self.lanes, self.command, self.envs = lanes, command, envs
        self.processes: dict[int, subprocess.Popen] = {}
        self.started_at: dict[int, float] = {}
        self.backoff: dict[int, float] = {lane.index: 0.0 for lane in lanes}
        self.restart_at: dict[int, float] = {}
        self.stop_signal: int | None = None  # the signal that stops every lane, once one came

    @property
    def stopping(self) -> bool:
        return self.stop_signal is not None

    def run(self) -> None:
        previous = {sig: signal.signal(sig, self._forward) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            for lane in self.lanes:
                if not self.stopping:  # a stop during start-up: the lanes not started yet stay so
                    self._start(lane)
            while self.processes or (self.restart_at and not self.stopping):
                self._reap()
                self._restart_due()
                time.sleep(POLL_S)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        log.info("every lane has stopped")

    def _start(self, lane: Lane) -> None:
        def preexec():
            os.sched_setaffinity(0, lane.cpus)
            die_with_parent()  # a lane never outlives its supervisor (killed, or its host's OOM killer)

        # Its own session: a terminal's Ctrl-C reaches the lanes once, forwarded, not twice.
        process = subprocess.Popen(self.command, env=self.envs[lane.index], start_new_session=True, preexec_fn=preexec)
        self.processes[lane.index], self.started_at[lane.index] = process, time.monotonic()
        if self.stopping:  # the signal came while Popen ran, before the lane was in self.processes
            process.send_signal(self.stop_signal)
        log.info("lane %s started: pid %s, CUDA_VISIBLE_DEVICES=%s, timing CPUs %s", lane.index, process.pid,
                 lane.gpu if lane.gpu is not None else "(none)", ",".join(map(str, lane.timing_cpus)) or "(none)")

    def _reap(self) -> None:
        for index, process in list(self.processes.items()):
            status = process.poll()
            if status is None:
                continue
            del self.processes[index]
            ran_s = time.monotonic() - self.started_at[index]
            if self.stopping:
                log.info("lane %s exited with status %s", index, status)
                continue
            previous = self.backoff[index]
            self.backoff[index] = FIRST_BACKOFF_S if ran_s >= MAX_BACKOFF_S or not previous else min(
                previous * 2, MAX_BACKOFF_S)
            self.restart_at[index] = time.monotonic() + self.backoff[index]
            log.error("lane %s (pid %s) exited unexpectedly with status %s after %.1f s; restarting in %.0f s",
                      index, process.pid, status, ran_s, self.backoff[index])

    def _restart_due(self) -> None:
        if self.stopping:
            self.restart_at.clear()
            return
        now = time.monotonic()
        for index, due in list(self.restart_at.items()):
            if due <= now:
                del self.restart_at[index]
                self._start(self.lanes[index])

    def _forward(self, signum, frame) -> None:
        # To each lane's own process only: Huey decides what its running jobs get.
        self.stop_signal = signum
        log.info("%s: stopping every lane", signal.Signals(signum).name)
        for process in list(self.processes.values()):
            process.send_signal(signum)  # nothing for a lane already reaped
