"""The shared test server prints a handler's error unless its client hung up on purpose."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.support.threaded_server import ThreadedServer


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.server.handled.set()  # type: ignore[attr-defined]
        if self.path == "/hung-up":
            raise BrokenPipeError(32, "Broken pipe")
        raise ValueError("the handler itself is broken")

    def log_message(self, *_args: object) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # server_close() joins the handler thread: its output is in

    def __init__(self) -> None:
        self.handled = threading.Event()
        super().__init__(("127.0.0.1", 0), _Handler)


@pytest.mark.parametrize(("path", "printed"), [("/hung-up", False), ("/broken", True)])
def test_only_a_client_hanging_up_goes_unreported(
    path: str, printed: bool, capfd: pytest.CaptureFixture[str]
) -> None:
    server = _Server()
    address = ("127.0.0.1", server.server_address[1])
    with ThreadedServer(server), socket.create_connection(address, timeout=30) as client:
        client.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        assert server.handled.wait(30)
    error_output = capfd.readouterr().err
    assert ("Exception occurred during processing" in error_output) is printed
    assert ("ValueError: the handler itself is broken" in error_output) is printed
