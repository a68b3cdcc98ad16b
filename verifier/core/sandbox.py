"""Run a harness command line in its own process, with limits, and always come back
with a verdict document.

``run_harness_isolated(argv, cwd=None, timeout_s=..., memory_limit_bytes=..., env=None)``
starts ``argv`` (for example ``[sys.executable, "-m", "verifier.core.judge", ...]``) in a
new session (its own process group), with resource limits set in the child:
no core files, CPU time, and - for CPU-only runs, where it is safe - address space.
A watchdog kills the whole group on timeout or when the group's resident memory passes
the limit.  It returns the harness JSON when one was produced (with a ``sandbox`` key
added), otherwise a document with verdict ``failed`` when the crash happened while the
candidate's code was running (segfault, abort, illegal memory access, out of memory,
timeout/hang) or ``error`` when it happened elsewhere, plus the reason and the log tail.
No Django imports: the worker and the verification bundle both use this file.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import threading
import time
from typing import TYPE_CHECKING

from . import environ_get
from . import judge_server
from . import result
from .process_limits import limits

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

CANDIDATE_STAGES = {"candidate_load", "candidate_call", "candidate_settle", "runner_probes", "timing_setup", "timing",
                    "runner_end"}
LOG_TAIL = 8000


def lower_priority(pid: int, nice: int) -> None:
    """Raise ``pid``'s nice value by ``nice`` (its children inherit it); a priority, not a limit:
    nothing here depends on it holding."""
    try:
        os.setpriority(os.PRIO_PROCESS, pid, min(19, os.getpriority(os.PRIO_PROCESS, pid) + nice))
    except (OSError, AttributeError):
        pass


def _tree_rss(root):
    """Resident bytes of ``root`` and every process descended from it (Linux /proc): the
    judge's runner lives in a session and namespaces of its own, but not outside this tree."""
    parent, rss = {}, {}
    page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return 0
    for pid in pids:
        try:
            with open("/proc/%s/stat" % pid) as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            parent[int(pid)] = int(fields[1])  # field 4 of stat: parent pid
            rss[int(pid)] = int(fields[21]) * page  # field 24: rss in pages
        except (OSError, ValueError, IndexError):
            continue
    total = 0
    for pid, size in rss.items():
        p, hops = pid, 0
        while p and p != root and hops < 64:
            p, hops = parent.get(p), hops + 1
        if p == root:
            total += size
    return total


def _device_of(argv):
    if "--device" in argv:
        i = argv.index("--device")
        if i + 1 < len(argv):
            return argv[i + 1]
    return None


def _tail(path):
    try:
        with open(path, "rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - LOG_TAIL))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


def run_harness_isolated(argv: Sequence[str | os.PathLike[str]], *, cwd: str | os.PathLike[str] | None = None,
                         timeout_s: float, memory_limit_bytes: int | None = None, env: Mapping[str, str] | None = None,
                         nice: int | None = None) -> dict[str, Any]:
    """Run argv isolated; return the harness document or a failure/error document.

    ``nice``: run it (and what it starts) at that lower priority: the worker's builds, so on a
    host whose cores they fill, the judges and profilers holding the GPU get the CPU first."""
    argv = [str(a) for a in argv]
    work = tempfile.mkdtemp(prefix="kb_sandbox_")
    stage_file = os.path.join(work, "stage")
    out_path, err_path = os.path.join(work, "stdout"), os.path.join(work, "stderr")
    child_env = dict(os.environ if env is None else env)
    child_env["JUDGE_STAGE_FILE"] = stage_file
    child_env.setdefault("PYTHONUNBUFFERED", "1")
    # RLIMIT_AS breaks CUDA (it reserves huge virtual ranges); apply it to CPU runs only,
    # and rely on the resident-memory watchdog everywhere.
    address_space = memory_limit_bytes if (memory_limit_bytes and _device_of(argv) == "cpu") else None
    cpu_seconds = max(60.0, timeout_s * (os.cpu_count() or 1)) + 30
    started = time.monotonic()
    state = {"timed_out": False, "memory_killed": False, "peak_rss": 0}
    with open(out_path, "wb") as out_fh, open(err_path, "wb") as err_fh:
        server = environ_get(judge_server.SOCKET_VARIABLE)
        try:
            if server and judge_server.serves(argv, cwd):  # the same judge process, without its torch import
                proc = judge_server.ServedJudge(server, argv[3:], cwd=cwd, env=child_env, stdout=out_fh,
                                                stderr=err_fh, cpu_seconds=cpu_seconds, address_space=address_space)
            else:
                proc = subprocess.Popen(argv, cwd=cwd, env=child_env, stdout=out_fh, stderr=err_fh,
                                        stdin=subprocess.DEVNULL, start_new_session=True,
                                        preexec_fn=limits(cpu_seconds, address_space))
        except OSError as exc:
            return _document("error", "could not start the harness: %s" % exc, None, None, False, 0.0, "", None)
        if nice:
            lower_priority(proc.pid, nice)

        def kill_group():
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

        def watchdog():
            while proc.poll() is None:
                if time.monotonic() - started > timeout_s:
                    state["timed_out"] = True
                    kill_group()
                    return
                if memory_limit_bytes:
                    rss = _tree_rss(proc.pid)
                    state["peak_rss"] = max(state["peak_rss"], rss)
                    if rss > memory_limit_bytes:
                        state["memory_killed"] = True
                        kill_group()
                        return
                time.sleep(0.2)

        dog = threading.Thread(target=watchdog, daemon=True)
        dog.start()
        rc = proc.wait()
        dog.join(timeout=1)
        kill_group()  # anything the harness left behind in its group
    wall = time.monotonic() - started
    stage = None
    if os.path.exists(stage_file):
        with open(stage_file) as fh:
            stage = fh.read().strip() or None
    log = _tail(err_path)
    info = {"returncode": rc, "signal": signal.Signals(-rc).name if rc < 0 else None,
            "timed_out": state["timed_out"], "memory_killed": state["memory_killed"],
            "peak_rss_bytes": state["peak_rss"] or None, "wall_s": round(wall, 3), "stage": stage}
    doc = None
    try:
        with open(out_path) as fh:
            text = fh.read()
        if text.strip():
            # The judge's document, or another sandboxed program's (the naive evaluator's, the
            # profile driver's): any JSON object with a verdict.
            doc = json.loads(text[text.index("{"):])
    except (OSError, ValueError):
        doc = None
    if doc is not None and isinstance(doc, dict) and doc.get("verdict") and not state["timed_out"] and \
            not state["memory_killed"]:
        doc["sandbox"] = info
        return doc
    # No document: decide whose fault it was and say why.
    in_candidate = stage in CANDIDATE_STAGES
    if state["timed_out"]:
        reason, name = "timed out after %.0f s (stage %s): killed the process group" % (timeout_s, stage), "timeout"
    elif state["memory_killed"]:
        reason, name = "resident memory passed %d bytes (stage %s): killed" % (memory_limit_bytes, stage), \
            "out_of_memory"
    elif rc < 0:
        sig = signal.Signals(-rc).name
        name = {"SIGSEGV": "segfault", "SIGBUS": "segfault", "SIGABRT": "aborted", "SIGKILL": "killed",
                "SIGXCPU": "cpu_time_limit", "SIGFPE": "arithmetic_fault", "SIGILL": "illegal_instruction"}.get(
            sig, "crashed")
        reason = "the harness process died of %s (stage %s)" % (sig, stage)
    else:
        name = "crashed"
        reason = "the harness exited with status %d without a verdict (stage %s)" % (rc, stage)
    if "illegal memory access" in log.lower():
        name = "illegal_memory_access"
    if name == "crashed" and ("MemoryError" in log or "out of memory" in log.lower()):
        name = "out_of_memory"
    verdict = "failed" if in_candidate else "error"
    return _document(verdict, reason, name, info, in_candidate, wall, log, stage)


def _document(verdict, reason, name, info, blocking, wall, log, stage):
    evidence = reason + ("" if blocking else " - outside the candidate's code, so an error")
    doc = result.failure_document(verdict, reason, flag_name=name, log=log, sandbox=info or {})
    if name:
        doc["flags"][0]["evidence"] = evidence
    return doc
