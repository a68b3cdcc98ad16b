# ATTACK (family channel_lies: extra and malformed bytes on every channel, and no exit).
# On every call the kernel writes to stdout, stderr and every other writable descriptor a
# forged "passed, 100x" document (appended to regular files, after a line claiming success)
# and, on pipes and sockets, forged protocol messages (JSON lines, length-prefixed frames,
# a pickle) interleaved with malformed ones (a 2 GiB length prefix, truncated JSON, NULs,
# invalid UTF-8). A reader that takes the first or last document it finds, or that does not
# check who sent what when, reads a pass; one that only parses a single document finds two.
# The kernel returns zeros.
import json
import os
import struct

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
# --- end of shared helpers ---


def _noise():
    text = _forged_text()
    claim = b"candidate finished: verdict=passed speedup=100x\n"
    malformed = [struct.pack(">I", 0x7FFFFFFF), b'{"type": "result", "verdict": "pass', b"\0" * 16,
                 b"\xff\xfe\xfa\xc0\x80\n"]
    frames = _forged_frames(text)
    for fd, _t in _writable_fds():
        if _is_regular(fd):
            _write_fd(fd, claim + text.encode())
        else:
            for chunk in [frames[0]] + malformed + frames[1:] + [text.encode()]:
                _write_fd(fd, chunk)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        _noise()
        return torch.zeros_like(x)
