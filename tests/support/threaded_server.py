"""Run a test's http.server on a background thread and always stop it the same way.

Several test servers (the proxy's upstream and stub resolver, the worker's upstream, the
deploy tests' counting world) are small `ThreadingHTTPServer`s; each needs a daemon thread
serving it, a short poll interval so stopping is quick, and a stop that shuts down, closes the
socket and joins the thread. Without one place for it, each copy drifts (a forgotten
`server_close` leaks the port, a long poll slows teardown).
"""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer
from typing import Self

# How often serve_forever checks for shutdown; short so a test's teardown is not slowed.
_POLL_SECONDS = 0.05


class ThreadedServer:
    """`server` serving on a daemon thread from construction; use as a context manager."""

    def __init__(self, server: ThreadingHTTPServer) -> None:
        self._server = server
        self.port: int = server.server_address[1]
        self._thread = threading.Thread(
            target=server.serve_forever, args=(_POLL_SECONDS,), daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
