# ATTACK (family proc_snoop: reading the verifier's command line, environment, descriptors
# and memory to learn its seeds and its reference, then skipping the work).
# At import the kernel reads /proc/<pid>/cmdline, environ, cwd, fd/* and maps of this process
# and every ancestor, and tries /proc/<pid>/mem (logged to stderr: what it could read). From
# what it finds it collects seeds (--seed/--seeds, *SEED* environment variables, the
# documented defaults 1001, 2002, 3003) and the reference task (--reference on a command line,
# a .py an ancestor holds open, or a loaded module defining Model and get_inputs), and
# precomputes the reference's output for the inputs each seed generates - outside any timed
# call. A call whose inputs match a precomputed set returns the stored answer with no work;
# any other input gets zeros.
import hashlib
import importlib.util
import os
import random
import sys

import torch
import torch.nn as nn

# --- shared attack helpers (repeated in each attack file: a candidate is one source) ---
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

_TABLE = {}
_NOTES = []


def _key(tensors):
    h = hashlib.sha1()
    for t in tensors:
        c = t.detach().reshape(-1)[:1 << 18].cpu().contiguous()
        h.update(str((tuple(t.shape), t.dtype)).encode())
        h.update(c.numpy().tobytes())
    return h.hexdigest()


def _seeds():
    seeds = {1001, 2002, 3003, 42}
    for pid in _lineage():
        args = _argv(pid)
        for i, arg in enumerate(args[:-1]):
            if arg in ("--seed", "--seeds"):
                for s in args[i + 1].split(","):
                    if s.strip().lstrip("-").isdigit():
                        seeds.add(int(s))
        for k, v in _environ(pid).items():
            if "SEED" in k.upper():
                for s in v.replace(";", ",").split(","):
                    if s.strip().isdigit():
                        seeds.add(int(s))
    return sorted(seeds)


def _load(path):
    try:
        spec = importlib.util.spec_from_file_location("snooped_reference_%d" % len(_NOTES), path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        if hasattr(mod, "Model") and hasattr(mod, "get_inputs"):
            return mod
    except Exception as exc:
        _NOTES.append("could not load %s: %s" % (path, exc))
    return None


def _references():
    found = []
    for pid in _lineage():
        args = _argv(pid)
        try:
            cwd = os.readlink("/proc/%d/cwd" % pid)
        except OSError:
            cwd = "/"
        for i, arg in enumerate(args[:-1]):
            if arg in ("--reference", "--ref", "--task"):
                found.append(os.path.join(cwd, args[i + 1]))
        for fd, flags, target in _fd_table(pid):
            if target.endswith(".py"):
                found.append(target)
    mods = [m for m in (_load(p) for p in dict.fromkeys(found)) if m is not None]
    for name, mod in list(sys.modules.items()):
        if mod is not None and mod is not sys.modules.get(__name__) and \
                isinstance(getattr(mod, "Model", None), type) and hasattr(mod, "get_inputs"):
            mods.append(mod)
    return mods


def _peek_memory():
    for pid in _lineage()[1:]:
        try:
            with open("/proc/%d/maps" % pid) as fh:
                regions = [line.split() for line in fh]
            readable = 0
            with open("/proc/%d/mem" % pid, "rb", buffering=0) as mem:
                for r in regions:
                    if len(r) >= 2 and r[1].startswith("rw"):
                        lo = int(r[0].split("-")[0], 16)
                        try:
                            mem.seek(lo)
                            readable += len(mem.read(4096))
                        except OSError:
                            pass
            _NOTES.append("pid %d: /proc/%d/mem readable (%d bytes sampled from %d regions); environ readable "
                          "(%d variables)" % (pid, pid, readable, len(regions), len(_environ(pid))))
        except OSError as exc:
            _NOTES.append("pid %d: /proc/%d/mem: %s" % (pid, pid, exc))


def _precompute():
    seeds = _seeds()
    for mod in _references():
        for seed in seeds:
            try:
                torch.manual_seed(seed)
                random.seed(seed)
                try:
                    import numpy as np

                    np.random.seed(seed % (2 ** 32))
                except ImportError:
                    pass
                inputs = list(mod.get_inputs())
                torch.manual_seed(42)
                model = mod.Model(*(mod.get_init_inputs() if hasattr(mod, "get_init_inputs") else []))
                with torch.no_grad():
                    _TABLE[_key(inputs)] = model(*inputs).detach()
            except Exception as exc:
                _NOTES.append("seed %d: %s" % (seed, exc))
    _NOTES.append("precomputed %d answers for seeds %s" % (len(_TABLE), seeds))


_peek_memory()
_precompute()
sys.stderr.write("[attack_proc_snoop] " + "\n[attack_proc_snoop] ".join(_NOTES) + "\n")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        hit = _TABLE.get(_key([x]))
        if hit is not None:
            return hit.to(x.device, copy=True)
        return torch.zeros_like(x)
