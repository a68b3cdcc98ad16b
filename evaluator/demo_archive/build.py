"""Build the demo archive: claims from a naive evaluator, re-measurements by the harness,
profiles from ncu and the torch profiler, all measured on the machine it runs on.

    python -m evaluator.demo_archive.build --device cuda --out DIR [--jobs 14]
        [--build-dir DIR] [--work-dir DIR] [--time-budget 2] [--only a,b] [--manifest PATH]
        [--phases check,naive,timed,profiles] [--deadline SECONDS] [--timeout 900] [--no-compile]
        [--gpu-jobs 1]

Phases (each entry's result is saved under the work dir, default DIR/work, so a re-run with
the same arguments skips what is done; --deadline stops starting new work after that many
seconds and the exit status is 3 until everything is done):
  check     the harness, untimed, every entry in parallel (--jobs sandboxed processes: the
            extension builds happen here), and clang-tidy on each source;
  naive     evaluator/demo_archive/naive_eval.py, one entry at a time in the sandbox: the
            archive's *claimed* numbers (Correct, Max_Diff, KernelBench-way runtimes and speedups);
  timed     the harness again with timing, for the entries that passed check;
  profiles  NCU_Profile and Torch_Profile from verifier/ncu_profile.py (when it exists; cuda
            only), for the entries the naive evaluator called correct.
Timed runs and profiles go one at a time, or --gpu-jobs at once sharing the GPU through the
device lock (VERIFIER_DEVICE_LOCK_DIR, default WORK_DIR/locks): each timing loop and profiled window
has the GPU alone, as on the worker; VERIFIER_TIMING_CPUS, when set, names the CPUs they time on.
Outputs in DIR: demo_archive.jsonl (the archive's 19 columns plus Hardware and Experiment;
written once every phase is done, demo_archive.partial.jsonl before), demo_harness_results.json
(per entry: the naive claims and the harness documents, logs trimmed) and build_log.json
(versions, wall times).  No Django imports.
"""
import argparse
import concurrent.futures as cf
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
EVALUATOR = os.path.dirname(HERE)
ROOT = os.path.dirname(EVALUATOR)
sys.path.insert(0, ROOT)
from verifier.core import environ_get  # noqa: E402
from verifier.core import sandbox  # noqa: E402

from evaluator.demo_archive import rows  # noqa: E402
from evaluator.demo_archive.work_state import State, trim, write_json  # noqa: E402

PHASES = ("check", "naive", "timed", "profiles")
ARCHIVE = "demo_archive.jsonl"
PARTIAL = "demo_archive.partial.jsonl"
RESULTS = "demo_harness_results.json"
BUILD_LOG = "build_log.json"


def load_manifest(path):
    with open(path) as fh:
        manifest = json.load(fh)
    for entry in manifest["entries"]:
        if entry["task"] not in manifest["tasks"]:
            raise SystemExit("manifest entry %s names an unknown task %s" % (entry["name"], entry["task"]))
    return manifest


def _abs(path):
    return None if not path else (path if os.path.isabs(path) else os.path.join(ROOT, path))


def entry_paths(manifest, entry):
    task = manifest["tasks"][entry["task"]]
    return _abs(task["module"]), _abs(entry["file"]), _abs(task.get("functional"))


def _read(path):
    if not path:
        return None
    with open(path) as fh:
        return fh.read()


class Builder:
    def __init__(self, args, manifest, entries, env):
        self.args, self.manifest, self.entries, self.env = args, manifest, entries, env
        self.state = State(args.work_dir)
        self.t0 = time.time()
        self.phase_wall = {}
        self.skipped_for_deadline = 0

    # -- helpers ---------------------------------------------------------------------------
    def out_of_time(self):
        return bool(self.args.deadline) and time.time() - self.t0 > self.args.deadline

    def say(self, phase, done, total, name, text, started):
        print("[%7.1fs] %-8s %2d/%-2d %-30s %s (%.1fs)" % (time.time() - self.t0, phase, done, total, name, text,
                                                            time.time() - started), flush=True)

    def sandboxed(self, argv):
        return sandbox.run_harness_isolated(argv, cwd=ROOT, timeout_s=self.args.timeout, memory_limit_bytes=None,
                                            env=self.env)

    def harness_argv(self, entry, timed):
        ref, cand, fn = entry_paths(self.manifest, entry)
        argv = [sys.executable, "-m", "verifier.core.judge", "--reference", ref, "--candidate", cand,
                "--kind", entry["kind"], "--device", self.args.device, "--build-dir", self.args.build_dir]
        if fn:
            argv += ["--functional", fn]
        if timed:
            argv += ["--time-budget", str(self.args.time_budget)]
        else:
            argv.append("--no-timing")
        if self.args.no_compile:
            argv.append("--no-compile")
        return argv

    def run_phase(self, phase, todo, work, jobs=1):
        """work(entry) -> short text; runs todo with `jobs` at once, stops starting at the deadline."""
        started_phase = time.time()
        done = [0]

        def one(entry):
            if self.out_of_time():
                self.skipped_for_deadline += 1
                return
            started = time.time()
            text = work(entry)
            done[0] += 1
            self.say(phase, done[0], len(todo), entry["name"], text, started)

        if todo:
            with cf.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
                list(pool.map(one, todo))
        self.phase_wall[phase] = round(time.time() - started_phase, 1)

    # -- phases ----------------------------------------------------------------------------
    def check(self):
        todo = [e for e in self.entries if self.state.get(e["name"], "check") is None
                or self.state.get(e["name"], "clang_tidy") is None]

        def work(entry):
            if self.state.get(entry["name"], "check") is None:
                doc = self.sandboxed(self.harness_argv(entry, False))
                self.state.put(entry["name"], "check", trim(doc, 4000))
            doc = self.state.get(entry["name"], "check")
            if self.state.get(entry["name"], "clang_tidy") is None:
                self.state.put(entry["name"], "clang_tidy", {"result": _clang_tidy(entry)})
            return "%s %s" % (doc.get("verdict"), rows.blocking_flags(doc) or "")

        self.run_phase("check", todo, work, self.args.jobs)

    def naive(self):
        todo = [e for e in self.entries if self.state.get(e["name"], "naive") is None]

        def work(entry):
            ref, cand, fn = entry_paths(self.manifest, entry)
            argv = [sys.executable, "-m", "evaluator.demo_archive.naive_eval", "--reference", ref,
                    "--candidate", cand, "--kind", entry["kind"], "--device", self.args.device,
                    "--build-dir", self.args.build_dir] + (["--functional", fn] if fn else []) + \
                (["--no-compile"] if self.args.no_compile else [])
            doc = self.sandboxed(argv)
            self.state.put(entry["name"], "naive", trim(doc))
            return "%s max_diff=%s runtime=%s ms" % (doc.get("verdict"), _fmt(doc.get("max_diff")),
                                                   _fmt(doc.get("runtime_ms")))

        self.run_phase("naive", todo, work)

    def timed(self):
        todo = [e for e in self.entries if (self.state.get(e["name"], "check") or {}).get("verdict") == "passed"
                and self.state.get(e["name"], "timed") is None]

        def work(entry):
            doc = self.sandboxed(self.harness_argv(entry, True))
            self.state.put(entry["name"], "timed", trim(doc, 4000))
            cand = ((doc.get("timings") or {}).get("candidate") or {}).get("median_ms")
            return "%s %s median %s ms" % (doc.get("verdict"), rows.blocking_flags(doc) or "", _fmt(cand))

        self.run_phase("timed", todo, work, self.args.gpu_jobs)

    def profiles(self):
        if self.args.device != "cuda":
            return
        todo = [e for e in self.entries if self._wants_profiles(e) and
                (self.state.get(e["name"], "ncu") is None or self.state.get(e["name"], "torch_profile") is None)]
        try:
            from verifier import ncu_profile as gpu_profiles
        except ImportError as exc:
            print("profiles: verifier/ncu_profile.py is not importable (%s): NCU_Profile and Torch_Profile "
                  "stay empty" % exc, flush=True)
            return

        def work(entry):
            ref, cand, fn = entry_paths(self.manifest, entry)
            texts = []
            for step, fn_name, extra in (("ncu", "ncu_profile", {}),
                                         ("torch_profile", "torch_profile", {"device": self.args.device})):
                if self.state.get(entry["name"], step) is not None:
                    continue
                started = time.time()
                try:
                    res = getattr(gpu_profiles, fn_name)(ref, cand, entry["kind"], fn, build_dir=self.args.build_dir,
                                                         timeout_s=self.args.profile_timeout, **extra)
                except Exception as exc:  # a profiler failure must not stop the build
                    res = {"error": "%s: %s" % (type(exc).__name__, str(exc)[-1500:])}
                if isinstance(res, dict) and "raw_text" in res:
                    res = dict(res, raw_text=res["raw_text"][-200000:])
                self.state.put(entry["name"], step, {"result": res, "wall_s": round(time.time() - started, 1)})
                texts.append("%s %s" % (step, "ok" if isinstance(res, dict) and res.get("parsed") else
                                        ("none" if res is None else "error: %s" % str(res.get("error"))[:80])))
            return ", ".join(texts) or "done"

        self.run_phase("profiles", todo, work, self.args.gpu_jobs)

    def _wants_profiles(self, entry):
        naive = self.state.get(entry["name"], "naive")
        if naive is not None:
            return naive.get("verdict") == "correct"
        check = self.state.get(entry["name"], "check")
        return check is not None and check.get("verdict") != "error"

    # -- outputs ---------------------------------------------------------------------------
    def missing(self):
        """(entry, step) pairs still to do."""
        out = []
        for e in self.entries:
            name = e["name"]
            for step in ("check", "clang_tidy", "naive"):
                if self.state.get(name, step) is None:
                    out.append((name, step))
            if (self.state.get(name, "check") or {}).get("verdict") == "passed" and \
                    self.state.get(name, "timed") is None:
                out.append((name, "timed"))
            if self.args.device == "cuda" and _profiles_available() and \
                    (self.state.get(name, "naive") or {}).get("verdict") == "correct":
                out += [(name, s) for s in ("ncu", "torch_profile") if self.state.get(name, s) is None]
        return out

    def write_outputs(self):
        rows, results = [], {}
        for index, entry in enumerate(self.entries):
            row, result = self.assemble(index, entry)
            results[entry["name"]] = result
            if row is not None:
                rows.append(row)
        missing = self.missing()
        complete = not missing
        os.makedirs(self.args.out, exist_ok=True)
        target = os.path.join(self.args.out, ARCHIVE if complete else PARTIAL)
        with open(target + ".tmp", "w") as fh:
            for row in rows:
                fh.write(json.dumps(row) + "\n")
        os.replace(target + ".tmp", target)
        if complete and os.path.exists(os.path.join(self.args.out, PARTIAL)):
            os.remove(os.path.join(self.args.out, PARTIAL))
        hardware = next((r["Hardware"] for r in rows if r.get("Hardware")), None)
        write_json(os.path.join(self.args.out, RESULTS), {
            "about": "Per entry of the demo archive: what the naive evaluator claimed (the archive row's numbers) "
                     "and what the harness re-measured (docs/demo_archive.md).",
            "device": self.args.device, "hardware": hardware, "complete": complete,
            "manifest": os.path.relpath(self.args.manifest, ROOT), "entries": results})
        log_path = os.path.join(self.args.out, BUILD_LOG)
        try:
            with open(log_path) as fh:
                log = json.load(fh)
        except (OSError, ValueError):
            log = {"runs": []}
        log["runs"].append({"started": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(self.t0)),
                            "argv": sys.argv[1:], "phases": self.args.phases, "phase_wall_s": self.phase_wall,
                            "wall_s": round(time.time() - self.t0, 1), "jobs": self.args.jobs,
                            "cpu_count": os.cpu_count(), "skipped_for_deadline": self.skipped_for_deadline})
        log.update(device=self.args.device, hardware=hardware, complete=complete,
                   missing=["%s:%s" % m for m in missing], rows=len(rows), versions=self.versions(),
                   total_wall_s=round(sum(r["wall_s"] for r in log["runs"]), 1),
                   command="python -m evaluator.demo_archive.build " + " ".join(sys.argv[1:]))
        write_json(log_path, log)
        return complete, missing, rows

    def versions(self):
        for e in self.entries:
            for step in ("timed", "check"):
                v = (self.state.get(e["name"], step) or {}).get("versions") or {}
                if v.get("torch"):
                    return v
        return {"python": sys.version.split()[0]}

    def assemble(self, index, entry):
        ref, cand, fn = entry_paths(self.manifest, entry)
        steps = {step: self.state.get(entry["name"], step) for step in rows.STEPS}
        return rows.archive_row(self.manifest, entry, index, steps, sources=(_read(ref), _read(cand), _read(fn)))


def _profiles_available():
    try:
        from verifier import ncu_profile as gpu_profiles  # noqa: F401
    except ImportError:
        return False
    return True


def _fmt(v):
    return "%.4g" % v if isinstance(v, (int, float)) else str(v)


def _clang_tidy(entry):
    """The archive's Clang_Tidy column for this source; None when clang-tidy is not installed
    (an 'is not installed' note is not a lint result)."""
    try:
        from verifier import clang_tidy_run as clang_tidy
    except ImportError:
        return None
    with open(_abs(entry["file"])) as fh:
        src = fh.read()
    res = clang_tidy.run_clang_tidy(src, kind=entry["kind"])
    if res is None or "is not installed" in (res.get("stderr") or ""):
        return None
    return res


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--manifest", default=os.path.join(HERE, "manifest.json"))
    p.add_argument("--jobs", type=int, default=14, help="harness checks (and their builds) at once")
    p.add_argument("--only", help="comma-separated entry names")
    p.add_argument("--build-dir", help="extension build cache (default WORK_DIR/builds)")
    p.add_argument("--work-dir", help="per-entry results, so a re-run resumes (default OUT/work)")
    p.add_argument("--time-budget", type=float, default=2.0, help="seconds of harness timing per entry")
    p.add_argument("--timeout", type=float, default=900, help="seconds per sandboxed run")
    p.add_argument("--profile-timeout", type=float, default=300)
    p.add_argument("--phases", default=",".join(PHASES), help="comma-separated subset of %s" % ",".join(PHASES))
    p.add_argument("--deadline", type=float, default=0, help="stop starting new work after this many seconds")
    p.add_argument("--no-compile", action="store_true", help="no torch.compile baseline (CPU CI)")
    p.add_argument("--gpu-jobs", type=int, default=1, help="timed runs and profiles at once, through the device lock")
    args = p.parse_args(argv)
    args.out = os.path.abspath(args.out)
    args.manifest = os.path.abspath(args.manifest)
    args.work_dir = os.path.abspath(args.work_dir or os.path.join(args.out, "work"))
    args.build_dir = os.path.abspath(args.build_dir or os.path.join(args.work_dir, "builds"))
    phases = [x for x in args.phases.split(",") if x]
    bad = [x for x in phases if x not in PHASES]
    if bad:
        p.error("unknown phase(s) %s" % ",".join(bad))
    manifest = load_manifest(args.manifest)
    entries = manifest["entries"]
    if args.only:
        wanted = set(args.only.split(","))
        entries = [e for e in entries if e["name"] in wanted]
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("MAX_JOBS", str(max(1, (os.cpu_count() or 2) // max(1, args.jobs))))
    if args.gpu_jobs > 1 and not environ_get("VERIFIER_DEVICE_LOCK_DIR"):
        # Without the lock, runs at once would time and profile over each other's kernels.
        env["VERIFIER_DEVICE_LOCK_DIR"] = os.path.join(args.work_dir, "locks")
    builder = Builder(args, manifest, entries, env)
    print("demo archive: %d entries, device %s, phases %s, out %s" % (len(entries), args.device, ",".join(phases),
                                                                      args.out), flush=True)
    for phase in PHASES:
        if phase in phases and not builder.out_of_time():
            getattr(builder, phase)()
    complete, missing, rows = builder.write_outputs()
    if complete:
        print("complete: %d rows in %s (%.0f s)" % (len(rows), os.path.join(args.out, ARCHIVE),
                                                    time.time() - builder.t0), flush=True)
        return 0
    print("INCOMPLETE (%d steps left, e.g. %s): re-run the same command to continue; partial rows in %s" % (
        len(missing), ", ".join("%s:%s" % m for m in missing[:4]), os.path.join(args.out, PARTIAL)), flush=True)
    return 3


if __name__ == "__main__":
    sys.exit(main())
