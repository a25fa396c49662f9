"""HTTP/2 frames written as bytes, and the proxy's frames read back, for the boundary fuzzer.

The HTTP/2 cases of the boundary fuzzer (tests/proxy/test_boundary_fuzz_h2.py) send frame
sequences no client library would: header blocks with NUL or non-UTF-8 bytes, duplicated
pseudo-headers, CONTINUATION floods, frames on stream 0 or on even streams, DATA after
END_STREAM. A well-formed opening (preface and SETTINGS) comes from `h2` itself; every other
frame is nine header bytes and a payload written here (`frame`), header blocks encoded by
`hpack`. What the proxy sends back is parsed with `hyperframe` and its header blocks decoded
with `hpack`, so a test can ask of every answer's HEADERS whether it carries a decision.

How a case reaches mitmproxy's HTTP/2 server: `CONNECT` and TLS with ALPN `h2` (the Groundhog
CA verifies the proxy's certificate), `CONNECT` then the preface in the clear (h2c with prior
knowledge, proxy/h2c.py), or the preface straight to the proxy's port.
"""

from __future__ import annotations

import contextlib
import select
import socket
import ssl
import struct
import time
from dataclasses import dataclass, field
from enum import IntEnum, IntFlag, StrEnum
from pathlib import Path

import h2.config
import h2.connection
import hpack
from hyperframe.exceptions import HyperframeError
from hyperframe.frame import (
    ContinuationFrame,
    DataFrame,
    Frame,
    GoAwayFrame,
    HeadersFrame,
    PingFrame,
    RstStreamFrame,
)

from tests.proxy.raw_http import RawAnswer, parse

DECISION = b"x-groundhog-decision"
BARRIER = b"gh-fuzz!"  # the last PING's payload: its ACK means every frame before was read


class Kind(IntEnum):
    DATA = 0x0
    HEADERS = 0x1
    PRIORITY = 0x2
    RST_STREAM = 0x3
    SETTINGS = 0x4
    PUSH_PROMISE = 0x5
    PING = 0x6
    GOAWAY = 0x7
    WINDOW_UPDATE = 0x8
    CONTINUATION = 0x9


class Flag(IntFlag):
    NONE = 0x0
    END_STREAM = 0x1  # ACK on SETTINGS and PING
    END_HEADERS = 0x4
    PADDED = 0x8
    PRIORITY = 0x20


class Transport(StrEnum):
    TLS = "tls"  # CONNECT, then TLS with ALPN h2
    H2C_TUNNEL = "h2c-tunnel"  # CONNECT, then the preface in the clear
    H2C_DIRECT = "h2c-direct"  # the preface straight to the proxy's port


def frame(
    kind: int, flags: int, stream: int, payload: bytes = b"", length: int | None = None
) -> bytes:
    """One frame as bytes; `length` overrides the declared length (a lie, for malformed ones)."""
    declared = len(payload) if length is None else length
    head = struct.pack(">I", declared)[1:] + bytes([kind & 0xFF, flags & 0xFF])
    return head + struct.pack(">I", stream & 0xFFFFFFFF) + payload


def client_opening() -> bytes:
    """The client preface and its SETTINGS, as `h2` writes them for a client."""
    config = h2.config.H2Configuration(client_side=True, header_encoding=None)
    connection = h2.connection.H2Connection(config=config)
    connection.initiate_connection()
    return connection.data_to_send()


def settings_ack() -> bytes:
    return frame(Kind.SETTINGS, Flag.END_STREAM, 0)


def barrier() -> bytes:
    return frame(Kind.PING, Flag.NONE, 0, BARRIER)


def header_block(encoder: hpack.Encoder, pairs: list[tuple[bytes, bytes]]) -> bytes:
    """`pairs` HPACK-encoded as given: no validation, no lowercasing, bytes as they are."""
    return encoder.encode(pairs)


@dataclass
class H2Answer:
    """What came back on one connection."""

    tunnel: RawAnswer | None = None  # the CONNECT's own answer (None: no CONNECT)
    alpn: str | None = None
    heads: dict[int, list[tuple[bytes, bytes]]] = field(default_factory=dict)  # final heads
    bodies: dict[int, bytearray] = field(default_factory=dict)
    ended: set[int] = field(default_factory=set)  # END_STREAM or RST_STREAM from the proxy
    goaway: str | None = None  # the proxy's GOAWAY: its error code and debug data
    closed: bool = False
    barrier_acked: bool = False
    undecodable: str | None = None  # a frame or header block of the proxy's that did not parse

    def decision(self, stream: int) -> bytes | None:
        for name, value in self.heads.get(stream, []):
            if name == DECISION:
                return value
        return None


class AnswerReader:
    """The proxy's frames, fed as they arrive: heads (after CONTINUATIONs), bodies, ends."""

    def __init__(self, answer: H2Answer) -> None:
        self.answer = answer
        self.buffer = bytearray()
        self.decoder = hpack.Decoder()
        self.decoder.max_allowed_table_size = 2**32  # whatever the fuzzed SETTINGS announced
        self.block: tuple[int, bytearray, bool] | None = None  # stream, fragments, END_STREAM

    def feed(self, data: bytes) -> None:
        self.buffer += data
        while len(self.buffer) >= 9 and self.answer.undecodable is None:
            try:
                parsed, length = Frame.parse_frame_header(memoryview(self.buffer[:9]))
                if len(self.buffer) < 9 + length:
                    return
                parsed.parse_body(memoryview(self.buffer[9 : 9 + length]))
            except HyperframeError as error:
                self.answer.undecodable = f"frame: {error!r}"
                return
            del self.buffer[: 9 + length]
            self._take(parsed)

    def _take(self, parsed: Frame) -> None:
        answer = self.answer
        if isinstance(parsed, HeadersFrame):
            self.block = (parsed.stream_id, bytearray(parsed.data), "END_STREAM" in parsed.flags)
            if "END_HEADERS" in parsed.flags:
                self._head_done()
        elif isinstance(parsed, ContinuationFrame) and self.block is not None:
            self.block[1].extend(parsed.data)
            if "END_HEADERS" in parsed.flags:
                self._head_done()
        elif isinstance(parsed, DataFrame):
            answer.bodies.setdefault(parsed.stream_id, bytearray()).extend(parsed.data)
            if "END_STREAM" in parsed.flags:
                answer.ended.add(parsed.stream_id)
        elif isinstance(parsed, RstStreamFrame):
            answer.ended.add(parsed.stream_id)
        elif isinstance(parsed, GoAwayFrame):
            answer.goaway = f"{parsed.error_code} {bytes(parsed.additional_data[:80])!r}"
        elif isinstance(parsed, PingFrame) and "ACK" in parsed.flags:
            answer.barrier_acked |= parsed.opaque_data == BARRIER

    def _head_done(self) -> None:
        assert self.block is not None
        stream, fragments, end_stream = self.block
        self.block = None
        try:
            pairs = [
                (bytes(n), bytes(v)) for n, v in self.decoder.decode(bytes(fragments), raw=True)
            ]
        except hpack.HPACKError as error:
            self.answer.undecodable = f"header block on stream {stream}: {error!r}"
            return
        status = next((value for name, value in pairs if name == b":status"), None)
        interim = status is not None and status.startswith(b"1") and status != b"101"
        if status is not None and not interim and stream not in self.answer.heads:
            self.answer.heads[stream] = pairs
        if end_stream:
            self.answer.ended.add(stream)


def _tunnel(sock: socket.socket, connect_head: bytes, deadline: float) -> RawAnswer:
    """Send the CONNECT head and read the proxy's answer head (and a body, if it says one)."""
    sock.sendall(connect_head)
    received = bytearray()
    while time.monotonic() < deadline:
        answer = parse(bytes(received))
        if answer.status is not None:
            length = answer.header(b"content-length")
            if answer.status == 200 or length is None or len(answer.body) >= int(length or 0):
                return answer
        readable, _, _ = select.select([sock], [], [], max(0.0, deadline - time.monotonic()))
        chunk = sock.recv(65536) if readable else b""
        if not chunk:
            break
        received += chunk
    return parse(bytes(received))


def converse(
    port: int,
    transport: Transport,
    connect_head: bytes,
    data: bytes,
    expected: frozenset[int],
    ca: Path,
    timeout: float,
) -> H2Answer:
    """One connection: open it over `transport`, send `data` (frames, ending with `barrier()`),
    and read until the proxy closes it or sends GOAWAY, or has acknowledged the barrier and
    answered (or reset) every stream in `expected`, or `timeout` passes."""
    answer = H2Answer()
    deadline = time.monotonic() + timeout
    raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock: socket.socket = raw
    with contextlib.ExitStack() as cleanup:
        cleanup.callback(raw.close)
        if transport is not Transport.H2C_DIRECT:
            answer.tunnel = _tunnel(raw, connect_head, deadline)
            if answer.tunnel.status != 200:
                return answer
        if transport is Transport.TLS:
            context = ssl.create_default_context(cafile=str(ca))
            context.set_alpn_protocols(["h2"])
            try:
                sock = context.wrap_socket(raw, server_hostname="127.0.0.1")
            except (OSError, ssl.SSLError):
                answer.closed = True
                return answer
            cleanup.callback(sock.close)
            answer.alpn = sock.selected_alpn_protocol()
        reader = AnswerReader(answer)
        with contextlib.suppress(OSError):
            sock.sendall(data)
        while time.monotonic() < deadline:
            if answer.goaway is not None or answer.undecodable is not None:
                break
            if answer.barrier_acked and expected <= answer.ended:
                break
            pending = isinstance(sock, ssl.SSLSocket) and sock.pending()
            if not pending:
                readable, _, _ = select.select(
                    [sock], [], [], max(0.0, deadline - time.monotonic())
                )
                if not readable:
                    break
            try:
                chunk = sock.recv(65536)
            except (OSError, ssl.SSLError):
                chunk = b""
            if not chunk:
                answer.closed = True
                break
            reader.feed(chunk)
    return answer
