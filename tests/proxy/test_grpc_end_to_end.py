"""gRPC through the proxy over TLS: a shared unary answer ends with the world's trailers.

grpcio reads a call's status from the HTTP/2 trailers (`grpc-status`); an answer served from
the tape without them fails as `Stream removed`. The tape's rule makes the method a read, so
the second branch is served the first one's recording, trailers included.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import pytest

from tests.proxy.stack import Stack
from tests.support.certs import write_self_signed

METHOD = "/pkg.Lookup/Get"


@pytest.fixture
def grpc_world(tmp_path: Path) -> Iterator[tuple[int, Counter[str]]]:
    """A TLS gRPC server on loopback whose unary `Get` answers a fresh random number."""
    calls: Counter[str] = Counter()

    def get(request: bytes, _context: grpc.ServicerContext) -> bytes:
        calls[METHOD] += 1
        return request + f":{random.random()}".encode()

    handler = grpc.method_handlers_generic_handler(
        "pkg.Lookup", {"Get": grpc.unary_unary_rpc_method_handler(get)}
    )
    cert, key = write_self_signed(tmp_path, ["localhost", "127.0.0.1"])
    credentials = grpc.ssl_server_credentials([(key.read_bytes(), cert.read_bytes())])
    server = grpc.server(ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((handler,))
    port = server.add_secure_port("localhost:0", credentials)
    server.start()
    try:
        yield port, calls
    finally:
        server.stop(grace=None)


def call(stack: Stack, port: int, tape: str, branch: str) -> bytes:
    credentials = grpc.ssl_channel_credentials(root_certificates=stack.ca.read_bytes())
    options = [("grpc.http_proxy", f"http://127.0.0.1:{stack.proxy.port}")]
    with grpc.secure_channel(f"localhost:{port}", credentials, options=options) as channel:
        unary = channel.unary_unary(METHOD)
        metadata = [("x-groundhog-tape", tape), ("x-groundhog-branch", branch)]
        return unary(b"q", metadata=metadata, timeout=60)


def test_a_shared_unary_answer_carries_the_worlds_trailers(
    stack: Stack, grpc_world: tuple[int, Counter[str]]
) -> None:
    port, calls = grpc_world
    rules = [{"operation": METHOD, "reads": ["lookup"]}]
    tape = stack.open_tape(dependency_model="rules", rules=rules)
    first, second = stack.fork(tape, 2)

    recorded = call(stack, port, tape, first)
    shared = call(stack, port, tape, second)

    assert shared == recorded and recorded.startswith(b"q:")
    assert calls[METHOD] == 1
    stack.seal(tape)
    (replay,) = stack.fork(tape, ["replay"])
    assert call(stack, port, tape, replay) == recorded
    assert calls[METHOD] == 1
