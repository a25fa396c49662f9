"""Run a command that dies with the process that started it, however that process ends.

A service started by `groundhog up`, the benchmark or a test must not outlive its parent: a
parent killed by a test timeout or SIGKILL runs no clean-up, and its resolver, proxy and world
would stay on their ports for good. On Linux the kernel can signal a child when its parent
dies (`PR_SET_PDEATHSIG`); this module sets that in a tiny wrapper and then `exec`s the real
command, so no `preexec_fn` runs between fork and exec in a threaded parent.

    subprocess.Popen(tied_command([sys.executable, "-m", "resolver", ...]))

or `python -m groundhog.lifetime PARENT_PID COMMAND...`. Elsewhere than Linux the command runs
unchanged (the parents' own clean-up still stops it on an ordinary exit).

The signal fires when the *thread* that started the child exits, so start long-lived children
from a thread that lives as long as they should (the main thread, as every caller here does).
"""

from __future__ import annotations

import os
import signal
import sys

_PR_SET_PDEATHSIG = 1


def tied_command(command: list[str], parent_pid: int | None = None) -> list[str]:
    """`command`, wrapped so it receives SIGTERM when this process (or `parent_pid`) dies."""
    if not sys.platform.startswith("linux"):
        return list(command)
    parent = os.getpid() if parent_pid is None else parent_pid
    return [sys.executable, "-m", "groundhog.lifetime", str(parent), *command]


def _set_parent_death_signal(number: int) -> bool:
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, number, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def main(argv: list[str]) -> None:
    if len(argv) < 2 or not argv[0].isdigit():
        sys.stderr.write("usage: python -m groundhog.lifetime PARENT_PID COMMAND [ARG...]\n")
        raise SystemExit(2)
    parent, command = int(argv[0]), argv[1:]
    _set_parent_death_signal(signal.SIGTERM)
    # The parent may have died before prctl took effect: then nobody would ever signal us.
    if os.getppid() != parent:
        raise SystemExit(1)
    try:
        os.execvp(command[0], command)
    except OSError as error:
        sys.stderr.write(f"cannot run {command[0]}: {error}\n")
        raise SystemExit(127) from None


if __name__ == "__main__":
    main(sys.argv[1:])
