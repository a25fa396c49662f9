"""The boundary fuzzer in HTTP/2 (issue 53): hostile frame sequences into a real proxy.

Where mitmproxy speaks HTTP/2 to a worker — after `CONNECT` over TLS with ALPN `h2`, after
`CONNECT` in the clear with prior knowledge (proxy/h2c.py), or with prior knowledge straight to
the proxy's port — a grammar draws a connection's frames (tests/proxy/h2_wire.py): requests
whose header blocks hold the identity headers with NUL, control or non-UTF-8 bytes (the shared
grammar of tests/proxy/boundary_grammar.py), duplicated, missing or misplaced pseudo-headers,
connection-specific fields, oversized blocks, CONTINUATION floods, bodies that overrun their
`content-length`, DATA after END_STREAM, trailers; streams on ids 0, even, reused or going
backwards; RST_STREAM and GOAWAY in the middle of a request; SETTINGS, PING, WINDOW_UPDATE,
PRIORITY and unknown frames with bad lengths or values; garbage. Against a sealed tape, then
against a frozen resolver, after every case:

- the world (a counting server, used by nothing else) has accepted no connection;
- every answer — each response HEADERS the proxy sends on a stream, and a CONNECT's own answer
  when it is not the tunnel's `200` — carries `x-groundhog-decision`;
- no answer is `proxy-failed` (an exception in the proxy's own code: closed, but a bug).

It found one: mitmproxy's own refusal of a stream (`:scheme: CONNECT`) was its HTML page with
no decision (proxy/http2_refusals.py; the regression test below).

CI runs a bounded number of examples; `GROUNDHOG_BOUNDARY_EXAMPLES=N` runs more (a long run).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import hpack
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from tests.proxy.boundary_grammar import (
    ANSWER_SECONDS,
    EXAMPLES,
    FUZZ_SETTINGS,
    HEADER_NAMES,
    NASTY_TEXT,
    SEALED,
    credentials,
    frozen,
    mutated,
    sealed_stack,
)
from tests.proxy.h2_wire import (
    Flag,
    H2Answer,
    Kind,
    Transport,
    barrier,
    client_opening,
    converse,
    frame,
    header_block,
    settings_ack,
)
from tests.proxy.stack import Stack
from tests.proxy.upstream_server import Upstream

MAX_FRAME = 16_384  # SETTINGS_MAX_FRAME_SIZE's initial value: a fragment never exceeds it


@dataclass(frozen=True)
class H2Case:
    transport: Transport
    connect_head: bytes  # the CONNECT request (unused for h2c-direct)
    data: bytes  # every byte after the tunnel (or TLS) opens, the barrier PING last
    expected: frozenset[int]  # streams whose request is complete: each should be answered


def rarely(draw: st.DrawFn) -> bool:
    """One in twenty-four: for what ends the whole connection (a pseudo-header out of place, a
    bad stream id, a connection-level frame), so that most connections carry their requests as
    far as the Groundhog addon, which is what the fuzzer is after."""
    return draw(st.integers(0, 23)) == 11  # not 0: Hypothesis draws bounds far more often


def pseudo_headers(
    draw: st.DrawFn, world: bytes, transport: Transport
) -> list[tuple[bytes, bytes]]:
    scheme = b"https" if transport is Transport.TLS else b"http"
    method = draw(st.sampled_from([b"GET", b"POST", b"HEAD", b"PUT", b"DELETE"]))
    path = b"/" + draw(st.sampled_from([b"h2", b"search?q=1", b""]))
    pairs = [(b":method", method), (b":scheme", scheme), (b":authority", world), (b":path", path)]
    if mutated(draw):
        pairs[draw(st.integers(0, 3))] = (
            draw(st.sampled_from([b":method", b":scheme", b":authority", b":path"])),
            draw(st.sampled_from([b"CONNECT", b"", b"*", b"ftp", b"[::1]:1"]) | NASTY_TEXT),
        )
    if rarely(draw):  # a pseudo-header twice, missing, unknown, or the extended CONNECT's
        change = draw(st.sampled_from(["twice", "missing", "unknown", "protocol"]))
        index = draw(st.integers(0, len(pairs) - 1))
        if change == "twice":
            pairs.insert(index, pairs[index])
        elif change == "missing":
            del pairs[index]
        elif change == "unknown":
            pairs.insert(index, (b":" + draw(NASTY_TEXT), b"x"))
        else:
            pairs = [(b":method", b"CONNECT"), (b":protocol", b"websocket"), *pairs[1:]]
    return pairs


def regular_headers(draw: st.DrawFn) -> list[tuple[bytes, bytes]]:
    pairs: list[tuple[bytes, bytes]] = []
    if not mutated(draw):  # a well-formed identity on the sealed tape, most of the time
        pairs += [(b"x-groundhog-tape", SEALED.encode()), (b"x-groundhog-branch", b"root")]
    if mutated(draw):  # identity (or any Groundhog header) with hostile bytes, maybe twice
        name = draw(
            st.sampled_from(
                [
                    b"x-groundhog-tape",
                    b"x-groundhog-branch",
                    b"x-groundhog-capability",
                    b"x-groundhog-decision",
                    b"X-Groundhog-Tape",
                ]
            )
        )
        pairs += [(name, draw(NASTY_TEXT)) for _ in range(draw(st.integers(1, 2)))]
    if mutated(draw):
        pairs.append((b"proxy-authorization", credentials(draw)))
    if rarely(draw):  # fields HTTP/2 forbids, or framing that lies
        pairs.append(
            draw(
                st.sampled_from(
                    [
                        (b"connection", b"keep-alive"),
                        (b"transfer-encoding", b"chunked"),
                        (b"te", b"gzip"),
                        (b"upgrade", b"h2c"),
                        (b"keep-alive", b"5"),
                        (b"content-length", b"99999999999999999999"),
                        (b"content-length", b"3"),
                        (b"content-length", b"-1"),
                    ]
                )
            )
        )
    if mutated(draw):
        pairs += draw(
            st.lists(st.tuples(HEADER_NAMES.map(bytes.lower), NASTY_TEXT), min_size=1, max_size=4)
        )
    if draw(st.integers(0, 9)) == 0:  # many fields, or one overlong value
        pairs += [(b"x-many", b"v")] * draw(st.integers(1, 300))
    if draw(st.integers(0, 9)) == 0:
        pairs.append((b"x-long", b"a" * draw(st.integers(1000, 100_000))))
    return pairs


def fragments(draw: st.DrawFn, block: bytes) -> list[bytes]:
    """The block cut into HEADERS' and CONTINUATIONs' payloads (each within MAX_FRAME)."""
    pieces = [block[i : i + MAX_FRAME] for i in range(0, len(block), MAX_FRAME)] or [b""]
    if len(block) > 1 and draw(st.integers(0, 3)) == 0:
        cut = draw(st.integers(1, len(block) - 1))
        pieces = [block[:cut], *[p for p in (block[cut:],) if p]]
        pieces = [p[i : i + MAX_FRAME] for p in pieces for i in range(0, len(p), MAX_FRAME)]
    return pieces


def header_frames(
    draw: st.DrawFn, stream: int, block: bytes, end_stream: bool
) -> tuple[bytes, bool]:
    """HEADERS (+ CONTINUATIONs) carrying `block`; and whether the block was ended."""
    pieces = fragments(draw, block)
    flood = mutated(draw) and draw(st.booleans())
    if flood:  # empty CONTINUATIONs by the thousand, ended or never
        pieces = [pieces[0], *([b""] * draw(st.integers(10, 3000))), *pieces[1:]]
    ended = not (flood and draw(st.booleans()))
    first_flags = Flag.END_STREAM if end_stream else Flag.NONE
    payload = pieces[0]
    if rarely(draw):  # padding or priority, honest or not
        padding = draw(st.integers(0, 300))
        first_flags |= Flag.PADDED
        payload = bytes([padding & 0xFF]) + payload + b"\0" * draw(st.integers(0, padding))
    out = []
    for index, piece in enumerate(pieces):
        last = index == len(pieces) - 1
        flags = (first_flags if index == 0 else Flag.NONE) | (
            Flag.END_HEADERS if last and ended else Flag.NONE
        )
        kind = Kind.HEADERS if index == 0 else Kind.CONTINUATION
        out.append(frame(kind, flags, stream, payload if index == 0 else piece))
    return b"".join(out), ended


def stream_ids(draw: st.DrawFn, count: int) -> list[int]:
    ids, last = [], -1
    for _ in range(count):
        fresh = last + 2 if last > 0 else 1
        chosen = fresh
        if rarely(draw):
            chosen = draw(st.sampled_from([0, 2, max(last, 1), 2**31 - 1, 2**31 + 1, fresh + 2]))
        ids.append(chosen)
        last = max(last, chosen)
    return ids


def connection_frames(draw: st.DrawFn, stream: int) -> bytes:
    """One frame that is about the connection, or lies about itself."""
    return draw(
        st.sampled_from(
            [
                frame(Kind.GOAWAY, 0, 0, b"\0\0\0\0\0\0\0\0"),
                frame(Kind.GOAWAY, 0, stream, b"\0\0\0\0\0\0\0\x01"),
                frame(Kind.RST_STREAM, 0, stream, b"\0\0\0\x08"),
                frame(Kind.RST_STREAM, 0, 0, b"\0\0\0\x01"),
                frame(Kind.SETTINGS, 0, 0, b"\0\x02\0\0\0\x02"),  # ENABLE_PUSH 2
                frame(Kind.SETTINGS, 0, 0, b"\0\x04\x80\0\0\0"),  # window beyond 2^31-1
                frame(Kind.SETTINGS, 0, 0, b"\0\x05\0\0\0\x01"),  # MAX_FRAME_SIZE 1
                frame(Kind.SETTINGS, 0, 0, b"\0\x01\xff\xff\xff\xff"),  # table 4 GiB
                frame(Kind.SETTINGS, 0, 0, b"\0\x01\0"),  # not a multiple of six
                frame(Kind.SETTINGS, 0, 1, b""),  # on a stream
                frame(Kind.SETTINGS, Flag.END_STREAM, 0, b"\0\x03\0\0\0\x01"),  # ACK with payload
                frame(Kind.PING, 0, 0, b"short"),
                frame(Kind.PING, 0, stream, b"12345678"),
                frame(Kind.WINDOW_UPDATE, 0, 0, b"\0\0\0\0"),
                frame(Kind.WINDOW_UPDATE, 0, stream, b"\x7f\xff\xff\xff"),
                frame(Kind.PRIORITY, 0, stream, struct_priority(stream)),
                frame(Kind.PUSH_PROMISE, Flag.END_HEADERS, stream, b"\0\0\0\x02"),
                frame(0xFA, 0xFF, stream, b"unknown frame type"),
                frame(Kind.DATA, 0, 0, b"data on stream 0"),
                frame(Kind.HEADERS, Flag.END_HEADERS, 0, b"\x82"),
                frame(Kind.DATA, 0, stream, b"", length=MAX_FRAME + 1),  # over the limit
                frame(Kind.CONTINUATION, Flag.END_HEADERS, stream, b"\x82"),  # orphan
            ]
        )
        | st.binary(min_size=1, max_size=40)  # garbage where a frame should start
    )


def struct_priority(stream: int) -> bytes:
    return (stream & 0x7FFFFFFF).to_bytes(4, "big") + b"\x10"  # depends on itself


@st.composite
def h2_cases(draw: st.DrawFn, world_port: int) -> H2Case:
    world = f"127.0.0.1:{world_port}".encode()
    transport = draw(st.sampled_from(list(Transport)))
    connect = [f"CONNECT {world.decode()} HTTP/1.1".encode(), b"Host: " + world]
    if mutated(draw):
        connect.append(b"Proxy-Authorization: " + credentials(draw))
    connect_head = b"\r\n".join([*connect, b"", b""])
    opening = client_opening()
    if rarely(draw):  # the preface cut short, or not a preface at all
        opening = draw(st.sampled_from([opening[:10], opening[:24], b"PRI * HTTP/2.0\r\n\r\n"]))
    parts = [opening, settings_ack()]
    encoder = hpack.Encoder()
    expected: set[int] = set()
    streams = stream_ids(draw, draw(st.integers(1, 4)))
    for stream in streams:
        regular = regular_headers(draw)
        if draw(st.booleans()):
            regular = draw(st.permutations(regular))
        pairs = pseudo_headers(draw, world, transport) + regular
        if rarely(draw):  # a pseudo-header after a regular one: the connection's end
            pairs = draw(st.permutations(pairs))
        body = draw(st.binary(max_size=40)) if draw(st.booleans()) else b""
        end_in_headers = not body and not mutated(draw)
        block, ended = header_frames(
            draw, stream, header_block(encoder, pairs), end_stream=end_in_headers
        )
        parts.append(block)
        complete = ended and end_in_headers
        if body or not end_in_headers:
            end = not mutated(draw)  # a body never ended keeps the stream open
            parts.append(frame(Kind.DATA, Flag.END_STREAM if end else Flag.NONE, stream, body))
            complete = ended and end
            if mutated(draw):  # trailers, ending it (again)
                trailers = header_block(encoder, [(b"x-trailer", draw(NASTY_TEXT))])
                parts.append(
                    frame(Kind.HEADERS, Flag.END_HEADERS | Flag.END_STREAM, stream, trailers)
                )
        if mutated(draw):  # DATA after END_STREAM, or the stream reset mid-request
            parts.append(
                draw(
                    st.sampled_from(
                        [
                            frame(Kind.DATA, Flag.END_STREAM, stream, b"after the end"),
                            frame(Kind.RST_STREAM, 0, stream, b"\0\0\0\x08"),
                        ]
                    )
                )
            )
        if rarely(draw):
            parts.append(connection_frames(draw, stream))
        if complete and stream % 2 == 1 and stream < 2**31:
            expected.add(stream)
    parts.append(barrier())
    return H2Case(transport, connect_head, b"".join(parts), frozenset(expected))


def check(case: H2Case, answer: H2Answer, world: Upstream) -> None:
    what = f"{case.transport} {case.connect_head[:200]!r} {case.data[:300]!r}"
    outcome = "closed" if answer.closed else ("goaway" if answer.goaway else "open")
    event(f"{case.transport}: {len(answer.heads)} answered, {outcome}")
    assert world.state.accepts == 0, f"the world was reached by {what}"
    assert answer.undecodable is None, (answer.undecodable, what)
    if answer.tunnel is not None and answer.tunnel.status not in (None, 200):
        assert answer.tunnel.decision is not None, (answer.tunnel.raw[:400], what)
        return
    if case.transport is Transport.TLS and answer.alpn is not None:
        assert answer.alpn == "h2", f"the proxy chose {answer.alpn} over h2"
    for stream, head in answer.heads.items():
        decision = answer.decision(stream)
        event(f"answered {dict(head).get(b':status', b'-').decode()} {(decision or b'-').decode()}")
        assert decision is not None, f"stream {stream} answered {head!r} without a decision: {what}"
        body = bytes(answer.bodies.get(stream, b""))
        assert b"/problems/proxy-failed" not in body, (body[:400], what)


def send_one(stack: Stack, world: Upstream, data: st.DataObject) -> None:
    case = data.draw(h2_cases(world.port))
    answer = converse(
        stack.proxy.port,
        case.transport,
        case.connect_head,
        case.data,
        case.expected,
        stack.ca,
        ANSWER_SECONDS,
    )
    check(case, answer, world)


@pytest.fixture(scope="module")
def world() -> Iterator[Upstream]:
    with Upstream(name="fuzzed-h2-world") as server:
        yield server


@pytest.fixture(scope="module")
def fuzz_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with sealed_stack(tmp_path_factory.mktemp("fuzz-h2")) as stack:
        yield stack


@pytest.fixture
def frozen_resolver(fuzz_stack: Stack) -> Iterator[Stack]:
    with frozen(fuzz_stack) as stack:
        yield stack


def one_request(stack: Stack, world: Upstream, transport: Transport, scheme: bytes) -> H2Answer:
    """One well-formed HTTP/2 request on the sealed tape (but for `scheme`), on stream 1."""
    authority = f"127.0.0.1:{world.port}".encode()
    pairs = [
        (b":method", b"GET"),
        (b":scheme", scheme),
        (b":authority", authority),
        (b":path", b"/premise"),
        (b"x-groundhog-tape", SEALED.encode()),
        (b"x-groundhog-branch", b"root"),
    ]
    block = header_block(hpack.Encoder(), pairs)
    data = client_opening() + settings_ack()
    data += frame(Kind.HEADERS, Flag.END_HEADERS | Flag.END_STREAM, 1, block) + barrier()
    connect_head = b"CONNECT " + authority + b" HTTP/1.1\r\nHost: " + authority + b"\r\n\r\n"
    answer = converse(
        stack.proxy.port, transport, connect_head, data, frozenset({1}), stack.ca, ANSWER_SECONDS
    )
    assert answer.undecodable is None, answer.undecodable
    if transport is Transport.TLS:
        assert answer.alpn == "h2"
    return answer


@pytest.mark.parametrize("transport", list(Transport))
def test_each_transport_reaches_the_proxy_in_http2(
    fuzz_stack: Stack, world: Upstream, transport: Transport
) -> None:
    """The fuzzer's premise: a well-formed request over each transport is spoken to in HTTP/2
    and refused as a miss of the sealed tape, with a decision."""
    scheme = b"https" if transport is Transport.TLS else b"http"
    answer = one_request(fuzz_stack, world, transport, scheme)
    head = dict(answer.heads[1])
    assert answer.decision(1) == b"refused", head  # a sealed tape's miss
    assert b"sealed" in bytes(answer.bodies[1]), answer.bodies[1]
    assert world.state.accepts == 0


@pytest.mark.parametrize("transport", list(Transport))
def test_a_request_mitmproxy_refuses_itself_is_a_refused_problem(
    fuzz_stack: Stack, world: Upstream, transport: Transport
) -> None:
    """Found by this fuzzer: `:scheme: CONNECT` was answered by mitmproxy's own HTML page
    (`400`, no decision); proxy/http2_refusals.py makes it a `refused` problem."""
    answer = one_request(fuzz_stack, world, transport, b"CONNECT")
    head = dict(answer.heads[1])
    assert head[b":status"] == b"400", head
    assert answer.decision(1) == b"refused", head
    assert head[b"content-type"] == b"application/problem+json", head
    assert b"/problems/proxy-refused" in bytes(answer.bodies[1]), answer.bodies[1]
    assert world.state.accepts == 0
    assert world.state.accepts == 0


@FUZZ_SETTINGS
@given(data=st.data())
def test_a_sealed_tape_lets_no_frame_through(
    fuzz_stack: Stack, world: Upstream, data: st.DataObject
) -> None:
    send_one(fuzz_stack, world, data)


@settings(FUZZ_SETTINGS, max_examples=max(EXAMPLES // 2, 1))
@given(data=st.data())
def test_a_frozen_resolver_lets_no_frame_through(
    frozen_resolver: Stack, world: Upstream, data: st.DataObject
) -> None:
    send_one(frozen_resolver, world, data)
