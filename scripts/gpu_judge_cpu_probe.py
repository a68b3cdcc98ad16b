"""Where one kernel's CPU goes in the worker (issue #16), on an idle GPU host, no Django.

    python3 scripts/gpu_judge_cpu_probe.py --sample ROWS.jsonl --out DIR --kernels NAME[,NAME...]
        [--variants default,compile_threads_1,...] [--repeat 1]

For each named row of an AI CUDA Engineer Archive file, one after another, what the worker does
with it, each step measured by the CPU it and every process it started used (``os.wait4``'s
rusage of the step's process: its own and its reaped descendants'):

- ``build``: the judge with ``--build-only`` (a cold build: nvcc and the host compiler), every
  kernel's at once before the rest;
- ``judge``: the full judge (checks and timing, the torch.compile baseline included) once per
  variant, each an environment the worker could give it (``VARIANTS``), ``--repeat`` times, every
  other time in the reverse order (what a warm cache gives the later ones evens out), with the
  judge's own phases;
- ``ncu``: the worker's ncu profile (verifier/ncu_profile.py);
- ``lint``: clang-tidy on the source, with no lint cache.

``--steps`` picks some of build, judge, ncu, lint (default all; the builds always run).

While a step runs, its process tree is read from /proc every 0.2 s: the most processes it had at
once and the CPU seconds last seen per command name, so what the total is made of shows. The
judge's environment is the worker's (verifier/bundle_run.py) plus the variant's variables.
Writes DIR/judge_cpu.json and prints a table.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from verifier import bundle_run, clang_tidy_run, ncu_profile  # noqa: E402
from verifier.functional_forms import write_row_sources  # noqa: E402

VARIANTS = {
    "default": {},
    "compile_threads_1": {"TORCHINDUCTOR_COMPILE_THREADS": "1"},
    "compile_threads_1_omp_1": {"TORCHINDUCTOR_COMPILE_THREADS": "1", "OMP_NUM_THREADS": "1"},
    "omp_1": {"OMP_NUM_THREADS": "1"},
    "omp_2": {"OMP_NUM_THREADS": "2"},
    "no_compile": {"--no-compile": ""},  # an argument, not a variable: what the baseline costs in all
}
TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid):
    """(ppid, command name, CPU seconds) of a live process, or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    name = text[text.index("(") + 1:text.rindex(")")]
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[1]), name, (int(fields[11]) + int(fields[12])) / TICKS


def descendants(root, stats):
    """The pids under ``root`` in ``stats`` ({pid: (ppid, name, cpu)})."""
    children = {}
    for pid, (ppid, _, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


class TreeWatch(threading.Thread):
    """The most descendants ``root`` had at once and the CPU last seen of each, summed by name."""

    def __init__(self, root):
        super().__init__(daemon=True)
        self.root, self.stop, self.most, self.cpu = root, threading.Event(), 0, {}

    def run(self):
        while not self.stop.wait(0.2):
            stats = {int(p): s for p in os.listdir("/proc") if p.isdigit() for s in [_stat(int(p))] if s}
            pids = descendants(self.root, stats)
            self.most = max(self.most, len(pids))
            for pid in pids:
                self.cpu[(pid, stats[pid][1])] = stats[pid][2]

    def by_name(self):
        totals = {}
        for (_, name), cpu in self.cpu.items():
            totals[name] = round(totals.get(name, 0.0) + cpu, 2)
        return dict(sorted(totals.items(), key=lambda kv: -kv[1]))


def measured(argv, env, cwd):
    """Run ``argv`` to its end: wall seconds, user and system CPU of it and what it reaped."""
    started = time.monotonic()
    # stderr to a file, not a pipe: nothing reads a pipe until the process ends, and a full one
    # (torch's warnings) would stop it
    err = tempfile.TemporaryFile()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=err)
    watch = TreeWatch(proc.pid)
    watch.start()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    watch.stop.set()
    watch.join()
    return {"wall_s": round(time.monotonic() - started, 2), "user_s": round(usage.ru_utime, 2),
            "system_s": round(usage.ru_stime, 2), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
            "exit": proc.returncode, "most_processes": watch.most, "cpu_by_name": watch.by_name(),
            "stderr_tail": _tail(err)}


def _tail(fh, size=600):
    fh.seek(0, os.SEEK_END)
    fh.seek(max(0, fh.tell() - size))
    text = fh.read().decode(errors="replace")
    fh.close()
    return text


def in_this_process(step):
    """CPU of a step run by this process (its children's included, once reaped)."""
    before, started = os.times(), time.monotonic()
    value = step()
    after = os.times()
    cpu = sum(getattr(after, k) - getattr(before, k) for k in ("user", "system", "children_user", "children_system"))
    return value, {"wall_s": round(time.monotonic() - started, 2), "cpu_s": round(cpu, 2)}


def judge_argv(paths, build_dir, json_path, extra=()):
    reference, candidate, functional = paths
    argv = [sys.executable, "-m", "verifier.judge", "--reference", str(reference), "--candidate", str(candidate),
            "--kind", "cuda_forward", "--device", "cuda", "--build-dir", str(build_dir), "--json", str(json_path)]
    return argv + (["--functional", str(functional)] if functional else []) + list(extra)


def worker_env(build_dir):
    return dict(bundle_run._harness_env(build_dir), PYTHONPATH=str(REPO))


def build(name, row, work):
    paths = write_row_sources(work / name, row)
    argv = judge_argv(paths, work / "builds", work / name / "build.json", ["--build-only"])
    return paths, measured(argv, worker_env(work / "builds"), REPO)


def probe_kernel(name, row, paths, variants, repeat, steps, work):
    build_dir = work / "builds"
    env = worker_env(build_dir)
    entry = {"kernel": name, "level": row["Level_ID"], "task": row["Task_ID"], "judges": []}
    for turn in range(repeat if "judge" in steps else 0):
        for variant in (variants if turn % 2 == 0 else variants[::-1]):
            extra = [k for k in VARIANTS[variant] if k.startswith("--")]
            variables = {k: v for k, v in VARIANTS[variant].items() if not k.startswith("--")}
            out = work / name / f"{variant}.json"
            step = measured(judge_argv(paths, build_dir, out, extra), dict(env, **variables), REPO)
            doc = json.loads(out.read_text()) if out.exists() else {}
            timing = (doc.get("checks") or {}).get("timing") or {}
            step.update(variant=variant, verdict=doc.get("verdict"), flags=[f.get("name") for f in doc.get("flags") or []],
                        phases=(doc.get("checks") or {}).get("phases"), timing_stop=timing.get("stop"),
                        timing_rounds=timing.get("rounds"))
            entry["judges"].append(step)
            print(f"{name[:40]:40s} {variant:26s} {step['verdict']!s:10s} wall {step['wall_s']:6.1f} s  "
                  f"CPU {step['cpu_s']:6.1f} s  processes {step['most_processes']:3d}  "
                  f"flags {step['flags']} timing {step['timing_rounds']} rounds ({step['timing_stop']}) "
                  f"phases {step['phases']}", flush=True)
    if "ncu" in steps:
        profile, entry["ncu"] = in_this_process(lambda: ncu_profile.ncu_profile(
            paths[0], paths[1], "cuda_forward", paths[2], build_dir=build_dir, timeout_s=300, env=dict(env)))
        entry["ncu"]["error"] = (profile or {}).get("error", "")[:300]
    if "lint" in steps:
        lint, entry["lint"] = in_this_process(lambda: clang_tidy_run.run_clang_tidy(
            Path(paths[1]).read_text(), kind="cuda_forward", cache_dir=None))
        entry["lint"]["errored"] = (lint or {}).get("errored")
    print(f"{name[:40]:40s} ncu {entry.get('ncu')}, lint {entry.get('lint')}", flush=True)
    return entry


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sample", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--kernels", required=True, help="comma-separated Kernel_Name values")
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--steps", default="build,judge,ncu,lint")
    args = p.parse_args()
    wanted, variants, steps = args.kernels.split(","), args.variants.split(","), args.steps.split(",")
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        p.error(f"unknown variant(s) {unknown}; known: {list(VARIANTS)}")
    rows = {}
    with open(args.sample) as fh:
        for line in fh:
            row = json.loads(line)
            rows.setdefault(row["Kernel_Name"], row)
    missing = [name for name in wanted if name not in rows]
    if missing:
        p.error(f"not in {args.sample}: {missing}")
    work = Path(tempfile.mkdtemp(prefix="judge_cpu_"))
    doc = {"cpus": len(os.sched_getaffinity(0)), "variants": {v: VARIANTS[v] for v in variants}, "kernels": []}
    Path(args.out).mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(len(wanted)) as pool:
        built = dict(zip(wanted, pool.map(lambda name: build(name, rows[name], work), wanted)))
    for name in wanted:  # written after each kernel, so a call cut short keeps what finished
        paths, doc_build = built[name]
        print(f"{name[:40]:40s} build wall {doc_build['wall_s']} s, CPU {doc_build['cpu_s']} s", flush=True)
        entry = probe_kernel(name, rows[name], paths, variants, args.repeat, steps, work)
        doc["kernels"].append(dict(entry, build=doc_build))
        (Path(args.out) / "judge_cpu.json").write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
