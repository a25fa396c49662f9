"""h2c with prior knowledge through the proxy: gRPC's insecure channel is recorded and shared.

grpcio's insecure channel opens `CONNECT host:port` to the proxy and speaks HTTP/2 in the clear
inside; mitmproxy alone parses the preface as an HTTP/1 `PRI` request and kills it. With
proxy/h2c.py the calls are flows like any other: the second branch is served the first one's
recording, trailers included, and a sealed fork replays with the world not called.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest

from proxy.h2c import starts_with_preface
from tests.proxy.stack import Stack

METHOD = "/pkg.Lookup/Get"


@pytest.fixture
def h2c_world() -> Iterator[tuple[int, Counter[str]]]:
    """A cleartext gRPC server on loopback whose unary `Get` answers a fresh random number."""
    calls: Counter[str] = Counter()

    def get(request: bytes, _context: grpc.ServicerContext) -> bytes:
        calls[METHOD] += 1
        return request + f":{random.random()}".encode()

    handler = grpc.method_handlers_generic_handler(
        "pkg.Lookup", {"Get": grpc.unary_unary_rpc_method_handler(get)}
    )
    server = grpc.server(ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield port, calls
    finally:
        server.stop(grace=None)


def call(stack: Stack, port: int, tape: str, branch: str) -> bytes:
    options = [("grpc.http_proxy", f"http://127.0.0.1:{stack.proxy.port}")]
    with grpc.insecure_channel(f"127.0.0.1:{port}", options=options) as channel:
        unary = channel.unary_unary(METHOD)
        metadata = [("x-groundhog-tape", tape), ("x-groundhog-branch", branch)]
        return unary(b"q", metadata=metadata, timeout=60)


def test_h2c_prior_knowledge_is_recorded_shared_and_replayed_sealed(
    stack: Stack, h2c_world: tuple[int, Counter[str]]
) -> None:
    port, calls = h2c_world
    rules = [{"operation": METHOD, "reads": ["lookup"]}]
    tape = stack.open_tape(dependency_model="rules", rules=rules)
    first, second = stack.fork(tape, 2)

    recorded = call(stack, port, tape, first)
    shared = call(stack, port, tape, second)

    assert recorded.startswith(b"q:") and shared == recorded
    assert calls[METHOD] == 1
    events = stack.admin("GET", f"/v1/tapes/{tape}/events", params={"branch": second}).json()
    assert [event["decision"] for event in events["events"]] == ["shared"]
    stack.seal(tape)
    (replay,) = stack.fork(tape, ["replay"])
    assert call(stack, port, tape, replay) == recorded
    assert calls[METHOD] == 1


def test_only_the_http2_preface_counts_as_prior_knowledge() -> None:
    assert starts_with_preface(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
    assert not starts_with_preface(b"GET / HTTP/1.1\r\n")
    assert not starts_with_preface(b"PRI * HTTP/1.1\r\n")
