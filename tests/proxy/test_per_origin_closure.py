"""`closure` per origin through the real proxy: two local tool servers are not one resource.

On one machine every tool server is `127.0.0.1`. Were closure per host, a write to one server
would make every other server's reads `refetched` — live calls, and noise no longer shared.
"""

from __future__ import annotations

from tests.proxy.stack import Stack
from tests.proxy.test_end_to_end import ask
from tests.proxy.upstream_server import Upstream


def test_a_write_to_one_local_tool_server_leaves_the_others_reads_shared(
    stack: Stack, upstream: Upstream
) -> None:
    with Upstream("127.0.0.1", name="second-tool") as second:
        assert second.port != upstream.port
        tape = stack.open_tape(dependency_model="closure")
        writer, reader = stack.fork(tape, 2)
        written, untouched = f"{upstream.url}/doc/1", f"{second.url}/info"

        assert ask(stack, tape, reader, written).decision == "recorded"
        assert ask(stack, tape, reader, untouched).decision == "recorded"
        write = ask(stack, tape, writer, written, method="PUT", body=b'{"text": "mine"}')
        same_origin = ask(stack, tape, writer, written)
        other_origin = ask(stack, tape, writer, untouched)

    assert write.decision == "write"
    assert same_origin.decision == "refetched", "the written origin's reads are fetched fresh"
    assert other_origin.decision == "shared", "another port on 127.0.0.1 is another origin"
    assert other_origin.headers["x-groundhog-fingerprint"] == ""
    assert second.state.count("/info") == 1
    assert upstream.state.count("/doc/1", method="GET") == 2
