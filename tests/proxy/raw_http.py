"""One HTTP/1.1 exchange over a raw socket: bytes no client library would send.

The boundary tests (issue 53) send header bytes that are not UTF-8, control bytes, broken
framing; every client library refuses to send those, so the tests write the bytes themselves
and read back whatever comes: an answer's status, headers and body, or a closed connection.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field

DECISION = b"x-groundhog-decision"


@dataclass
class RawAnswer:
    status: int | None  # None: the connection closed (or timed out) before a status line
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    body: bytes = b""
    raw: bytes = b""

    def header(self, name: bytes) -> bytes | None:
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None

    @property
    def decision(self) -> bytes | None:
        return self.header(DECISION)


def parse(raw: bytes) -> RawAnswer:
    """The first answer in `raw` (interim 1xx answers skipped)."""
    rest = raw
    while True:
        head, separator, body = rest.partition(b"\r\n\r\n")
        if not separator:
            return RawAnswer(None, raw=raw)
        lines = head.split(b"\r\n")
        parts = lines[0].split(b" ", 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
            return RawAnswer(None, raw=raw)
        status = int(parts[1])
        headers = [tuple(part.strip() for part in line.split(b":", 1)) for line in lines[1:]]
        if 100 <= status < 200 and status != 101:
            rest = body
            continue
        pairs = [(h[0], h[1]) for h in headers if len(h) == 2]
        answer = RawAnswer(status, pairs, body, raw)
        length = answer.header(b"content-length")
        if length is not None and length.isdigit():
            answer.body = body[: int(length)]
        return answer


def _complete(raw: bytes) -> bool:
    answer = parse(raw)
    if answer.status is None:
        return False
    length = answer.header(b"content-length")
    if length is None or not length.isdigit():
        return False  # read to the close
    head_end = raw.index(b"\r\n\r\n") + 4
    return len(raw) - head_end >= int(length) or answer.status in (101, 204, 304)


def exchange(
    port: int, data: bytes, *, timeout: float = 30.0, half_close: bool = False
) -> RawAnswer:
    """Send `data` to 127.0.0.1:`port` (then half-close, if asked) and read the first answer,
    or up to the close or `timeout`."""
    received = bytearray()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        try:
            sock.sendall(data)
            if half_close:
                sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the proxy closed early: what it sent (if anything) is still read below
        try:
            while not _complete(bytes(received)):
                chunk = sock.recv(65536)
                if not chunk:
                    break
                received += chunk
        except (ConnectionResetError, TimeoutError, OSError):
            pass
    return parse(bytes(received))
