"""`manage.py run_worker_lanes`: the lanes planned from the host's GPUs and timing CPUs, then a
real supervisor whose two CPU-device lanes work one queue, and a lane that dies comes back."""
import os
import re
import signal
import stat
import time

import pytest

from evaluator import worker_lanes
from evaluator.worker_lanes import Lane, LanePlanError, lane_env, plan_lanes, split_timing_cpus

from .consumers import all_finished, consumer_env, manage, start_consumer, stop, wait_for
from .worker_archive import write_pairs

# `nvidia-smi -L` as printed on a host with two GPUs, the second split into MIG devices.
NVIDIA_SMI_L = """GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-3b9f6c1e-2d7a-4b8e-9f01-5c6d7e8f9a0b)
GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-8e7d6c5b-4a39-4281-b7f6-e5d4c3b2a190)
  MIG 3g.40gb     Device  0: (UUID: MIG-0c1d2e3f-4a5b-5c6d-8e7f-9a0b1c2d3e4f)
  MIG 3g.40gb     Device  1: (UUID: MIG-5f4e3d2c-1b0a-5987-a6b5-c4d3e2f1a0b9)
"""


def _nvidia_smi_on_path(folder, monkeypatch, stdout: str, status: int = 0):
    """An `nvidia-smi` that prints ``stdout`` and exits ``status``: this host has no GPU driver."""
    tool = folder / "nvidia-smi"
    tool.write_text(f"#!/bin/sh\ncat <<'EOF'\n{stdout}EOF\nexit {status}\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")


def test_the_gpus_are_the_setting_else_the_ones_nvidia_smi_lists(tmp_path, monkeypatch):
    _nvidia_smi_on_path(tmp_path, monkeypatch, NVIDIA_SMI_L)
    assert worker_lanes.host_gpus(["2", "3"]) == ["2", "3"]
    assert worker_lanes.host_gpus([]) == ["0", "1"]  # GPUs, not their MIG devices


def test_no_gpu_means_one_lane_without_one(tmp_path, monkeypatch):
    # As on a host whose driver is not loaded.
    _nvidia_smi_on_path(tmp_path, monkeypatch, "NVIDIA-SMI has failed because it couldn't communicate with the "
                                               "NVIDIA driver.\n", status=9)
    assert worker_lanes.host_gpus([]) == []
    (tmp_path / "nvidia-smi").unlink()
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi at all
    assert worker_lanes.host_gpus([]) == []
    assert plan_lanes([], "", {0, 1}) == [Lane(index=0, gpu=None, timing_cpus=(), cpus=frozenset({0, 1}))]


def test_timing_cpus_given_per_lane_or_divided_evenly():
    assert split_timing_cpus("0,1;2,3", 2) == [(0, 1), (2, 3)]
    assert split_timing_cpus("0-7", 4) == [(0, 1), (2, 3), (4, 5), (6, 7)]
    assert split_timing_cpus("4,5,6,7", 2) == [(4, 5), (6, 7)]
    assert split_timing_cpus("", 3) == [(), (), ()]
    for spec, lanes, why in [("0-2", 2, "divide evenly"), ("0,1;2,3", 4, "names 2 lanes"),
                             ("0,1;1,2", 2, "two lanes"), ("0,1;", 2, "without CPUs")]:
        with pytest.raises(LanePlanError, match=why):
            split_timing_cpus(spec, lanes)


def test_each_lane_starts_off_the_other_lanes_timing_cpus():
    lanes = plan_lanes(["0", "1", "2", "3"], "0-7", set(range(16)))
    assert [(lane.index, lane.gpu, lane.timing_cpus) for lane in lanes] == [
        (0, "0", (0, 1)), (1, "1", (2, 3)), (2, "2", (4, 5)), (3, "3", (6, 7))]
    # Its own timing CPUs stay in its set: its worker moves off them and pins its judges onto them.
    assert lanes[1].cpus == {2, 3, *range(8, 16)}
    with pytest.raises(LanePlanError, match="no CPU left"):
        plan_lanes(["0", "1"], "0;1", {0, 1})


def test_a_lanes_environment_names_its_gpu_cpus_and_lane_and_shares_the_rest(tmp_path):
    base = {"DATABASE_URL": "postgres://db/archive", "REDIS_URL": "redis://queue:6379/0", "CUDA_VISIBLE_DEVICES": "7"}
    lanes = plan_lanes(["2", "3"], "0,1;8,9", set(range(16)))
    shared = dict(data_dir=tmp_path / "data", build_cache_dir=tmp_path / "builds", lint_cache_dir=tmp_path / "lints")
    env = lane_env(lanes[1], base, **shared)
    assert env == dict(base, CUDA_VISIBLE_DEVICES="3", ARCHIVE_WORKER_LANE="1", ARCHIVE_VERIFY_TIMING_CPUS="8,9",
                       ARCHIVE_DATA_DIR=str(tmp_path / "data"), ARCHIVE_BUILD_CACHE_DIR=str(tmp_path / "builds"),
                       ARCHIVE_LINT_CACHE_DIR=str(tmp_path / "lints"))
    no_gpu = lane_env(plan_lanes([], "", {0, 1})[0], {}, **shared)
    assert "CUDA_VISIBLE_DEVICES" not in no_gpu and no_gpu["ARCHIVE_VERIFY_TIMING_CPUS"] == ""


# --- a real supervisor ------------------------------------------------------------------

def _lanes_of(supervisor_pid: int) -> dict[str, int]:
    """{lane id: pid} of the supervisor's children, from their environment as the kernel shows it."""
    children = open(f"/proc/{supervisor_pid}/task/{supervisor_pid}/children").read().split()
    lanes = {}
    for pid in map(int, children):
        try:
            environ = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
        except (FileNotFoundError, ProcessLookupError):  # exited meanwhile, or not reaped yet
            continue
        env = dict(item.decode().split("=", 1) for item in environ if b"=" in item)
        if "ARCHIVE_WORKER_LANE" not in env:  # forked, not exec'd yet: still the supervisor's environment
            continue
        assert env["CUDA_VISIBLE_DEVICES"] == env["ARCHIVE_WORKER_LANE"], env  # lane N works GPU N here
        lanes[env["ARCHIVE_WORKER_LANE"]] = pid
    return lanes


def _until(condition, timeout_s=60):
    deadline = time.monotonic() + timeout_s
    while not (value := condition()):
        assert time.monotonic() < deadline, f"not within {timeout_s} s"
        time.sleep(0.2)
    return value


def test_a_stop_that_comes_while_a_lane_starts_reaches_that_lane_too(monkeypatch):
    """SIGTERM handled while Popen forks a (re)started lane, before the supervisor holds it: the
    lane is told once it is held, instead of running on with the supervisor waiting for it."""
    lane = Lane(index=0, gpu=None, timing_cpus=(), cpus=frozenset(os.sched_getaffinity(0)))
    supervisor = worker_lanes.Supervisor([lane], ["sleep", "60"], [dict(os.environ)])
    real_popen = worker_lanes.subprocess.Popen

    def popen_with_a_stop_on_the_way(*args, **kwargs):
        process = real_popen(*args, **kwargs)
        supervisor._forward(signal.SIGTERM, None)  # as the handler runs, at Popen's last bytecodes
        return process

    monkeypatch.setattr(worker_lanes.subprocess, "Popen", popen_with_a_stop_on_the_way)
    supervisor._start(lane)
    process = supervisor.processes[0]
    try:
        assert process.wait(timeout=10) == -signal.SIGTERM and supervisor.stopping
    finally:
        process.kill()


@pytest.mark.slow
@pytest.mark.judge
def test_two_lanes_take_jobs_from_one_queue_and_a_dead_lane_is_restarted(tmp_path):
    # Two "GPUs" on a CPU host: each lane's CUDA_VISIBLE_DEVICES names its device lock, nothing else.
    env = consumer_env(tmp_path, ARCHIVE_VERIFY_GPUS="0,1")
    pairs = write_pairs(tmp_path / "in" / "pairs.jsonl", {f"slow_{n}": "slow" for n in range(3)})
    manage(env, "migrate", "-v0")
    manage(env, "import_archive", str(pairs), "--no-progress")
    assert "queued 3 verification(s)" in manage(env, "reverify", "--all")
    log = tmp_path / "lanes.log"
    supervisor = start_consumer(env, log, command=("run_worker_lanes", "--workers", "1"))
    try:
        rows = wait_for(all_finished, env, timeout_s=300)
        assert [(row["status"], row["attempts"]) for row in rows] == [("passed", 1)] * 3, log.read_text()[-3000:]
        # Verification.worker is host:laneN:pid:gpuN; both lanes took jobs.
        lanes_seen = {re.fullmatch(r".+:lane(\d):\d+:gpu(\d)", row["worker"]).groups() for row in rows}
        assert lanes_seen == {("0", "0"), ("1", "1")}, rows

        first = _until(lambda: (lanes := _lanes_of(supervisor.pid)).keys() == {"0", "1"} and lanes)
        os.kill(first["0"], signal.SIGKILL)  # lane 0 dies; lane 1 carries on
        again = _until(lambda: (lanes := _lanes_of(supervisor.pid)).get("0") not in (None, first["0"]) and lanes)
        assert again["1"] == first["1"]
        assert re.search(r"lane 0 \(pid \d+\) exited unexpectedly with status -9 .*restarting in 1 s", log.read_text())

        supervisor.send_signal(signal.SIGTERM)  # forwarded to both lanes; the supervisor returns when they have exited
        assert supervisor.wait(timeout=60) == 0, log.read_text()[-3000:]
        for pid in again.values():
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)
    finally:
        stop(supervisor, signal.SIGKILL)  # its lanes die with it (PR_SET_PDEATHSIG)
