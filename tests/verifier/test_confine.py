"""Confinement as the runner gets it: a process started the way the judge starts the runner
(namespaces in a launcher, then confine()) tries what a hostile kernel would, and every
measure the report says is enforced must hold. Measures a host cannot provide are reported
as 'not enforced', never silently skipped."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = textwrap.dedent("""
    import json, os, socket, sys
    sys.path.insert(0, sys.argv[1])
    from verifier.core import confine
    writable, outside, judge = sys.argv[2], sys.argv[3], int(sys.argv[4])
    report = confine.isolate_namespaces()
    pid = os.fork()
    if pid:
        os.waitpid(pid, 0)
        sys.exit(0)
    confine.mount_own_proc(report)
    report.update(confine.confine(writable_dirs=[writable], protected_pids=[judge]))
    seen = {"report": report, "pid": os.getpid()}
    def attempt(name, fn):
        try:
            fn()
            seen[name] = "allowed"
        except OSError as exc:
            seen[name] = "denied: %s" % exc.strerror
    attempt("inet_socket", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM).close())
    attempt("unix_socket", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close())
    attempt("signal_judge", lambda: os.kill(judge, 0))
    attempt("signal_everyone", lambda: os.kill(-1, 0))
    attempt("write_outside", lambda: open(os.path.join(outside, "forged.json"), "w").close())
    attempt("write_inside", lambda: open(os.path.join(writable, "ok"), "w").close())
    attempt("judge_environ", lambda: open("/proc/%d/environ" % judge, "rb").read())
    attempt("judge_mem", lambda: open("/proc/%d/mem" % judge, "rb").read(1))
    def fork_and_wait():
        child = os.fork()
        if child == 0:
            os._exit(0)
        os.waitpid(child, 0)
    attempt("fork", fork_and_wait)
    seen["judge_listed"] = os.path.exists("/proc/%d" % judge)
    print(json.dumps(seen))
    sys.stdout.flush()
    os._exit(0)
""")


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    base = tmp_path_factory.mktemp("confine")
    writable, outside = base / "scratch", base / "judge_files"
    writable.mkdir()
    outside.mkdir()
    script = base / "probe.py"
    script.write_text(PROBE)
    # The "judge": a process that hardens itself as the judge does, then starts the probe.
    judge = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        import os, subprocess, sys
        sys.path.insert(0, {str(ROOT)!r})
        from verifier.core import confine
        hardened = confine.harden_judge()
        out = subprocess.run([sys.executable, {str(script)!r}, {str(ROOT)!r}, {str(writable)!r},
                              {str(outside)!r}, str(os.getpid())], capture_output=True, text=True, timeout=120)
        print(out.stdout.strip())
        print(hardened)
        sys.stderr.write(out.stderr)
    """)], capture_output=True, text=True, timeout=180)
    assert judge.returncode == 0, judge.stderr
    seen = json.loads(judge.stdout.splitlines()[0])
    seen["outside_dir"] = outside
    return seen


def enforced(seen, measure):
    return seen["report"].get(measure) is True or (
        isinstance(seen["report"].get(measure), str) and not seen["report"][measure].startswith("not enforced"))



def test_report_names_every_measure(probe):
    assert set(probe["report"]) >= {"pid_namespace", "network_namespace", "no_new_privileges",
                                    "capabilities_dropped", "landlock", "seccomp"}
    assert enforced(probe, "no_new_privileges") and enforced(probe, "seccomp"), probe["report"]


def test_no_ip_network(probe):
    assert probe["inet_socket"].startswith("denied")
    assert probe["unix_socket"] == "allowed"  # torch and compilers use local sockets


def test_the_judge_cannot_be_signalled_or_read(probe):
    assert probe["signal_judge"].startswith("denied") and probe["signal_everyone"].startswith("denied")
    if os.geteuid() != 0 or enforced(probe, "capabilities_dropped"):
        assert probe["judge_environ"].startswith("denied") and probe["judge_mem"].startswith("denied")


def test_writes_only_to_its_own_folders(probe):
    assert probe["write_inside"] == "allowed"
    if enforced(probe, "landlock"):
        assert probe["write_outside"].startswith("denied")
        assert not any(probe["outside_dir"].iterdir())


def test_forked_processes_live_in_the_runners_pid_namespace(probe):
    assert probe["fork"] == "allowed"
    if enforced(probe, "pid_namespace"):
        assert probe["pid"] == 1  # the runner proper is the namespace's init: its children die with it
        assert probe["report"]["own_proc"] is True
        assert probe["judge_listed"] is False  # its /proc is its namespace's: the judge is not in it


def test_the_judge_reaps_what_a_runner_leaves_behind_without_a_pid_namespace(tmp_path):
    """Where no PID namespace can be had, a daemon the runner double-forks comes back to the
    judge (a child subreaper), which kills it and names it; a child that merely died is reaped
    without a word."""
    runner = tmp_path / "runner.py"
    runner.write_text(textwrap.dedent("""
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(600)
            os._exit(0)
        if os.fork() == 0:
            os._exit(0)
        time.sleep(0.3)
    """))
    script = textwrap.dedent(f"""
        import json, os, subprocess, sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from verifier.core import confine
        confine.harden_judge()
        known = set(confine.children_of(os.getpid()))
        subprocess.run([sys.executable, {str(runner)!r}])
        found = confine.reap_orphans(known=known, grace_s=0.5)
        time.sleep(0.2)
        print(json.dumps({{"found": found, "left": sorted(set(confine.children_of(os.getpid())) - known)}}))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(seen["found"]) == 1 and seen["found"][0].startswith("pid ") and seen["left"] == []
