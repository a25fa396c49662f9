"""Run a command that dies with the process that started it, however that process ends.

A service started by `groundhog up`, the benchmark or a test must not outlive its parent: a
parent killed by a test timeout or SIGKILL runs no clean-up, and its resolver, proxy and world
would stay on their ports for good.

    subprocess.Popen(tied_command([sys.executable, "-m", "resolver", ...]))

runs `python -m groundhog.lifetime PARENT_PID COMMAND...`, which leaves a small watcher behind
and then `exec`s the command (same pid, so the caller's Popen still stops it directly). The
watcher checks every half second that the parent *process* still lives (by pid and start time,
so a reused pid does not fool it); when it is gone it sends the command SIGTERM, then SIGKILL.
Not `PR_SET_PDEATHSIG`: the kernel sends that when the *thread* that started the child exits,
which kills servers started from a worker thread while their process is still using them.
Linux only (it reads /proc); elsewhere the command runs unchanged and the parents' own
clean-up stops it on an ordinary exit.
"""

from __future__ import annotations

import os
import signal
import sys
import time

POLL_S = 0.5
GRACE_S = 10.0


def tied_command(command: list[str], parent_pid: int | None = None) -> list[str]:
    """`command`, wrapped so it is stopped when this process (or `parent_pid`) dies."""
    if not sys.platform.startswith("linux"):
        return list(command)
    parent = os.getpid() if parent_pid is None else parent_pid
    return [sys.executable, "-m", "groundhog.lifetime", str(parent), *command]


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks (field 22 of /proc/PID/stat), or None if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None
    if fields[0] == b"Z":  # exited, not yet reaped: gone all the same
        return None
    return int(fields[19])


def _watch(parent: int, parent_started: int, server: int, server_started: int) -> None:
    """In the watcher: stop `server` once `parent` is gone; leave once `server` is gone."""
    while True:
        time.sleep(POLL_S)
        if start_time(server) != server_started:
            return
        if start_time(parent) != parent_started:
            break
    for number, wait in ((signal.SIGTERM, GRACE_S), (signal.SIGKILL, GRACE_S)):
        try:
            os.kill(server, number)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if start_time(server) != server_started:
                return
            time.sleep(0.1)


def leave_watcher(parent: int, parent_started: int) -> None:
    """Fork a watcher of this process (orphaned at once, so the command never has to reap it).

    `main` calls it before it `exec`s the command; a process that becomes a server without an
    `exec` (the tests' zygote children, tests/support/zygote.py) calls it itself."""
    server = os.getpid()
    server_started = start_time(server)
    if server_started is None:
        return
    first = os.fork()
    if first == 0:
        try:
            if os.fork() == 0:
                os.setsid()  # out of the caller's process group: its Ctrl-C is not for us
                # Hold none of the command's pipes: a caller reading its output to EOF must
                # not wait for the watcher.
                null = os.open(os.devnull, os.O_RDWR)
                for descriptor in (0, 1, 2):
                    os.dup2(null, descriptor)
                os.closerange(3, 65536)
                _watch(parent, parent_started, server, server_started)
        finally:
            os._exit(0)
    os.waitpid(first, 0)


def main(argv: list[str]) -> None:
    if len(argv) < 2 or not argv[0].isdigit():
        sys.stderr.write("usage: python -m groundhog.lifetime PARENT_PID COMMAND [ARG...]\n")
        raise SystemExit(2)
    parent, command = int(argv[0]), argv[1:]
    parent_started = start_time(parent)
    if parent_started is None or os.getppid() != parent:
        raise SystemExit(1)  # the parent is already gone: nobody would ever stop the command
    leave_watcher(parent, parent_started)
    try:
        os.execvp(command[0], command)
    except OSError as error:
        sys.stderr.write(f"cannot run {command[0]}: {error}\n")
        raise SystemExit(127) from None


if __name__ == "__main__":
    main(sys.argv[1:])
