"""Unit tests of proxy/resolver_client.py against a scripted resolver on loopback."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from proxy.resolver_client import (
    ResolverClient,
    ResolverGone,
    ResolverProtocolError,
    ResolverRejected,
    ResolverUnavailable,
)
from tests.proxy.stub_resolver import StubResolver


def _run[T](client: ResolverClient, call: Callable[[], Awaitable[T]]) -> T:
    async def go() -> T:
        try:
            return await call()
        finally:
            await client.close()

    return asyncio.run(go())


def _echo(route: str, payload: dict) -> tuple[int, Any]:
    return 200, {"route": route, "seen": payload}


def test_resolve_and_record_post_json_to_their_routes() -> None:
    with StubResolver(_echo) as stub:
        client = ResolverClient(stub.url + "/", token="proxy-secret")

        async def both() -> tuple[dict, dict]:
            return await client.resolve({"tape": "t"}), await client.record({"ticket": "x"})

        resolved, recorded = _run(client, both)
    assert resolved == {"route": "/v1/resolve", "seen": {"tape": "t"}}
    assert recorded == {"route": "/v1/record", "seen": {"ticket": "x"}}
    assert stub.routes() == ["/v1/resolve", "/v1/record"]
    _, _, headers = stub.received[0]
    assert headers["Authorization"] == "Bearer proxy-secret"
    assert headers["Content-Type"] == "application/json"
    assert "User-Agent" not in headers


def test_without_a_token_no_authorization_is_sent() -> None:
    with StubResolver(_echo) as stub:
        client = ResolverClient(stub.url)
        _run(client, lambda: client.resolve({}))
    assert "Authorization" not in stub.received[0][2]


def test_a_4xx_is_relayed_unchanged() -> None:
    problem = {"type": "https://groundhog.dev/problems/not-found", "status": 404, "detail": "d"}
    with StubResolver(lambda route, payload: (404, problem)) as stub:
        client = ResolverClient(stub.url)
        with pytest.raises(ResolverRejected) as rejected:
            _run(client, lambda: client.resolve({"tape": "none"}))
    assert rejected.value.status == 404
    assert json.loads(rejected.value.body) == problem
    headers = {name.lower(): value for name, value in rejected.value.headers}
    assert headers["content-type"] == "application/problem+json"
    assert str(rejected.value).startswith("resolver answered 404: b'")


def test_a_5xx_means_the_resolver_is_unavailable() -> None:
    with StubResolver(lambda route, payload: (503, {"detail": "disk full"})) as stub:
        client = ResolverClient(stub.url)
        with pytest.raises(ResolverUnavailable, match=r"/v1/record answered 503.*disk full"):
            _run(client, lambda: client.record({}))


@pytest.mark.parametrize(
    ("answer", "message"),
    [(b"<html>", "non-JSON"), ([1, 2], "answered list, not an object")],
)
def test_a_2xx_that_breaks_the_protocol_is_a_protocol_error(answer: Any, message: str) -> None:
    with StubResolver(lambda route, payload: (200, answer)) as stub:
        client = ResolverClient(stub.url)
        with pytest.raises(ResolverProtocolError, match=message):
            _run(client, lambda: client.resolve({}))


def test_nothing_listening_means_unavailable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = ResolverClient(f"http://127.0.0.1:{port}", resolve_retry=0.3)
    with pytest.raises(ResolverGone, match="/v1/resolve"):
        _run(client, lambda: client.resolve({}))


def test_a_resolver_that_dies_under_the_ask_is_asked_again_with_the_same_body() -> None:
    calls = []

    def dies_twice(route: str, payload: dict) -> tuple[int, Any]:
        calls.append(payload)
        if len(calls) <= 2:
            raise ConnectionAbortedError("the resolver died before answering")  # no answer
        return 200, {"action": "serve", "n": len(calls)}

    with StubResolver(dies_twice) as stub:
        client = ResolverClient(stub.url, resolve_retry=30)
        answer = _run(client, lambda: client.resolve({"attempt": "a1", "path": "/x"}))
    assert answer == {"action": "serve", "n": 3}
    assert calls == [{"attempt": "a1", "path": "/x"}] * 3


def test_a_gone_resolver_is_not_asked_again_past_the_retry_window() -> None:
    calls = []

    def always_dies(route: str, payload: dict) -> tuple[int, Any]:
        calls.append(route)
        raise ConnectionAbortedError("dead")

    with StubResolver(always_dies) as stub:
        client = ResolverClient(stub.url, resolve_retry=0.01)
        with pytest.raises(ResolverGone):
            _run(client, lambda: client.resolve({}))
    assert calls == ["/v1/resolve"]  # the first pause (0.1 s) is already past the window


@pytest.mark.parametrize("status", [500, 503])
def test_a_resolver_that_answers_5xx_is_not_asked_again(status: int) -> None:
    with StubResolver(lambda route, payload: (status, {"detail": "no"})) as stub:
        client = ResolverClient(stub.url, resolve_retry=30)
        with pytest.raises(ResolverUnavailable) as raised:
            _run(client, lambda: client.resolve({}))
        assert stub.routes() == ["/v1/resolve"]
    assert not isinstance(raised.value, ResolverGone)


def test_a_slow_resolver_times_out_as_unavailable() -> None:
    release = threading.Event()

    def stall(route: str, payload: dict) -> tuple[int, Any]:
        release.wait(5)
        return 200, {}

    with StubResolver(stall) as stub:
        client = ResolverClient(stub.url, resolve_timeout=0.2, resolve_retry=30)
        try:
            with pytest.raises(ResolverUnavailable, match="TimeoutError") as raised:
                _run(client, lambda: client.resolve({}))
        finally:
            release.set()
        assert stub.routes() == ["/v1/resolve"]  # slow is not gone: not asked again
    assert not isinstance(raised.value, ResolverGone)


def test_the_client_survives_close_and_a_new_event_loop() -> None:
    with StubResolver(_echo) as stub:
        client = ResolverClient(stub.url)
        first = asyncio.run(client.resolve({"n": 1}))
        # A second asyncio.run is a new loop: the client must not reuse the dead loop's session.
        second = _run(client, lambda: client.resolve({"n": 2}))
        third = _run(client, lambda: client.resolve({"n": 3}))
    assert [answer["seen"]["n"] for answer in (first, second, third)] == [1, 2, 3]


def test_resolve_follows_wait_answers_through_v1_wait_to_the_final_answer() -> None:
    waits = iter([(200, {"action": "wait", "wait": "tok"}), (200, {"action": "serve", "n": 2})])

    def script(route: str, payload: dict) -> tuple[int, Any]:
        if route == "/v1/resolve":
            return 200, {"action": "wait", "wait": "tok"}
        return next(waits)

    with StubResolver(script) as stub:
        client = ResolverClient(stub.url)
        answer = _run(client, lambda: client.resolve({"tape": "t"}))
    assert answer == {"action": "serve", "n": 2}
    assert stub.routes() == ["/v1/resolve", "/v1/wait", "/v1/wait"]
    assert [payload for _route, payload, _h in stub.received[1:]] == [{"wait": "tok"}] * 2


def test_a_wait_without_a_token_is_a_protocol_error_and_an_endless_wait_is_unavailable() -> None:
    with StubResolver(lambda route, payload: (200, {"action": "wait"})) as stub:
        client = ResolverClient(stub.url)
        with pytest.raises(ResolverProtocolError, match="without a wait token"):
            _run(client, lambda: client.resolve({}))
    with StubResolver(lambda route, payload: (200, {"action": "wait", "wait": "t"})) as stub:
        client = ResolverClient(stub.url, wait_limit=0.0)
        with pytest.raises(ResolverUnavailable, match="nothing was sent upstream"):
            _run(client, lambda: client.resolve({}))


@pytest.mark.parametrize(
    ("answer", "expected"),
    [((200, {"claim_seconds": 30}), 30.0), ((409, {"detail": "taken over"}), None)],
)
def test_renew_answers_the_lease_or_none_when_superseded(
    answer: tuple[int, Any], expected: float | None
) -> None:
    with StubResolver(lambda route, payload: answer) as stub:
        client = ResolverClient(stub.url)
        assert _run(client, lambda: client.renew("tk")) == expected
    assert stub.received[0][:2] == ("/v1/renew", {"ticket": "tk"})


@pytest.mark.parametrize("answer", [(200, {}), (200, {"claim_seconds": True}), (404, {})])
def test_renew_refuses_a_broken_answer(answer: tuple[int, Any]) -> None:
    with StubResolver(lambda route, payload: answer) as stub:
        client = ResolverClient(stub.url)
        with pytest.raises((ResolverProtocolError, ResolverRejected)):
            _run(client, lambda: client.renew("tk"))


def test_the_client_closes_idle_connections_before_the_resolver_does() -> None:
    # If the server closed first, a resolve sent on a socket it is closing would fail with
    # a reset and the worker would get a spurious 503 under load.
    from proxy.resolver_client import CLIENT_KEEP_ALIVE_SECONDS
    from resolver.__main__ import KEEP_ALIVE_SECONDS

    assert CLIENT_KEEP_ALIVE_SECONDS < KEEP_ALIVE_SECONDS

    async def transport_keep_alive() -> float:
        client = ResolverClient("http://127.0.0.1:9")
        try:
            return client._transport().keep_alive_seconds
        finally:
            await client.close()

    assert asyncio.run(transport_keep_alive()) == CLIENT_KEEP_ALIVE_SECONDS
