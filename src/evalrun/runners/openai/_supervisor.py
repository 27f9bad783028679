"""The small process between evalrun and a launched engine, so nothing of the engine outlives evalrun.

`python -I _supervisor.py FD GRACE COMMAND...` (docs/served-engines.md, 'Nothing outlives evalrun'): it runs
COMMAND in a process group of its own and stops the whole group (SIGTERM, SIGKILL after GRACE) when the pipe
FD, whose write end only evalrun holds, ends: the kernel closes it even when evalrun is SIGKILLed. A Linux
subreaper; standard library only, so it never starts slower than the engine.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import sys
import time

_PR_SET_PDEATHSIG, _PR_SET_CHILD_SUBREAPER = 1, 36


def _prctl(option: int, value: int) -> None:
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            ctypes.CDLL(None, use_errno=True).prctl(option, value)


def _in_own_group() -> None:
    """In the command's process before exec: a group of its own (what is stopped), and SIGKILL should this
    supervisor itself be killed."""
    os.setpgid(0, 0)
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _reap(leader: int, status: list[int]) -> None:
    """Reap every finished child (the leader's exit status goes to `status`)."""
    while True:
        try:
            pid, code = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid == leader:
            status.append(os.waitstatus_to_exitcode(code))


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stop_group(pgid: int, leader: int, status: list[int], grace: float) -> None:
    """SIGTERM to the group, SIGKILL to whatever is left after `grace` seconds; back once it is empty."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    killed = False
    while True:
        _reap(leader, status)
        if not _group_alive(pgid):
            return
        if time.monotonic() >= deadline and not killed:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
            killed, deadline = True, time.monotonic() + 10  # a member stuck in the kernel: not waited on forever
        elif killed and time.monotonic() >= deadline:
            return
        time.sleep(0.02)


def main(argv: list[str]) -> int:
    fd, grace, command = int(argv[0]), float(argv[1]), argv[2:]
    stop = []
    # a signal sent to this process (not through the pipe) stops the engine as the pipe's end does; a
    # handler, not SIG_IGN, so the command starts with the default dispositions
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: stop.append(signum))
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    try:
        leader = os.fork()
    except OSError as exc:
        print(f"evalrun: cannot start the server: {exc}", flush=True)
        return 127
    if leader == 0:  # the command
        try:
            os.close(fd)
            _in_own_group()
            os.execvp(command[0], command)
        except OSError as exc:
            print(f"evalrun: cannot start {command[0]!r}: {exc.strerror or exc}", flush=True)
        os._exit(127)
    with contextlib.suppress(PermissionError, ProcessLookupError):
        os.setpgid(leader, leader)  # also here: no signal can reach the group before the child has made it
    status: list[int] = []
    while not status and not stop:
        with contextlib.suppress(InterruptedError):
            if select.select([fd], [], [], 0.05)[0] and not os.read(fd, 64):
                break  # evalrun closed the pipe, or ended
        _reap(leader, status)
    _stop_group(leader, leader, status, grace)
    code = status[0] if status else -signal.SIGKILL
    if code < 0:  # exit as the command did: killed by the same signal
        with contextlib.suppress(OSError, ValueError):  # SIGKILL and SIGSTOP have no handler to reset
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
