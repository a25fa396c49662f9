"""Run a test's http.server on a background thread and always stop it the same way.

Several test servers (the proxy's upstream and stub resolver, the worker's upstream, the
deploy tests' counting world) are small `ThreadingHTTPServer`s; each needs a daemon thread
serving it, a short poll interval so stopping is quick, and a stop that shuts down, closes the
socket and joins the thread. Without one place for it, each copy drifts (a forgotten
`server_close` leaks the port, a long poll slows teardown). A client that hangs up mid-answer
(a proxy past its deadline, a cancelled stream) is what many tests do on purpose, so the server
does not print that traceback into the run's output; any other handler error it still prints.
"""

from __future__ import annotations

import ssl
import sys
import threading
from http.server import ThreadingHTTPServer
from typing import Any, Self

# How often serve_forever checks for shutdown; short so a test's teardown is not slowed.
_POLL_SECONDS = 0.05
# What a handler raises when its client went away: broken pipe, reset, TLS cut short.
HUNG_UP = (ConnectionError, ssl.SSLEOFError)


def _quiet_when_hung_up(server: ThreadingHTTPServer) -> None:
    """`server` reports a handler's error as before unless its client hung up."""
    report = server.handle_error

    def handle_error(request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], HUNG_UP):  # socketserver calls this in its except
            return
        report(request, client_address)

    server.handle_error = handle_error  # type: ignore[method-assign]


class ThreadedServer:
    """`server` serving on a daemon thread from construction; use as a context manager."""

    def __init__(self, server: ThreadingHTTPServer) -> None:
        self._server = server
        _quiet_when_hung_up(server)
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
