"""Hold Groundhog's default ports (8070/8080/8090) while tests run, as a running `make up` does.

The README's two commands are `make up` and `make test`. A test that leans on a default port —
a server started without `--port`, a client left on its default resolver URL — passes on a quiet
machine and fails (or, worse, talks to the user's own servers) beside `make up`. Holding the
ports turns that mistake into a failure every time instead of on someone else's machine.

Each held port accepts connections and closes them at once, so a test that wrongly connects
fails fast (a reset) instead of hanging on a backlog nobody reads.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
from collections.abc import Iterator, Sequence

DEFAULT_PORTS = (8070, 8080, 8090)  # resolver, proxy, worldsim (DESIGN §6)
LOOPBACK = "127.0.0.1"


def _listen(port: int) -> socket.socket | None:
    """A listening socket on `port`, or None when something else already holds it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # As servers bind (uvicorn, mitmproxy): a port left in TIME_WAIT by a closed connection is
    # free; only a listener holds it.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((LOOPBACK, port))
        sock.listen()
    except OSError:
        sock.close()
        return None  # taken already (a running `make up`): the condition we want anyway
    return sock


def port_taken(port: int) -> bool:
    """True when nothing can listen on `port` now (someone holds it)."""
    sock = _listen(port)
    if sock is None:
        return True
    sock.close()
    return False


def _refuse_until(stop: socket.socket, listeners: list[socket.socket]) -> None:
    with selectors.DefaultSelector() as selector:
        selector.register(stop, selectors.EVENT_READ)
        for listener in listeners:
            selector.register(listener, selectors.EVENT_READ)
        while True:
            for key, _events in selector.select():
                ready = key.fileobj
                assert isinstance(ready, socket.socket)
                if ready is stop:
                    return
                with contextlib.suppress(OSError):
                    connection, _address = ready.accept()
                    connection.close()


@contextlib.contextmanager
def held_ports(ports: Sequence[int] = DEFAULT_PORTS) -> Iterator[list[int]]:
    """Hold every free port of `ports` on loopback; yields the ports this call holds."""
    listeners = [sock for sock in map(_listen, ports) if sock is not None]
    stop_reader, stop_writer = socket.socketpair()
    worker = threading.Thread(
        target=_refuse_until, args=(stop_reader, listeners), name="held-ports", daemon=True
    )
    worker.start()
    try:
        yield [sock.getsockname()[1] for sock in listeners]
    finally:
        stop_writer.send(b"x")
        worker.join(timeout=10)
        for sock in (*listeners, stop_reader, stop_writer):
            sock.close()
