"""A TCP load balancer for tests: what a Kubernetes Service is in front of resolver replicas.

In a deployment the proxy's `groundhog_resolver_url` names a Service, not a replica: each new
TCP connection goes to one of the live endpoints, and a connection lives and dies with the
replica it went to. A test of replica failover must put the same thing between the proxy and
the resolvers, or it proves nothing about what the proxy does when the replica behind one of
its pooled keep-alive connections dies. This balancer listens on an ephemeral loopback port,
sends each new client connection round-robin to one of its backend ports, skips a backend that
refuses the connection (a Service dropping a dead endpoint), pipes bytes both ways and closes
each side when the other closes. A client whose every backend refused is closed at once, as a
Service with no endpoint leaves it. Blocking sockets and two threads per connection: the tests
open a handful of connections, and threads keep it independent of any event loop under test.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections import Counter
from collections.abc import Sequence
from typing import Self

from tests.support.servers import LOOPBACK

# How often the accepting thread looks whether it was stopped.
_ACCEPT_POLL_SECONDS = 0.05
# A backend that neither accepts nor refuses within this long is skipped like a refusing one.
CONNECT_TIMEOUT_SECONDS = 5.0
_CHUNK = 65536


class _Link:
    """One client connection and the backend connection it was piped to."""

    def __init__(self, client: socket.socket, backend: socket.socket, port: int) -> None:
        self.client = client
        self.backend = backend
        self.port = port
        self._lock = threading.Lock()
        self._pumps_left = 2
        self.threads: list[threading.Thread] = []

    def shut(self) -> None:
        """Both sides end (a blocked `recv` on either returns): closing one closes the other.

        Only shutdown here: the descriptors are closed by the last pump to finish, so no thread
        ever reads a descriptor number the kernel has handed to a new socket."""
        for sock in (self.client, self.backend):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def pump_done(self) -> bool:
        """A pump finished; True for the last one (which closes both sockets)."""
        with self._lock:
            self._pumps_left -= 1
            last = self._pumps_left == 0
        if last:
            self.client.close()
            self.backend.close()
        return last


class Balancer:
    """Round-robin TCP balancing from `port` to `backends` (ports on loopback); a context
    manager, or call `stop()`. Counters say where connections went: `served[port]` (piped to
    that backend), `refused[port]` (skipped: nothing accepted there), `turned_away` (clients
    closed because every backend refused)."""

    def __init__(self, backends: Sequence[int], *, host: str = LOOPBACK) -> None:
        if not backends:
            raise ValueError("a balancer needs at least one backend port")
        self.backends = list(backends)
        self.host = host
        self.served: Counter[int] = Counter()
        self.refused: Counter[int] = Counter()
        self.turned_away = 0
        self._next = 0
        self._lock = threading.Lock()
        self._links: set[_Link] = set()
        self._stopped = threading.Event()
        self._listener = socket.create_server((host, 0))
        self._listener.settimeout(_ACCEPT_POLL_SECONDS)
        self.port: int = self._listener.getsockname()[1]
        self._acceptor = threading.Thread(
            target=self._accept_forever, name=f"balancer-{self.port}", daemon=True
        )
        self._acceptor.start()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def open_connections(self) -> Counter[int]:
        """Client connections piped to each backend now."""
        with self._lock:
            return Counter(link.port for link in self._links)

    def _accept_forever(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # the listener was closed: stopping
            client.settimeout(None)
            self._route(client)

    def _route(self, client: socket.socket) -> None:
        """Pipe `client` to the next backend that accepts, trying each at most once."""
        with self._lock:
            start = self._next
            self._next = (self._next + 1) % len(self.backends)
        for turn in range(len(self.backends)):
            port = self.backends[(start + turn) % len(self.backends)]
            try:
                backend = socket.create_connection(
                    (self.host, port), timeout=CONNECT_TIMEOUT_SECONDS
                )
            except OSError:
                with self._lock:
                    self.refused[port] += 1
                continue
            backend.settimeout(None)
            self._pipe(client, backend, port)
            return
        with self._lock:
            self.turned_away += 1
        client.close()

    def _pipe(self, client: socket.socket, backend: socket.socket, port: int) -> None:
        link = _Link(client, backend, port)
        with self._lock:
            if self._stopped.is_set():
                client.close()
                backend.close()
                return
            self.served[port] += 1
            self._links.add(link)
        for source, sink in ((client, backend), (backend, client)):
            thread = threading.Thread(target=self._pump, args=(link, source, sink), daemon=True)
            link.threads.append(thread)
        for thread in link.threads:
            thread.start()

    def _pump(self, link: _Link, source: socket.socket, sink: socket.socket) -> None:
        try:
            while chunk := source.recv(_CHUNK):
                sink.sendall(chunk)
        except OSError:
            pass  # reset, or shut by the other pump: the link ends either way
        finally:
            link.shut()
            if link.pump_done():
                with self._lock:
                    self._links.discard(link)

    def stop(self) -> None:
        """Stop accepting, end every piped connection, and wait for the threads to finish."""
        self._stopped.set()
        self._acceptor.join(timeout=10)
        self._listener.close()
        with self._lock:
            links = list(self._links)
        for link in links:
            link.shut()
        for link in links:
            for thread in link.threads:
                thread.join(timeout=10)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
