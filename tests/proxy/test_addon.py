"""The addon in mitmproxy's test harness against a scripted resolver: hits, identity, refusals."""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import Awaitable, Callable

import pytest
from mitmproxy import http
from mitmproxy.proxy import server_hooks
from mitmproxy.test import taddons, tflow

from proxy.addon import GroundhogAddon
from proxy.websocket_tape import RECORDING
from tests.proxy.live_script import b64, recording_script
from tests.proxy.stub_resolver import StubResolver
from tests.proxy.upstream_server import AcceptCounter
from tests.support.servers import free_port

RECORDED_BODY = gzip.compress(b'{"recorded": 1}', mtime=0)


def serve_answer(decision: str = "shared", status: int = 200) -> dict:
    return {
        "action": "serve",
        "decision": decision,
        "occurrence": 3,
        "fingerprint": "abc",
        "request_key": "k",
        "ticket": None,
        "upstream_headers": [],
        "response": {
            "status": status,
            "headers": [
                ["Content-Type", "application/json"],
                ["Content-Encoding", "gzip"],
                ["X-Dup", "1"],
                ["X-Dup", "2"],
                ["Content-Length", str(len(RECORDED_BODY))],
            ],
            "body": b64(RECORDED_BODY),
        },
    }


def make_flow(url: str, *, method: str = "GET", headers: dict | None = None, body: bytes = b""):
    request = http.Request.make(method, url, body, headers or {})
    return tflow.tflow(req=request)


def run(
    flow: http.HTTPFlow,
    resolver_url: str,
    *,
    before: Callable[[GroundhogAddon], Awaitable[None] | None] | None = None,
    **options,
) -> GroundhogAddon:
    """Cycle one flow through the addon as mitmproxy would (hooks in order)."""
    addon = GroundhogAddon()

    async def go() -> None:
        with taddons.context(addon) as context:
            context.configure(addon, groundhog_resolver_url=resolver_url, **options)
            if before:
                started = before(addon)
                if started is not None:
                    await started  # an async hook, as mitmproxy awaits it
            await context.cycle(addon, flow)
            await addon.done()

    asyncio.run(go())
    return addon


def test_serve_is_byte_for_byte_and_opens_no_upstream_connection() -> None:
    world = AcceptCounter()
    try:
        flow = make_flow(
            f"http://127.0.0.1:{world.port}/q?b=2&a=1",
            headers={"X-Groundhog-Tape": "demo", "X-Groundhog-Branch": "root/b0", "A": "1"},
        )
        with StubResolver(lambda route, payload: (200, serve_answer())) as resolver:
            run(flow, resolver.url)
            ((route, payload, _),) = resolver.received
    finally:
        world.stop()
    assert route == "/v1/resolve"
    assert payload["tape"] == "demo" and payload["branch"] == "root/b0"
    assert payload["path"] == "/q" and payload["query"] == [["b", "2"], ["a", "1"]]
    assert all(not name.lower().startswith("x-groundhog") for name, _ in payload["headers"])
    assert flow.response.raw_content == RECORDED_BODY
    assert flow.response.headers.get_all("X-Dup") == ["1", "2"]
    assert flow.response.headers["X-Groundhog-Decision"] == "shared"
    assert flow.response.headers["X-Groundhog-Occurrence"] == "3"
    assert flow.response.headers["X-Groundhog-Fingerprint"] == "abc"
    assert world.accepts == 0


@pytest.mark.parametrize(
    ("headers", "connect_headers", "options", "expected"),
    [
        ({"X-Groundhog-Tape": "h", "X-Groundhog-Branch": "root"}, None, {}, ("h", "root")),
        ({"Proxy-Authorization": "Basic " + b64(b"c:root%2Fb1")}, None, {}, ("c", "root/b1")),
        ({}, {"Proxy-Authorization": "Basic " + b64(b"tunnel:root/b2")}, {}, ("tunnel", "root/b2")),
        ({}, {"X-Groundhog-Tape": "ct", "X-Groundhog-Branch": "root/c"}, {}, ("ct", "root/c")),
        ({}, None, {"groundhog_tape": "o", "groundhog_branch": "root"}, ("o", "root")),
        (
            {"X-Groundhog-Tape": "h", "Proxy-Authorization": "Basic " + b64(b"c:root/b1")},
            None,
            {},
            ("h", "root/b1"),
        ),
    ],
    ids=[
        "headers",
        "credentials",
        "connect-credentials",
        "connect-headers",
        "options",
        "headers-win",
    ],
)
def test_identity_sources_in_order(headers, connect_headers, options, expected) -> None:
    flow = make_flow("http://127.0.0.1:1/x", headers=headers)

    def remember_connect(addon: GroundhogAddon) -> Awaitable[None] | None:
        if not connect_headers:
            return None
        connect = tflow.tflow(client_conn=flow.client_conn)
        connect.request = http.Request.make("CONNECT", "http://127.0.0.1:1/")
        connect.request.headers.update(connect_headers)
        return addon.http_connect(connect)

    with StubResolver(lambda route, payload: (200, serve_answer())) as resolver:
        run(flow, resolver.url, before=remember_connect, **options)
        ((_, payload, _),) = resolver.received
    assert (payload["tape"], payload["branch"]) == expected
    assert "Proxy-Authorization" not in flow.request.headers


def test_no_identity_is_a_400_naming_the_three_ways() -> None:
    flow = make_flow("http://127.0.0.1:1/x")
    with StubResolver(lambda route, payload: (200, serve_answer())) as resolver:
        run(flow, resolver.url)
        assert resolver.received == []
    assert flow.response.status_code == 400
    assert flow.response.headers["Content-Type"] == "application/problem+json"
    detail = json.loads(flow.response.content)["detail"]
    for way in ("X-Groundhog-Tape", "TAPE:BRANCH", "groundhog_tape"):
        assert way in detail


def test_malformed_credentials_are_a_400() -> None:
    flow = make_flow("http://127.0.0.1:1/x", headers={"Proxy-Authorization": "Bearer nope"})
    with StubResolver(lambda route, payload: (200, serve_answer())) as resolver:
        run(flow, resolver.url)
    assert flow.response.status_code == 400
    assert "not Basic" in json.loads(flow.response.content)["detail"]


def test_unreachable_resolver_is_a_503_and_nothing_forwarded() -> None:
    world = AcceptCounter()
    try:
        flow = make_flow(f"http://127.0.0.1:{world.port}/x", headers={"X-Groundhog-Tape": "t"})
        run(flow, f"http://127.0.0.1:{free_port()}", groundhog_branch="root")
    finally:
        world.stop()
    assert flow.response.status_code == 503
    assert json.loads(flow.response.content)["type"].endswith("resolver-unavailable")
    assert world.accepts == 0


@pytest.mark.parametrize(
    ("status", "answer", "served"),
    [(500, {"oops": 1}, 503), (404, {"type": "x", "detail": "no tape"}, 404), (200, [1], 502)],
    ids=["resolver-5xx", "resolver-4xx-relayed", "resolver-garbage"],
)
def test_resolver_failures_never_go_live(status, answer, served) -> None:
    world = AcceptCounter()
    try:
        flow = make_flow(f"http://127.0.0.1:{world.port}/x", headers={"X-Groundhog-Tape": "t"})
        with StubResolver(lambda route, payload: (status, answer)) as resolver:
            run(flow, resolver.url, groundhog_branch="root")
    finally:
        world.stop()
    assert flow.response.status_code == served
    if status == 404:
        assert json.loads(flow.response.content) == answer
    assert world.accepts == 0


def test_declared_large_request_body_streams_natively_and_is_reported() -> None:
    flow = make_flow(
        "http://127.0.0.1:1/upload",
        method="PUT",
        headers={"X-Groundhog-Tape": "t", "X-Groundhog-Branch": "root"},
        body=b"y" * 50,
    )
    flow.request.data.content = None  # the body has not arrived when requestheaders runs
    addon = GroundhogAddon()
    with StubResolver(recording_script()) as resolver:

        async def go() -> None:
            with taddons.context(addon) as context:
                context.configure(
                    addon, groundhog_resolver_url=resolver.url, groundhog_max_body_bytes=10
                )
                await addon.requestheaders(flow)
                assert flow.request.stream is True
                flow.response = http.Response.make(201, b"ok")
                await addon.responseheaders(flow)
                await addon.response(flow)
                await addon.done()

        asyncio.run(go())
        resolve, record = resolver.received[0][1], resolver.received[1][1]
    assert resolve["body_too_large"] is True and resolve["body"] == ""
    assert record == {"ticket": "t-1", "passthrough": "too-large"}
    assert flow.response.headers["X-Groundhog-Decision"] == "passthrough"
    assert flow.response.stream is True


@pytest.mark.parametrize("status", [101, 403])
def test_a_websocket_is_recorded_when_it_ends_and_a_refused_upgrade_is_passthrough(
    status: int,
) -> None:
    flow = make_flow(
        "http://127.0.0.1:1/ws",
        headers={"X-Groundhog-Tape": "t", "X-Groundhog-Branch": "root", "Upgrade": "websocket"},
    )
    addon = GroundhogAddon()
    with StubResolver(recording_script()) as resolver:

        async def go() -> None:
            with taddons.context(addon) as context:
                context.configure(addon, groundhog_resolver_url=resolver.url)
                await addon.request(flow)
                assert flow.response is None  # mitmproxy forwards it itself
                flow.response = http.Response.make(status, b"", {"Upgrade": "websocket"})
                await addon.responseheaders(flow)
                await addon.response(flow)
                await addon.error(flow)  # a later close must not report twice
                await addon.done()

        asyncio.run(go())
        records = [payload for route, payload, _ in resolver.received if route == "/v1/record"]
    if status == 101:  # the conversation is recorded by proxy/websocket_tape.py when it ends
        assert records == [] and RECORDING in flow.metadata
        assert flow.response.headers["X-Groundhog-Decision"] == "recorded"
    else:
        assert records == [{"ticket": "t-1", "passthrough": "websocket"}]
        assert flow.response.headers["X-Groundhog-Decision"] == "passthrough"


def test_proxy_token_is_sent_as_bearer() -> None:
    flow = make_flow("http://127.0.0.1:1/x", headers={"X-Groundhog-Tape": "t"})
    with StubResolver(lambda route, payload: (200, serve_answer())) as resolver:
        run(flow, resolver.url, groundhog_branch="root", groundhog_proxy_token="sekret")
        ((_, _, headers),) = resolver.received
    assert headers["Authorization"] == "Bearer sekret"


def test_an_upstream_connect_past_its_timeout_is_cancelled_and_a_made_one_is_not() -> None:
    addon = GroundhogAddon()

    def hook_data() -> server_hooks.ServerConnectionHookData:
        return server_hooks.ServerConnectionHookData(
            server=tflow.tserver_conn(), client=tflow.tclient_conn()
        )

    async def go() -> str:
        with taddons.context(addon) as context:
            context.configure(addon, groundhog_upstream_connect_timeout="0.05")
            stuck = hook_data()

            async def connecting_forever() -> None:
                addon.server_connect(stuck)  # mitmproxy runs the hook in the connecting task
                await asyncio.Event().wait()

            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(asyncio.create_task(connecting_forever()), timeout=30)
            made = hook_data()

            async def connecting_fine() -> str:
                addon.server_connect(made)
                addon.server_connected(made)
                await asyncio.sleep(0.3)  # past the timeout: nothing may cancel us now
                return "connected"

            return await asyncio.create_task(connecting_fine())

    assert asyncio.run(go()) == "connected"
