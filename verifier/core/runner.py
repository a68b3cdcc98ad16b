"""The runner: the only process that loads candidate code. Started by the judge as
``python -m verifier.core.runner READ_FD WRITE_FD [DEVICE]``; it answers the judge's requests over the
channel (verifier/core/channel.py) and nothing else.

Start-up, before any candidate code exists in the process: a launcher moves its future
children into new PID and network namespaces where the host allows it and forks the runner
proper (so whatever the candidate forks dies with it); the runner imports torch, starts
the device, confines itself (verifier/core/confine.py) and reports that confinement in its first
message. Only then does it load the reference and the candidate.
"""
from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing before the runner's torch
if TYPE_CHECKING:
    from typing import Any, NoReturn


def launch(read_fd: int, write_fd: int, device_hint: str | None) -> NoReturn:
    """Fork the runner proper into fresh namespaces; wait and pass on its exit status."""
    from verifier.core import confine

    namespaces = confine.isolate_namespaces()
    pid = os.fork()
    if pid == 0:
        confine.die_with_parent()
        confine.mount_own_proc(namespaces)
        try:
            code = _serve(read_fd, write_fd, namespaces, device_hint)
        except BaseException:  # the runner itself broke: the judge sees the channel close
            import traceback

            traceback.print_exc()
            sys.stderr.flush()
            code = 70
        os._exit(code)
    os.close(read_fd)
    os.close(write_fd)
    _, status = os.waitpid(pid, 0)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))


def _start_device(torch: Any, device: str | None) -> None:
    if device == "cuda":
        torch.cuda.init()
        torch.zeros(1, device="cuda")


def _serve(read_fd: int, write_fd: int, namespaces: dict[str, Any], device_hint: str | None) -> int:
    import traceback

    import torch

    from verifier.core import confine
    from verifier.core.channel import Channel
    from verifier.core.runner_session import RunnerSession, candidate_failure_name

    _start_device(torch, device_hint)  # while the judge still starts up (verifier/core/runner_start.py)
    channel = Channel(read_fd, write_fd)
    header, _ = channel.recv()
    if header.get("type") != "setup":
        return 65
    setup = header["values"]
    device = setup["device"]
    if device != device_hint:
        _start_device(torch, device)
    for folder in (setup["scratch_dir"], setup["build_dir"]):
        os.makedirs(folder, exist_ok=True)
    os.environ["TMPDIR"] = setup["scratch_dir"]  # compilers' temporary files stay in writable ground
    report = dict(namespaces)
    report.update(confine.confine(writable_dirs=setup["writable_dirs"], protected_pids=setup["protected_pids"]))
    session = RunnerSession(setup)

    def answer(kind: str, request_id: Any, tensors: Any = (), **values: Any) -> None:
        values["flags"] = session.flags()
        channel.send({"type": kind, "id": request_id}, tensors, values=values)

    try:
        loaded = session.load(build_only=setup.get("build_only", False))
    except Exception as exc:  # the reference or functional form did not load here either
        answer("ready", 0, loaded=False, confinement=report, checks=session.checks, log=session.log(),
               error="%s: %s" % (type(exc).__name__, str(exc)[-2000:]))
        return 0
    answer("ready", 0, loaded=loaded, confinement=report, checks=session.checks, log=session.log())
    while True:
        header, tensors = channel.recv()
        kind, rid, values = header["type"], header.get("id"), header.get("values") or {}
        try:
            if kind == "trial":
                gold = _rebuild(values["inputs"], tensors)
                trial, first, again = session.trial(values["seed"], gold)
                leaves_a, ta = _flatten(first)
                leaves_c, tc = _flatten(again)
                answer("trial", rid, ta + tc, trial=trial, first=leaves_a, again=leaves_c)
            elif kind == "analyse":
                session.analyse(values["seeds"])
                answer("analysed", rid, checks=session.checks)
            elif kind == "timing_setup":
                session.timing_setup(values["weight_seed"], values.get("start_delay_us"),
                                     values.get("inputs_on_device"))
                answer("timing_ready", rid)
            elif kind == "prepare":
                session.prepare_batch(values.get("clock"))
                answer("prepared", rid)
            elif kind == "batch":
                seeds = values["calls"]
                if not (isinstance(seeds, list) and all(type(s) is int and s >= 0 for s in seeds)):
                    raise ValueError("a batch's calls are input seeds: %r" % (seeds,))
                answer("batch", rid, **session.time_batch(seeds, values.get("clock")))
            elif kind == "kernel_times":
                answer("kernel_times", rid, **session.kernel_times())
            elif kind == "fetch":
                leaves, ts = _flatten(session.fetch(values["index"]))
                answer("fetched", rid, ts, leaves=leaves)
            elif kind == "finish":
                answer("finished", rid, checks=session.finish_checks(), log=session.log())
                return 0
            else:
                answer("unknown", rid, error="unknown request %r" % kind)
        except Exception as exc:
            message = "%s: %s" % (type(exc).__name__, str(exc)[-2000:])
            answer("failed", rid, error=message, failure=candidate_failure_name(message),
                   traceback=traceback.format_exc()[-3000:])


def _flatten(leaves: list[Any]) -> tuple[list[dict[str, Any]], list[Any]]:
    """Output leaves -> (descriptors, tensors): a tensor becomes {"tensor": i}, a plain value
    stays itself, anything else is described by its type."""
    described, tensors = [], []
    for leaf in leaves:
        if type(leaf) is not bool and hasattr(leaf, "detach") and hasattr(leaf, "dtype"):
            described.append({"tensor": len(tensors)})
            tensors.append(leaf.detach().to("cpu"))
        elif isinstance(leaf, (int, float, str, bool)) or leaf is None:
            described.append({"value": leaf})
        else:
            described.append({"unsupported": type(leaf).__name__})
    return described, tensors


def _rebuild(structure: list[dict[str, Any]], tensors: list[Any]) -> list[Any]:
    return [tensors[item["tensor"]] if "tensor" in item else item.get("value") for item in structure]


def main() -> None:
    read_fd, write_fd = int(sys.argv[1]), int(sys.argv[2])
    launch(read_fd, write_fd, sys.argv[3] if len(sys.argv) > 3 else None)


if __name__ == "__main__":
    main()
