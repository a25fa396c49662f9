"""Start the resolver and proxy as child processes, wait for them, and always stop them.

`groundhog up` must give a newcomer a working pair in one command, report clearly when either
side fails to start (with its log), and never leave an orphan behind on Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from groundhog.errors import LocalProblem
from groundhog.lifetime import tied_command

HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM)
# Variables that would route a server's own outgoing calls through a proxy.
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY")

logger = logging.getLogger(__name__)

POLL_INTERVAL_S = 0.1


class LaunchError(LocalProblem, RuntimeError):
    """A child server exited or did not become ready before the deadline."""

    title = "Launch failed"


@dataclass
class Service:
    name: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, timeout: float = 10.0) -> None:
        stop_process(self.process, timeout=timeout)


def stop_process(process: subprocess.Popen[bytes], *, timeout: float = 10.0) -> None:
    """SIGTERM, then SIGKILL if it lingers; only this child, by its own id."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=timeout)


def spawn(
    name: str, module_args: list[str], log_dir: Path, environment: Mapping[str, str] | None = None
) -> Service:
    """Run `python -m <module_args>` with its output in `<log_dir>/<name>.log` (in
    `environment` instead of this process's, if given)."""
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{name}.log"
    env = dict(os.environ if environment is None else environment)
    for variable in PROXY_VARIABLES:
        env.pop(variable, None)  # the servers' own calls must never loop through a proxy
    with log_path.open("ab") as log:
        # A session of its own: a terminal's Ctrl-C reaches only `up`, which then stops the
        # proxy before the resolver instead of both dying at once in any order.
        # Tied to this process: even a SIGKILLed `up` leaves no server behind on its port.
        process = subprocess.Popen(
            tied_command([sys.executable, "-m", *module_args]),
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    return Service(name, process, log_path)


def http_ready(url: str) -> bool:
    import httpx  # on use: the CLI's other commands start without it

    try:
        return httpx.get(url, timeout=1.0, trust_env=False).status_code == 200
    except httpx.HTTPError:
        return False


def port_ready(host: str, port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.5):
        return True
    return False


def wait_ready(child: Service, ready: Callable[[], bool], *, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if child.process.poll() is not None:
            raise LaunchError(
                f"the {child.name} exited with code {child.process.returncode} while starting; "
                f"its log ({child.log_path}):\n{child.log_tail()}"
            )
        if ready():
            return
        time.sleep(POLL_INTERVAL_S)  # polling a readiness probe, not waiting blind
    raise LaunchError(
        f"the {child.name} did not answer {what} within {timeout:.0f}s; "
        f"its log ({child.log_path}):\n{child.log_tail()}"
    )


def free_port(host: str = "127.0.0.1") -> int:
    """An ephemeral port on `host` that was free a moment ago."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_in_use(host: str, port: int) -> bool:
    """Whether binding `host:port` would fail because something else listens there."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        # As the servers bind: a port in TIME_WAIT is free, one with a listener is not.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False


def check_ports(host: str, ports: dict[str, int]) -> None:
    """Refuse before starting anything if a port is taken, naming the groundhog flag to change.

    Checked up front because a readiness probe answered by whoever holds the port would
    otherwise print a ready banner for servers that then fail.
    """
    seen: dict[int, str] = {}
    for flag, port in ports.items():
        if port in seen:
            raise LaunchError(f"{seen[port]} and {flag} are both {port}; give them different ports")
        seen[port] = flag
        if port != 0 and port_in_use(host, port):
            raise LaunchError(
                f"port {port} on {host} is already in use (another groundhog up, or another "
                f"program); stop it, or choose a free port with {flag} PORT"
            )


def connect_host(host: str) -> str:
    """Where to reach a server bound to `host` (a wildcard bind is reached on loopback)."""
    return {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)


def url_for(host: str, port: int) -> str:
    reach = connect_host(host)
    return f"http://[{reach}]:{port}" if ":" in reach else f"http://{reach}:{port}"


@contextlib.contextmanager
def stack(
    *,
    host: str,
    resolver_port: int,
    proxy_port: int,
    data: Path,
    timeout: float = 60.0,
    proxy_args: Sequence[str] = (),
    environment: Mapping[str, str] | None = None,
) -> Iterator[tuple[Service, Service]]:
    """Resolver, then proxy (it needs the resolver), both ready; both stopped on exit."""
    logs = data / "logs"
    children: list[Service] = []
    try:
        resolver = spawn(
            "resolver",
            [
                "resolver",
                "--host", host,
                "--port", str(resolver_port),
                "--data", str(data),
                "--proxy-url", url_for(host, proxy_port),
            ],
            logs,
            environment,
        )  # fmt: skip
        children.append(resolver)
        health = f"{url_for(host, resolver_port)}/healthz"
        wait_ready(resolver, lambda: http_ready(health), timeout=timeout, what=health)
        proxy = spawn(
            "proxy",
            [
                "proxy",
                "--host", host,
                "--port", str(proxy_port),
                "--resolver-url", url_for(host, resolver_port),
                "--data", str(data),
                *proxy_args,  # how it reaches the world (--upstream-ca, --upstream-proxy, …)
            ],
            logs,
            environment,
        )  # fmt: skip
        children.append(proxy)
        reach = connect_host(host)
        wait_ready(
            proxy,
            lambda: port_ready(reach, proxy_port),
            timeout=timeout,
            what=f"connections on port {proxy_port}",
        )
        yield resolver, proxy
    finally:
        with signals_held():
            for child in reversed(children):
                child.stop()


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Ignore Ctrl-C and SIGTERM while children are being stopped.

    A second signal (a double Ctrl-C, or `make` passing one on) would otherwise raise inside the
    clean-up and leave the children that were not yet stopped running, detached, on their ports.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {number: signal.signal(number, signal.SIG_IGN) for number in HELD_SIGNALS}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def wait_for_exit(children: tuple[Service, ...]) -> Service:
    """Block until a child exits and return it; Ctrl-C (KeyboardInterrupt) propagates."""
    while True:
        for child in children:
            if child.process.poll() is not None:
                return child
        time.sleep(0.2)  # supervising children; nothing to do until one exits or a signal


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM behaves like Ctrl-C, so the same clean-up stops the children either way."""

    def interrupt(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
