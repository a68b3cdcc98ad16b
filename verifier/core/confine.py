"""Confinement of the runner (the process that runs the candidate) on Linux, as far as the host
permits, and the judge's own protection from it. Each measure reports whether it took
effect, and the report goes into the result document (``checks.confinement``), so a verdict
says what held. docs/harness.md lists what is and is not enforced.

Judge: not dumpable (no ptrace, no /proc/<judge>/mem or environ for a process without
CAP_SYS_PTRACE) and a child subreaper (processes the runner forks and orphans come back to
the judge, which kills them and says so).

Runner, in order, before any candidate code runs:
1. ``isolate_namespaces`` (in a launcher, before it forks the runner proper): a new PID
   namespace (everything the candidate forks dies with the runner, and the judge's PID is
   not visible there) and a new network namespace (no network), where the host permits;
2. ``confine``: no new privileges; every capability dropped (the runner may run as root on
   a GPU host); landlock: writes only beneath its own build and scratch folders and /dev,
   no TCP bind/connect, no signals or abstract sockets outside its own domain (each where
   the kernel's landlock ABI has it); seccomp: no IP sockets, no ptrace or
   process_vm_*, no new namespaces, no io_uring, no signal to the judge or its ancestors.
"""
from __future__ import annotations

import ctypes
import errno
import os
import platform
import signal
import struct
import time

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_SECCOMP = 22
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
CLONE_NEWNET = 0x40000000
CLONE_NEWPID = 0x20000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNS = 0x00020000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 0x4000, 1 << 18

_ARCH = platform.machine()
# Syscall numbers and the seccomp audit arch of the two architectures we run on.
_SYSCALLS = {
    "x86_64": dict(audit_arch=0xC000003E, socket=41, ptrace=101, kill=62, tkill=200, tgkill=234,
                   rt_sigqueueinfo=129, rt_tgsigqueueinfo=297, process_vm_readv=310, process_vm_writev=311,
                   pidfd_open=434, pidfd_send_signal=424, io_uring_setup=425, io_uring_enter=426,
                   io_uring_register=427, unshare=272, setns=308, clone=56, clone3=435, capset=126,
                   landlock_create_ruleset=444, landlock_add_rule=445, landlock_restrict_self=446),
    "aarch64": dict(audit_arch=0xC00000B7, socket=198, ptrace=117, kill=129, tkill=130, tgkill=131,
                    rt_sigqueueinfo=138, rt_tgsigqueueinfo=240, process_vm_readv=270, process_vm_writev=271,
                    pidfd_open=434, pidfd_send_signal=424, io_uring_setup=425, io_uring_enter=426,
                    io_uring_register=427, unshare=97, setns=268, clone=220, clone3=435, capset=91,
                    landlock_create_ruleset=444, landlock_add_rule=445, landlock_restrict_self=446),
}.get(_ARCH)


def _prctl(option, arg2=0, arg3=0, arg4=0, arg5=0):
    if _libc.prctl(option, ctypes.c_ulong(arg2), ctypes.c_ulong(arg3), ctypes.c_ulong(arg4),
                   ctypes.c_ulong(arg5)) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


def _syscall(name, *args):
    if _SYSCALLS is None:
        raise OSError(errno.ENOSYS, "unsupported architecture %s" % _ARCH)
    result = _libc.syscall(_SYSCALLS[name], *args)
    if result < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return result


def _attempt(report, name, fn):
    try:
        value = fn()
        report[name] = True if value is None else value
    except (OSError, AttributeError) as exc:
        report[name] = "not enforced: %s" % exc


# --- the judge ---------------------------------------------------------------------------

def harden_judge() -> dict[str, bool | str]:
    report = {}
    _attempt(report, "judge_not_dumpable", lambda: _prctl(PR_SET_DUMPABLE, 0))
    _attempt(report, "judge_child_subreaper", lambda: _prctl(PR_SET_CHILD_SUBREAPER, 1))
    return report


def die_with_parent() -> None:
    """preexec_fn: the child gets SIGKILL when the process that started it dies."""
    try:
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass


def children_of(pid: int) -> dict[int, str]:
    """{child pid: state letter} of the processes whose parent is ``pid`` (Linux /proc)."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            found[int(entry)] = fields[0]
    return found


def describe_process(pid: int) -> str:
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as fh:
            cmd = fh.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        cmd = "?"
    return "pid %d (%s)" % (pid, cmd[:200])


def _reap(pid):
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def reap_orphans(known: set[int] | tuple[int, ...] = (), grace_s: float = 1.0) -> list[str]:
    """Kill every child of this process (a subreaper) except ``known``; returns what was found
    alive. Orphans of the runner come back here: the runner proper, which dies with its
    launcher (reaped silently once it is a zombie), and anything the candidate left running
    past a grace period (reported and killed). The judge starts no other long-lived children."""
    found = []
    deadline = time.monotonic() + grace_s
    for _ in range(200):  # a fork bomb refills: keep going until none is left
        children = {p: s for p, s in children_of(os.getpid()).items() if p not in known}
        for pid in [p for p, s in children.items() if s in ("Z", "X")]:
            _reap(pid)
            del children[pid]
        if not children:
            break
        if time.monotonic() < deadline:
            time.sleep(0.05)
            continue
        for pid in children:
            if len(found) < 20:
                found.append(describe_process(pid))
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid in children:
            _reap(pid)
    return found


# --- the runner ---------------------------------------------------------------------------

def isolate_namespaces() -> dict[str, bool | str]:
    """New PID (with its own mount namespace) and network namespaces for this process's future
    children: call in the launcher before it forks the runner proper, which then calls
    ``mount_own_proc``."""
    report = {}
    _attempt(report, "pid_namespace", lambda: _unshare(CLONE_NEWPID | CLONE_NEWNS))
    _attempt(report, "network_namespace", lambda: _unshare(CLONE_NEWNET))
    return report


def mount_own_proc(report: dict[str, bool | str]) -> None:
    """In the runner proper (PID 1 of its namespace): a /proc of its own namespace. CUDA fails
    in a PID namespace that still sees the host's /proc (error 304 on the H200 host), and with
    its own /proc the runner cannot even list the judge's process."""
    if report.get("pid_namespace") is not True:
        return
    try:
        if _libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0 or \
                _libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None) != 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        report["own_proc"] = True
    except OSError as exc:
        report["own_proc"] = "not enforced: %s" % exc


def _unshare(flags):
    if _libc.unshare(flags) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


def confine(*, writable_dirs: list[str], protected_pids: list[int]) -> dict[str, bool | str]:
    """Confine this process (and what it starts) before candidate code loads."""
    report = {}
    _attempt(report, "no_new_privileges", lambda: _prctl(PR_SET_NO_NEW_PRIVS, 1))
    _attempt(report, "capabilities_dropped", _drop_capabilities)
    _attempt(report, "landlock", lambda: _landlock(writable_dirs))
    _attempt(report, "seccomp", lambda: _seccomp(protected_pids))
    return report


def _drop_capabilities():
    for cap in range(64):
        try:
            _prctl(PR_CAPBSET_DROP, cap)
        except OSError:  # past the last capability this kernel knows, or already gone
            pass
    header = struct.pack("=Ii", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this thread
    data = bytes(24)  # effective, permitted, inheritable = 0, for both 32-bit halves
    _syscall("capset", ctypes.c_char_p(header), ctypes.c_char_p(data))
    with open("/proc/self/status") as fh:
        eff = [line.split()[1] for line in fh if line.startswith("CapEff:")]
    if eff and int(eff[0], 16) != 0:
        raise OSError(errno.EPERM, "capabilities still effective: %s" % eff[0])
    return "effective set %s" % (eff[0] if eff else "?")


_FS_WRITE = {  # landlock access rights that change the file system, by the ABI that has them
    1: (1 << 1) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8) | (1 << 9) | (1 << 10) | (1 << 11)
    | (1 << 12),
    2: 1 << 13,  # REFER
    3: 1 << 14,  # TRUNCATE
}
_LANDLOCK_WRITE_FILE = (1 << 1) | (1 << 14)
_NET_TCP = (1 << 0) | (1 << 1)  # BIND_TCP, CONNECT_TCP (ABI 4)
_SCOPES = (1 << 0) | (1 << 1)  # abstract unix sockets, signals (ABI 6)


def _landlock(writable_dirs):
    abi = _syscall("landlock_create_ruleset", None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    fs = 0
    for version, bits in _FS_WRITE.items():
        if abi >= version:
            fs |= bits
    net = _NET_TCP if abi >= 4 else 0
    scoped = _SCOPES if abi >= 6 else 0
    attr = struct.pack("=QQQ", fs, net, scoped)
    size = 24 if abi >= 6 else (16 if abi >= 4 else 8)
    ruleset = _syscall("landlock_create_ruleset", ctypes.c_char_p(attr[:size]), ctypes.c_size_t(size),
                       ctypes.c_uint32(0))
    try:
        rules = [(path, fs) for path in writable_dirs] + [("/dev", _LANDLOCK_WRITE_FILE & fs)]
        for path, access in rules:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                rule = struct.pack("=Qi", access, fd)  # struct landlock_path_beneath_attr is packed
                _syscall("landlock_add_rule", ruleset, ctypes.c_int(1), ctypes.c_char_p(rule), ctypes.c_uint32(0))
            finally:
                os.close(fd)
        _syscall("landlock_restrict_self", ruleset, ctypes.c_uint32(0))
    finally:
        os.close(ruleset)
    enforced = ["writes only beneath %s and /dev" % ", ".join(writable_dirs)]
    if net:
        enforced.append("no TCP bind or connect")
    if scoped:
        enforced.append("no signals or abstract unix sockets outside the runner")
    return "ABI %d: %s" % (abi, "; ".join(enforced))


# Classic BPF for seccomp.
_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_SECCOMP_RET_ALLOW = 0x7FFF0000
_SECCOMP_RET_ERRNO = 0x00050000
_AF_INET, _AF_INET6, _AF_PACKET = 2, 10, 17


def _insn(code, k, jt=0, jf=0):
    return struct.pack("=HBBI", code, jt, jf, k & 0xFFFFFFFF)


def _seccomp_program(protected_pids):
    sc = _SYSCALLS
    deny = _SECCOMP_RET_ERRNO | errno.EPERM
    blocks = []
    # Whole syscalls denied.
    for name in ("ptrace", "process_vm_readv", "process_vm_writev", "io_uring_setup", "io_uring_enter",
                 "io_uring_register", "unshare", "setns", "pidfd_send_signal", "tkill"):
        blocks.append((sc[name], None, deny))
    blocks.append((sc["clone3"], None, _SECCOMP_RET_ERRNO | errno.ENOSYS))  # glibc falls back to clone
    blocks.append((sc["socket"], [_AF_INET, _AF_INET6, _AF_PACKET], _SECCOMP_RET_ERRNO | errno.EACCES))
    pids = sorted({p & 0xFFFFFFFF for p in protected_pids} | {0xFFFFFFFF} |
                  {(-p) & 0xFFFFFFFF for p in protected_pids})
    for name in ("kill", "rt_sigqueueinfo"):
        blocks.append((sc[name], pids, deny))
    for name in ("tgkill", "rt_tgsigqueueinfo", "pidfd_open"):
        blocks.append((sc[name], sorted({p & 0xFFFFFFFF for p in protected_pids}), deny))
    prog = [_insn(_LD_W_ABS, 4), _insn(_JEQ_K, sc["audit_arch"], 1, 0), _insn(_RET_K, deny),
            _insn(_LD_W_ABS, 0)]
    if _ARCH == "x86_64":  # the x32 ABI numbers syscalls from 0x40000000: refuse them all
        prog += [_insn(_JGE_K, 0x40000000, 0, 1), _insn(_RET_K, deny)]
    for nr, values, action in blocks:
        if values is None:
            prog += [_insn(_JEQ_K, nr, 0, 1), _insn(_RET_K, action)]
            continue
        # if nr matches: load arg0's low word, test each value, reload nr and go on
        n = len(values)
        prog.append(_insn(_JEQ_K, nr, 0, n + 4))  # no match: skip the whole block
        prog.append(_insn(_LD_W_ABS, 16))
        for i, value in enumerate(values):
            # match -> jump to the RET below the remaining tests
            prog.append(_insn(_JEQ_K, value, n - i, 0))
        prog.append(_insn(0x05, 1))  # JA +1: no match, skip the RET
        prog.append(_insn(_RET_K, action))
        prog.append(_insn(_LD_W_ABS, 0))
    prog.append(_insn(_RET_K, _SECCOMP_RET_ALLOW))
    return b"".join(prog)


def _seccomp(protected_pids):
    if _SYSCALLS is None:
        raise OSError(errno.ENOSYS, "no syscall table for %s" % _ARCH)
    program = _seccomp_program(protected_pids)
    buf = ctypes.create_string_buffer(program)

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
    _prctl(PR_SET_SECCOMP, 2, ctypes.addressof(fprog))
    return "no IP sockets, ptrace, process_vm_*, io_uring, new namespaces; no signal to pids %s" % (
        ", ".join(str(p) for p in sorted(protected_pids)))
