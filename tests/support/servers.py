"""Start real servers as child processes on ephemeral loopback ports, and end them.

Tests talk to Groundhog the way users do: over TCP to separate processes. Without one place
that starts a server, waits for its health endpoint with a deadline and always ends it, each
test would grow its own sleeps and leak processes when an assertion fails.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from groundhog.lifetime import tied_command
from tests.support import zygote

REPO_ROOT = Path(__file__).resolve().parents[2]
LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """An ephemeral TCP port on loopback that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return sock.getsockname()[1]


def free_ports(count: int) -> list[int]:
    """`count` distinct ephemeral loopback ports, free a moment ago.

    Calling free_port() in a loop can return one port twice: each socket is closed before the
    next bind, and the kernel may hand the same port out again. Holding every socket open until
    all are chosen makes them distinct.
    """
    with contextlib.ExitStack() as stack:
        sockets = [
            stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            for _ in range(count)
        ]
        for sock in sockets:
            sock.bind((LOOPBACK, 0))
        return [sock.getsockname()[1] for sock in sockets]


@dataclass
class ServerProcess:
    """A child process serving on `port`; `log` holds what it printed."""

    command: list[str]
    port: int
    process: subprocess.Popen[bytes] | zygote.ForkedProcess
    log_path: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill_hard(self) -> None:
        """SIGKILL, as a crash would: no shutdown hooks run."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)

    def kill_group_hard(self) -> None:
        """SIGKILL to the server's whole process group (started with `own_group`), as a
        crash of the host process and everything it spawned would be."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


# For tests that run a whole benchmark or training loop: a guard against a hang, far above how
# long they take even on a heavily loaded machine, instead of a budget that fails when it is slow.
HANG_GUARD_SECONDS = 3600


def wait_until(predicate, *, timeout: float = 30.0, interval: float = 0.05, what: str = "") -> None:
    """Poll `predicate` until it is true or the deadline passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        # A short pause between polls of a condition, not a wait for a server to be ready.
        time.sleep(interval)
    raise TimeoutError(f"gave up after {timeout:.0f}s waiting for {what or predicate}")


def _healthy(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1.0, trust_env=False).status_code == 200
    except httpx.HTTPError:
        return False


def accepting(port: int) -> bool:
    """Whether something on loopback accepts a TCP connection on `port` now."""
    with contextlib.suppress(OSError), socket.create_connection((LOOPBACK, port), timeout=0.5):
        return True
    return False


def start_server(
    args: Sequence[str],
    *,
    port: int | None = None,
    health_path: str | None = "/healthz",
    env: dict[str, str] | None = None,
    timeout: float = 60.0,
    cwd: Path | None = None,
    own_group: bool = False,
) -> ServerProcess:
    """Run `python -m <args…> --port PORT` and wait until it answers.

    `args` is everything after `python -m`; `--host 127.0.0.1 --port PORT` are appended. With
    `health_path=None` readiness means the port accepts connections (the proxy). `own_group`:
    the server leads a process group of its own (`kill_group_hard` ends all of it).
    """
    port = port or free_port()
    command = [sys.executable, "-m", *args, "--host", LOOPBACK, "--port", str(port)]
    child_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        child_env.pop(name, None)
    # The child keeps its own copy of the descriptor, so ours can close once it has started.
    with tempfile.NamedTemporaryFile(
        prefix="groundhog-server-", suffix=".log", delete=False
    ) as log_file:
        process: subprocess.Popen[bytes] | zygote.ForkedProcess
        if zygote.can_fork(args, env or {}, cwd or REPO_ROOT):
            # A fork of a process that imported the server already (tests/support/zygote.py).
            process = zygote.ZYGOTE.spawn(
                command[2:], env=child_env, log_path=Path(log_file.name), own_group=own_group
            )
        else:
            process = subprocess.Popen(
                tied_command(command),  # dies with the test run, however it ends
                stdout=log_file,
                stderr=subprocess.STDOUT,
                cwd=cwd or REPO_ROOT,
                env=child_env,
                start_new_session=own_group,
            )
    server = ServerProcess(command, port, process, Path(log_file.name), env or {})

    def ready() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"{' '.join(command)} exited early:\n{server.log()}")
        if health_path is None:
            return accepting(port)
        return _healthy(f"{server.url}{health_path}")

    try:
        wait_until(ready, timeout=timeout, what=f"{' '.join(args)} on port {port}")
    except BaseException:
        server.stop()
        raise
    return server


@contextlib.contextmanager
def running_server(args: Sequence[str], **kwargs) -> Iterator[ServerProcess]:
    server = start_server(args, **kwargs)
    try:
        yield server
    finally:
        server.stop()
