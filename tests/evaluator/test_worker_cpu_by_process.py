"""scripts/worker_cpu_by_process.py: where a worker run's CPU went, from the `ps` snapshots the H200
throughput script takes (scripts/gpu_worker_throughput_h200.sh)."""
import importlib.util
import subprocess
import sys
import time
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "worker_cpu_by_process.py"
# the sampler's own command line, as the throughput script runs it
SNAPSHOT = 'echo "@ $(date +%s)"; ps -ww -eo pid=,ppid=,times=,comm=,args= | cut -c1-1000'


def _module():
    spec = importlib.util.spec_from_file_location("worker_cpu_by_process", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_real_snapshot_counts_a_busy_process_under_its_kind():
    cpu = _module()
    # one line: ps prints a newline inside the arguments as it is, which would split the process's line
    burn = ("import time; t = time.process_time(); "
            "[0 for _ in iter(lambda: time.process_time() - t < 2.2, False)]; print('done', flush=True); time.sleep(60)")
    busy = subprocess.Popen([sys.executable, "-c", burn, "-m", "verifier.profile_driver", "--mode", "ncu"],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert busy.stdout.readline().strip() == "done"
        first = subprocess.run(["bash", "-c", SNAPSHOT], capture_output=True, text=True, check=True).stdout
        time.sleep(0.1)
        second = subprocess.run(["bash", "-c", SNAPSHOT], capture_output=True, text=True, check=True).stdout
    finally:
        busy.kill()
        busy.wait()
    seen = cpu.read_snapshots((first + second).splitlines())
    assert cpu.kind_of(busy.pid, seen) == "ncu profile driver", seen.get(busy.pid)
    assert seen[busy.pid][0] >= 2  # ps's whole CPU seconds of the 2.2 s it burned
    assert cpu.by_kind(seen)["ncu profile driver"][1] >= 1


def test_each_process_counts_once_at_its_largest_figure_and_forked_runners_apart():
    cpu = _module()
    snapshots = """@ 100
   10     1      3 python3         python3 -m verifier.core.judge --reference r.py --candidate k.cu
   11    10      1 python3         python3 -m verifier.core.judge --reference r.py --candidate k.cu
   12     1      2 python3         python3 -m verifier.core.judge --reference r.py --candidate k.cu --build-only
   13     1     20 clang-tidy      /site/clang_tidy/data/bin/clang-tidy kernel.cu -checks=-*,bugprone-*
   14    13      9 cc1plus         /usr/lib/gcc/x86_64-linux-gnu/13/cc1plus -quiet
@ 102
   10     1      5 python3         python3 -m verifier.core.judge --reference r.py --candidate k.cu
   11    10      4 python3         python3 -m verifier.core.judge --reference r.py --candidate k.cu
   13     1     28 clang-tidy      /site/clang_tidy/data/bin/clang-tidy kernel.cu -checks=-*,bugprone-*
   15     1      6 ncu             /usr/local/cuda/bin/ncu --csv python3 -m verifier.profile_driver --mode ncu
   16    15      7 python3         python3 -m verifier.profile_driver --mode ncu --calls 1
   17     1      1 nvidia-smi      nvidia-smi --query-gpu=index
"""
    totals = cpu.by_kind(cpu.read_snapshots(snapshots.splitlines()))
    assert totals == {
        "judge": [5, 1], "runner (forked by its judge)": [4, 1], "build step (judge --build-only)": [2, 1],
        "clang-tidy": [28, 1], "nvcc and host compiler": [9, 1], "ncu": [6, 1], "ncu profile driver": [7, 1],
        "nvidia-smi": [1, 1],
    }
