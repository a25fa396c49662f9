"""The worker boundary fails closed (issue 53), through a real resolver, proxy and world.

A byte the identity grammar does not allow, or an exception anywhere in the addon's hooks,
used to let mitmproxy forward the request unjudged: on a sealed tape the world answered 200.
Each case here counts what the world saw and requires a decision on every answer.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.proxy.raw_http import exchange
from tests.proxy.stack import Stack, running_stack
from tests.proxy.upstream_server import Upstream


@pytest.fixture(scope="module")
def world() -> Iterator[Upstream]:
    with Upstream(name="boundary") as server:
        yield server


@pytest.fixture(scope="module")
def sealed_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with running_stack(tmp_path_factory.mktemp("boundary")) as stack:
        yield stack


@pytest.fixture(scope="module")
def failing_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """A proxy whose addon raises in `response` on every flow and in `request` from the 2nd."""
    armed = "proxy.hook.GroundhogAddon.request@2,proxy.hook.GroundhogAddon.response"
    with running_stack(
        tmp_path_factory.mktemp("failing"), "--set", f"groundhog_failpoints={armed}"
    ) as stack:
        yield stack


def get(port: int, world_port: int, path: str, *headers: bytes) -> bytes:
    url = f"http://127.0.0.1:{world_port}{path}".encode()
    lines = [b"GET " + url + b" HTTP/1.1", f"Host: 127.0.0.1:{world_port}".encode(), *headers]
    return b"\r\n".join([*lines, b"Connection: close", b"", b""])


def test_a_non_utf8_tape_byte_is_refused_on_a_sealed_tape(
    sealed_stack: Stack, world: Upstream
) -> None:
    """The issue's reproduction: an unknown tape first (an unanswered attempt), then the byte."""
    tape = sealed_stack.open_tape(name="locked", world_seed=1)
    sealed_stack.seal(tape)
    port, before = sealed_stack.proxy.port, world.state.accepts
    unknown = exchange(
        port, get(port, world.port, "/a", b"X-Groundhog-Tape: nope", b"X-Groundhog-Branch: root")
    )
    assert unknown.status == 404 and unknown.decision == b"refused", unknown.raw[:400]

    answer = exchange(
        port,
        get(port, world.port, "/b", b"X-Groundhog-Tape: locked\xff", b"X-Groundhog-Branch: root"),
    )

    assert answer.status == 400, answer.raw[:400]
    assert answer.decision == b"refused"
    assert b"X-Groundhog-Tape" in answer.body and b"not ASCII" in answer.body
    assert world.state.accepts == before and world.state.count("/b") == 0


@pytest.mark.parametrize(
    ("header", "detail"),
    [
        (b"X-Groundhog-Branch: root/\xc3\xa9", b"not ASCII"),
        (b"X-Groundhog-Branch: root//b0", b"not a branch path"),
        (b"X-Groundhog-Branch: root%2F%ff", b"not UTF-8"),
        (b"X-Groundhog-Branch: main", b"not a branch path"),
        (b"Proxy-Authorization: Basic bG9ja2VkOnJvb3T/", b"not valid base64"),
        (b"Proxy-Authorization: Basic bG9ja2Vk/zpyb290", b"not valid base64 of UTF-8"),
    ],
)
def test_identity_outside_the_grammar_is_a_precise_400(
    sealed_stack: Stack, world: Upstream, header: bytes, detail: bytes
) -> None:
    port, before = sealed_stack.proxy.port, world.state.accepts
    answer = exchange(port, get(port, world.port, "/c", b"X-Groundhog-Tape: locked", header))
    assert answer.status == 400, answer.raw[:400]
    assert answer.decision == b"refused"
    assert detail in answer.body, answer.body
    assert world.state.accepts == before


def test_identity_given_twice_is_refused(sealed_stack: Stack, world: Upstream) -> None:
    port, before = sealed_stack.proxy.port, world.state.accepts
    answer = exchange(
        port,
        get(
            port,
            world.port,
            "/d",
            b"X-Groundhog-Tape: locked",
            b"X-Groundhog-Branch: root",
            b"X-Groundhog-Branch: root/b0",
        ),
    )
    assert answer.status == 400 and answer.decision == b"refused", answer.raw[:400]
    assert b"given 2 times" in answer.body
    assert world.state.accepts == before


def test_an_exception_in_a_hook_answers_and_never_forwards(
    failing_stack: Stack, world: Upstream, tmp_path: Path
) -> None:
    tape = failing_stack.open_tape(world_seed=1)
    port = failing_stack.proxy.port
    identity = (f"X-Groundhog-Tape: {tape}".encode(), b"X-Groundhog-Branch: root")

    # 1st flow: `request` passes (the resolver says go live), `response` raises: the world was
    # called because the resolver said so, and its answer is refused, not served unrecorded.
    first = exchange(port, get(port, world.port, "/hooked-1", *identity))
    assert first.status == 502 and first.decision == b"refused", first.raw[:400]
    assert b"proxy-failed" in first.body and b"response hook" in first.body
    assert world.state.count("/hooked-1") == 1

    # 2nd flow on: `request` raises before anything was asked: nothing reaches the world.
    second = exchange(port, get(port, world.port, "/hooked-2", *identity))
    assert second.status == 500 and second.decision == b"refused", second.raw[:400]
    assert b"nothing was forwarded" in second.body
    assert world.state.count("/hooked-2") == 0
