"""A loopback world for the framework integrations' group tests: every live GET answers fresh
random bytes (so a shared read is told apart from a refetched one by its bytes) and a POST is a
write. It counts each (method, path) it served, the "upstream hit once per address" check."""

from __future__ import annotations

import contextlib
import secrets
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.groundhog.upstream import send_json
from tests.support.threaded_server import ThreadedServer


@dataclass
class World:
    """A loopback world: every live GET answers fresh random bytes; a POST is a write."""

    url: str = ""
    hits: Counter[tuple[str, str]] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)


@contextlib.contextmanager
def serving_random_world() -> Iterator[World]:
    """The world on an ephemeral loopback port, stopped when the block ends."""
    state = World()

    class Handler(BaseHTTPRequestHandler):
        def _count(self) -> None:
            with state.lock:
                state.hits[(self.command, self.path)] += 1

        def do_GET(self) -> None:
            self._count()
            send_json(self, {"path": self.path, "draw": secrets.token_hex(16)})

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self._count()
            send_json(self, {"path": self.path, "written": True})

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_port}"
    with ThreadedServer(server):
        yield state
