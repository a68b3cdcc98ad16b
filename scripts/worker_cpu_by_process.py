"""Where a worker run's CPU went, by kind of process, from the `ps` snapshots
scripts/gpu_worker_throughput_h200.sh takes every 2 s (ps.txt.gz).

    python3 scripts/worker_cpu_by_process.py ps.txt.gz [--kernels N]

Each snapshot starts with a line ``@ <epoch seconds>``, then one line per process: pid, ppid,
cumulative CPU seconds, command name, arguments (``ps -ww -eo pid=,ppid=,times=,comm=,args=``;
without -ww ps cuts the arguments at $COLUMNS). A process's CPU is the largest figure seen for
its pid, so it is a lower bound: up to one interval of a process's last CPU, and processes that
lived less than an interval, are missed. Prints CPU seconds and process counts per kind, the share
of the total, and, with ``--kernels``, CPU seconds per finished kernel.
"""
import argparse
import gzip
import re
import sys
from collections import defaultdict

# -m verifier.core.judge, or a served judge's verifier/core/judge.py (and the names before harness 2.9.1)
_JUDGE = re.compile(r"verifier[./](core[./])?judge")
_RUNNER = re.compile(r"verifier\.(core\.)?runner")
# (kind, test on the process's command name and arguments), first match wins.
KINDS = (
    # ncu's own arguments name the driver it starts: ncu first
    ("ncu", lambda comm, args: comm == "ncu" or args.split(" ", 1)[0].endswith("/ncu")),
    ("build step (judge --build-only)", lambda comm, args: bool(_JUDGE.search(args)) and "--build-only" in args),
    ("judge", lambda comm, args: bool(_JUDGE.search(args))),
    ("runner", lambda comm, args: bool(_RUNNER.search(args)) or "runner_process" in args),
    ("ncu profile driver", lambda comm, args: "verifier.profile_driver" in args and "--mode ncu" in args),
    ("torch.profiler driver", lambda comm, args: "verifier.profile_driver" in args),
    ("clang-tidy", lambda comm, args: comm.startswith("clang-tidy")),
    ("nvcc and host compiler", lambda comm, args: comm in {"nvcc", "cicc", "cudafe++", "cc1plus", "ptxas", "fatbinary",
                                                           "nvlink", "ld", "collect2", "as", "ninja", "c++", "g++",
                                                           "gcc", "x86_64-linux-gn"}),
    ("GPU code listing (cuobjdump, nvdisasm, cu++filt)", lambda comm, args: comm in {"cuobjdump", "nvdisasm",
                                                                                      "cu++filt", "c++filt"}),
    ("Huey consumer (run_huey)", lambda comm, args: "run_huey" in args),
    ("bench_worker and the script", lambda comm, args: "bench_worker" in args or comm in {"bash", "tee", "sleep", "ps",
                                                                                          "gzip", "cut"}),
    ("nvidia-smi", lambda comm, args: comm == "nvidia-smi"),
)
_LINE = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s*(.*)$")


def read_snapshots(lines):
    """{pid: (cpu seconds, comm, args, parent pid)} over every snapshot (pids are not reused within
    a run of a few minutes on a host whose pid_max is 4 million)."""
    seen = {}
    for line in lines:
        if line.startswith("@"):
            continue
        match = _LINE.match(line)
        if not match:
            continue
        pid, ppid, cpu, comm, args = int(match[1]), int(match[2]), int(match[3]), match[4], match[5]
        if pid not in seen or cpu >= seen[pid][0]:
            seen[pid] = (cpu, comm, args, ppid)
    return seen


def kind_of(pid, seen) -> str:
    cpu, comm, args, ppid = seen[pid]
    for kind, test in KINDS:
        if test(comm, args):
            parent = seen.get(ppid)
            # a runner forked by its judge keeps the judge's arguments
            if kind == "judge" and parent is not None and parent[2] == args:
                return "runner (forked by its judge)"
            return kind
    return "other: " + comm


def by_kind(seen) -> dict:
    totals = defaultdict(lambda: [0, 0])
    for pid in seen:
        total = totals[kind_of(pid, seen)]
        total[0] += seen[pid][0]
        total[1] += 1
    return dict(totals)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("snapshots")
    parser.add_argument("--kernels", type=int, help="kernels the run finished: CPU seconds per kernel")
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args(argv)
    opener = gzip.open if args.snapshots.endswith(".gz") else open
    with opener(args.snapshots, "rt", errors="replace") as fh:
        totals = by_kind(read_snapshots(fh))
    grand = sum(cpu for cpu, _ in totals.values()) or 1
    print("%-52s %9s %9s %7s%s" % ("kind", "CPU s", "processes", "share", "  CPU s/kernel" if args.kernels else ""))
    for kind, (cpu, count) in sorted(totals.items(), key=lambda item: -item[1][0])[:args.top]:
        per_kernel = "  %12.1f" % (cpu / args.kernels) if args.kernels else ""
        print("%-52s %9d %9d %6.1f%%%s" % (kind[:52], cpu, count, 100 * cpu / grand, per_kernel))
    print("%-52s %9d" % ("all", grand) + ("  %22.1f" % (grand / args.kernels) if args.kernels else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
