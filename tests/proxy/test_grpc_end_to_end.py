"""gRPC through the proxy, over TLS and as h2c: a shared unary answer ends with the trailers.

grpcio reads a call's status from the HTTP/2 trailers (`grpc-status`); an answer served from
the tape without them fails as `Stream removed`. The tape's rule makes the method a read, so
the second branch is served the first one's recording, trailers included. An insecure channel
speaks HTTP/2 in the clear with prior knowledge inside its CONNECT tunnel (proxy/h2c.py):
mitmproxy alone would kill it as an HTTP/1 `PRI` request.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import pytest

from tests.proxy.stack import Stack
from tests.support.certs import write_self_signed

METHOD = "/pkg.Lookup/Get"
Call = Callable[[str, str], bytes]


def serving_lookup(calls: Counter[str], add_port: Callable[[grpc.Server], int]) -> tuple:
    """A gRPC server on loopback whose unary `Get` answers a fresh random number."""

    def get(request: bytes, _context: grpc.ServicerContext) -> bytes:
        calls[METHOD] += 1
        return request + f":{random.random()}".encode()

    handler = grpc.method_handlers_generic_handler(
        "pkg.Lookup", {"Get": grpc.unary_unary_rpc_method_handler(get)}
    )
    server = grpc.server(ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((handler,))
    port = add_port(server)
    server.start()
    return server, port


@pytest.fixture(params=["tls", "h2c"])
def grpc_world(
    request: pytest.FixtureRequest, stack: Stack, tmp_path: Path
) -> Iterator[tuple[Call, Counter[str]]]:
    """A TLS or a cleartext (h2c) world, and how a worker calls it through the proxy."""
    calls: Counter[str] = Counter()
    proxy = [("grpc.http_proxy", f"http://127.0.0.1:{stack.proxy.port}")]
    if request.param == "tls":
        cert, key = write_self_signed(tmp_path, ["localhost", "127.0.0.1"])
        credentials = grpc.ssl_server_credentials([(key.read_bytes(), cert.read_bytes())])
        server, port = serving_lookup(
            calls, lambda s: s.add_secure_port("localhost:0", credentials)
        )
        trust = grpc.ssl_channel_credentials(root_certificates=stack.ca.read_bytes())

        def channel() -> grpc.Channel:
            return grpc.secure_channel(f"localhost:{port}", trust, options=proxy)
    else:
        server, port = serving_lookup(calls, lambda s: s.add_insecure_port("127.0.0.1:0"))

        def channel() -> grpc.Channel:
            return grpc.insecure_channel(f"127.0.0.1:{port}", options=proxy)

    def call(tape: str, branch: str) -> bytes:
        with channel() as opened:
            metadata = [("x-groundhog-tape", tape), ("x-groundhog-branch", branch)]
            return opened.unary_unary(METHOD)(b"q", metadata=metadata, timeout=60)

    try:
        yield call, calls
    finally:
        server.stop(grace=None)


def test_a_shared_unary_answer_carries_the_worlds_trailers(
    stack: Stack, grpc_world: tuple[Call, Counter[str]]
) -> None:
    call, calls = grpc_world
    rules = [{"operation": METHOD, "reads": ["lookup"]}]
    tape = stack.open_tape(dependency_model="rules", rules=rules)
    first, second = stack.fork(tape, 2)

    recorded = call(tape, first)
    shared = call(tape, second)

    assert shared == recorded and recorded.startswith(b"q:")
    assert calls[METHOD] == 1
    events = stack.admin("GET", f"/v1/tapes/{tape}/events", params={"branch": second}).json()
    assert [event["decision"] for event in events["events"]] == ["shared"]
    stack.seal(tape)
    (replay,) = stack.fork(tape, ["replay"])
    assert call(tape, replay) == recorded
    assert calls[METHOD] == 1


def test_a_sealed_miss_is_a_grpc_status_in_trailers(
    stack: Stack, grpc_world: tuple[Call, Counter[str]]
) -> None:
    """A sealed tape with nothing for the call answers NOT_FOUND as a gRPC status naming the
    miss (before: a 502 problem, which grpcio reads as a broken stream)."""
    call, calls = grpc_world
    tape = stack.open_tape()
    stack.seal(tape)
    with pytest.raises(grpc.RpcError) as raised:
        call(tape, "root")
    error = raised.value
    assert error.code() == grpc.StatusCode.NOT_FOUND, error
    assert "Not on tape" in error.details() and tape in error.details()
    assert calls[METHOD] == 0
    events = stack.admin("GET", f"/v1/tapes/{tape}/events", params={"branch": "root"}).json()
    assert [event["decision"] for event in events["events"]] == ["refused"]


def test_a_grpc_tape_verifies_with_its_trailers(
    stack: Stack, grpc_world: tuple[Call, Counter[str]]
) -> None:
    """Verify replays the gRPC recording through the proxy's own path and compares its
    trailers with what the branch was served."""
    call, _calls = grpc_world
    tape = stack.open_tape()
    (branch,) = stack.fork(tape, ["caller"])
    call(tape, branch)
    result = stack.admin("POST", f"/v1/tapes/{tape}/verify", timeout=300).json()
    assert result["ok"] is True and result["first_mismatch"] is None, result
    assert {b["branch"]: b["matched"] for b in result["branches"]}[branch] == 1
