"""A private resolver and proxy with the world closed, for one verify run, and gone after it.

A verify must use the real serving path (mitmproxy, as `groundhog proxy` runs it, and a
resolver) yet change nothing on the user's resolver and reach nothing outside: so it starts
its own pair on free loopback ports over a temporary store, and points the proxy's upstream at
a listener that counts every connection and closes it. A sealed tape never opens one; if the
serving path ever tried, the count says so, at the socket, whatever the proxy decided. On exit
both servers are stopped and the temporary store is removed.
"""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from groundhog.launcher import free_port, stack, url_for

LOOPBACK = "127.0.0.1"
START_TIMEOUT_S = 120.0


class ClosedWorld:
    """A listener standing in for the whole world: counts connections and closes each at once."""

    def __init__(self) -> None:
        self._socket = socket.create_server((LOOPBACK, 0))
        self._socket.settimeout(0.2)  # so `close` is noticed promptly by the accept loop
        self.port = int(self._socket.getsockname()[1])
        self._count = 0
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="verify-closed-world")
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def connections(self) -> int:
        with self._lock:
            return self._count

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                connection, _ = self._socket.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self._count += 1
            connection.close()

    def close(self) -> None:
        self._closed.set()
        self._thread.join()
        self._socket.close()


def private_environment() -> dict[str, str]:
    """This environment without Groundhog's settings: the private servers must not open the
    user's database, demand its tokens or read its data directory."""
    return {name: value for name, value in os.environ.items() if not name.startswith("GROUNDHOG_")}


@dataclass(frozen=True)
class Sandbox:
    resolver_url: str
    proxy_url: str
    world: ClosedWorld
    directory: Path


@contextlib.contextmanager
def sandbox() -> Iterator[Sandbox]:
    """A private resolver and proxy whose only way out is a `ClosedWorld`; all gone on exit."""
    world = ClosedWorld()
    try:
        with tempfile.TemporaryDirectory(prefix="groundhog-verify-") as name:
            directory = Path(name)
            resolver_port, proxy_port = free_port(LOOPBACK), free_port(LOOPBACK)
            with stack(
                host=LOOPBACK,
                resolver_port=resolver_port,
                proxy_port=proxy_port,
                data=directory / "data",
                timeout=START_TIMEOUT_S,
                proxy_args=["--upstream-proxy", world.url],
                environment=private_environment(),
            ):
                yield Sandbox(
                    url_for(LOOPBACK, resolver_port),
                    url_for(LOOPBACK, proxy_port),
                    world,
                    directory,
                )
    finally:
        world.close()
