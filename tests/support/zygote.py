"""Start the resolver and the proxy by forking one process that has already imported them.

Importing `resolver.__main__` takes about 2.7 s of CPU and `proxy.__main__` about 2 s on the
2-core test machines, and the suite starts a few hundred of them; the crash-injection machines
restart the resolver after every kill, so most of their time was imports. A zygote imports
both once; each start is then a `fork` of it that runs the module as `python -m` would
(`runpy.run_module(..., run_name="__main__")`): a real, separate process, serving on its
own port, killed and restarted as a `python -m` child is. What a zygote child cannot have
differently from its siblings is what an interpreter decides before `main` runs (its import
path, a `sitecustomize`), so `start_server` forks only for the preloaded modules, run from
the repository root, with no `PYTHON*` variable but `PYTHONUNBUFFERED` in the environment;
anything else is spawned as before. `GROUNDHOG_TEST_ZYGOTE=0` turns it off.

The test process talks to the zygote over a Unix socket, one JSON line per request. A child
is not the test process's child, so `ForkedProcess` gives the part of `subprocess.Popen` the
tests use (`pid`, `poll`, `wait`, `send_signal`, `kill`, `returncode`) through a pidfd, which
becomes readable when the child exits; the zygote keeps each exited child unreaped until the
test asks for its exit status, so the pid cannot be reused meanwhile. Each child leaves the
same watcher `groundhog.lifetime` leaves (it dies with the test run), and the zygote itself is
started tied to the test process.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import runpy
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from groundhog.lifetime import leave_watcher, start_time, tied_command

REPO_ROOT = Path(__file__).resolve().parents[2]
PRELOADED = ("resolver", "proxy")
# Variables an interpreter reads before `main` (or that change what importing does).
_KEPT_FOR_ALL = frozenset({"PYTHONUNBUFFERED"})


def enabled() -> bool:
    return sys.platform.startswith("linux") and os.environ.get("GROUNDHOG_TEST_ZYGOTE") != "0"


def can_fork(args: Sequence[str], overrides: Mapping[str, str], cwd: Path) -> bool:
    """Whether a start of `python -m args…` in `cwd`, with the test's `overrides` of the
    environment (the zygote has the rest of it), may be a zygote fork."""
    if not enabled() or not args or args[0] not in PRELOADED or cwd.resolve() != REPO_ROOT:
        return False
    return not any(
        name.startswith("PYTHON") and name not in _KEPT_FOR_ALL for name in overrides
    ) and not overrides.get("GROUNDHOG_SHIM")


class ForkedProcess:
    """A zygote child, with the part of `subprocess.Popen`'s interface tests use."""

    def __init__(self, zygote: Zygote, pid: int, args: list[str]) -> None:
        self.args = args
        self.pid = pid
        self.returncode: int | None = None
        self._zygote = zygote
        self._pidfd = os.pidfd_open(pid)
        self._reaping = threading.Lock()

    def poll(self) -> int | None:
        return self._settle(0)

    def wait(self, timeout: float | None = None) -> int:
        code = self._settle(timeout)
        if code is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        return code

    def send_signal(self, number: int) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self._pidfd, number)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def _settle(self, timeout: float | None) -> int | None:
        if self.returncode is None:
            try:
                readable, _, _ = select.select([self._pidfd], [], [], timeout)
            except (OSError, ValueError):
                if self.returncode is None:  # not closed by a reap in another thread
                    raise
                return self.returncode
            # Two threads may look at once (a test's kill and its client's poll): one reaps.
            with self._reaping:
                if readable and self.returncode is None:
                    self.returncode = self._zygote.reap(self.pid)
                    os.close(self._pidfd)
        return self.returncode


class Zygote:
    """The test process's end: starts the zygote on first use, asks it to fork."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._connection: socket.socket | None = None
        self._replies: Any = None

    def spawn(
        self, args: Sequence[str], *, env: Mapping[str, str], log_path: Path, own_group: bool
    ) -> ForkedProcess:
        request = {
            "op": "spawn",
            "args": list(args),
            "env": dict(env),
            "log": str(log_path),
            "own_group": own_group,
            "tie_to": os.getpid(),
        }
        reply = self._ask(request)
        return ForkedProcess(self, reply["pid"], [sys.executable, "-m", *args])

    def reap(self, pid: int) -> int:
        return self._ask({"op": "reap", "pid": pid})["returncode"]

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            if self._connection is None:
                self._start()
            assert self._connection is not None
            self._connection.sendall(json.dumps(request).encode() + b"\n")
            line = self._replies.readline()
        if not line:
            raise RuntimeError("the test zygote went away; see its log in the temp directory")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"the test zygote refused {request['op']}: {reply['error']}")
        return reply

    def _start(self) -> None:
        directory = tempfile.mkdtemp(prefix="groundhog-zygote-")
        path = os.path.join(directory, "socket")
        listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listening.bind(path)
        listening.listen(1)
        listening.settimeout(0.5)
        with open(os.path.join(directory, "log"), "wb") as log:
            self._process = subprocess.Popen(
                tied_command([sys.executable, "-m", "tests.support.zygote", path, *PRELOADED]),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=REPO_ROOT,
            )
        try:
            while True:  # it connects back once it has imported what it preloads
                try:
                    connection, _ = listening.accept()
                    break
                except TimeoutError:
                    if self._process.poll() is not None:
                        log_text = Path(directory, "log").read_text(errors="replace")
                        raise RuntimeError(f"the test zygote exited:\n{log_text}") from None
        finally:
            listening.close()
        connection.settimeout(None)
        self._connection = connection
        self._replies = connection.makefile("rb")


ZYGOTE = Zygote()


# -- the zygote's side -------------------------------------------------------------------------


def _serve(socket_path: str, modules: Sequence[str]) -> None:
    for module in modules:
        importlib.import_module(f"{module}.__main__")
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(socket_path)
    replies = connection.makefile("rb")
    for line in replies:
        request = json.loads(line)
        try:
            if request["op"] == "spawn":
                reply: dict[str, Any] = {"pid": _fork(request, connection)}
            else:
                _, status = os.waitpid(request["pid"], 0)
                reply = {"returncode": os.waitstatus_to_exitcode(status)}
        except Exception as error:  # the test sees it as a RuntimeError naming it
            reply = {"error": f"{type(error).__name__}: {error}"}
        connection.sendall(json.dumps(reply).encode() + b"\n")


def _fork(request: dict[str, Any], connection: socket.socket) -> int:
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        connection.close()
        _become(request)
        code = _run(request["args"])
    except BaseException:
        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _become(request: dict[str, Any]) -> None:
    """In the child: what `Popen` of `python -m` would have set up before `main` runs."""
    if request["own_group"]:
        os.setsid()
    null = os.open(os.devnull, os.O_RDONLY)
    log = os.open(request["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.dup2(null, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.closerange(3, 65536)  # as Popen's close_fds: none of the zygote's descriptors
    sys.stdin = open(0, closefd=False)  # noqa: SIM115
    sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
    os.chdir(REPO_ROOT)
    os.environ.clear()
    os.environ.update(request["env"])
    tie_to = request["tie_to"]
    started = start_time(tie_to)
    if started is not None:
        leave_watcher(tie_to, started)


def _run(args: list[str]) -> int:
    sys.argv = [args[0], *args[1:]]
    sys.path[0] = str(REPO_ROOT)
    try:
        runpy.run_module(args[0], run_name="__main__", alter_sys=True)
    except SystemExit as exit_:
        if exit_.code is None:
            return 0
        if isinstance(exit_.code, int):
            return exit_.code
        sys.stderr.write(f"{exit_.code}\n")  # as the interpreter reports `SystemExit("…")`
        return 1
    return 0


if __name__ == "__main__":
    _serve(sys.argv[1], sys.argv[2:])
