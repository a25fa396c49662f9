"""Groundhog's guarantees at the network boundary, end to end through real processes."""

from __future__ import annotations

import asyncio
import json
import ssl
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import aiohttp
import pytest
import requests

from tests.proxy.clients import Reply, proxy_url, with_requests
from tests.proxy.stack import Stack, running_stack
from tests.proxy.upstream_server import AcceptCounter, Upstream
from tests.proxy.websocket_server import EchoWebSocketServer
from tests.support.servers import free_port, wait_until


def ask(
    stack: Stack,
    tape: str,
    branch: str,
    url: str,
    method: str = "GET",
    body: bytes = b"",
    headers: dict[str, str] | None = None,
):
    with requests.Session() as session:
        session.trust_env = False
        answer = session.request(
            method,
            url,
            data=body or None,
            headers=headers,
            proxies={
                scheme: proxy_url(stack.proxy.port, tape, branch) for scheme in ("http", "https")
            },
            verify=str(stack.ca),
            timeout=60,
        )
    return Reply(
        answer.status_code, {k.lower(): v for k, v in answer.headers.items()}, answer.content
    )


def test_four_siblings_asking_one_read_at_once_reach_the_world_once(
    stack: Stack, upstream: Upstream
) -> None:
    tape = stack.open_tape()
    branches = stack.fork(tape, 4)
    url = f"{upstream.url}/search?q=solar"

    with ThreadPoolExecutor(max_workers=4) as pool:
        replies = list(pool.map(lambda branch: ask(stack, tape, branch, url), branches))

    assert upstream.state.count("/search") == 1
    assert sorted(reply.decision for reply in replies) == ["recorded", "shared", "shared", "shared"]
    assert len({reply.body for reply in replies}) == 1


@pytest.mark.parametrize(
    "other_host",
    # 127.0.0.1 again: two tool servers on one machine are one host but two origins, and
    # `closure` is per origin, so a write to one leaves the other's reads shared.
    ["127.0.0.2", "127.0.0.1"],
    ids=["other-host", "same-host-other-port"],
)
def test_a_write_refetches_the_dependent_read_and_shares_the_independent_one(
    stack: Stack, upstream: Upstream, other_host: str
) -> None:
    with Upstream(other_host, name="other-origin") as other:
        tape = stack.open_tape(dependency_model="closure")
        writer, reader = stack.fork(tape, 2)
        doc, info = f"{upstream.url}/doc/1", f"{other.url}/info"

        assert ask(stack, tape, reader, doc).decision == "recorded"
        assert ask(stack, tape, reader, info).decision == "recorded"
        write = ask(stack, tape, writer, doc, method="PUT", body=b'{"text": "mine"}')
        dependent = ask(stack, tape, writer, doc)
        independent = ask(stack, tape, writer, info)

    assert write.decision == "write"
    assert dependent.decision == "refetched"
    assert dependent.headers["x-groundhog-fingerprint"] != ""
    assert upstream.state.count("/doc/1", method="GET") == 2
    assert independent.decision == "shared"
    assert independent.headers["x-groundhog-fingerprint"] == ""
    assert other.state.count("/info") == 1


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_sealed_tape_serves_hits_and_refuses_misses_without_any_connection(
    stack: Stack, upstream: Upstream, tls_upstream: Upstream, scheme: str
) -> None:
    world_server = tls_upstream if scheme == "https" else upstream
    tape = stack.open_tape()
    first, second = stack.fork(tape, 2)
    base = f"{scheme}://localhost:{world_server.port}"
    recorded = ask(stack, tape, first, f"{base}/known")
    world_server.stop()
    stack.seal(tape)
    # The same port now only counts connection attempts: a hit and a refused miss make none
    # (no CONNECT-time connection, no upstream certificate lookup, no live fetch).
    world = AcceptCounter(port=world_server.port)
    try:
        hit = ask(stack, tape, second, f"{base}/known")
        miss = ask(stack, tape, second, f"{base}/unknown?x=1")
    finally:
        world.stop()

    assert recorded.decision == "recorded"
    assert hit.decision == "shared" and hit.body == recorded.body
    assert miss.status == 502 and miss.decision == "refused"
    problem = json.loads(miss.body)
    assert miss.headers["content-type"].startswith("application/problem+json")
    assert "/unknown" in json.dumps(problem)
    assert problem.get("tape") == tape
    assert world.accepts == 0


def test_a_transport_failure_is_upstream_failed_and_never_recorded(stack: Stack) -> None:
    tape = stack.open_tape()
    first, second = stack.fork(tape, 2)
    dead = f"http://127.0.0.1:{free_port()}/gone"

    replies = [ask(stack, tape, branch, dead) for branch in (first, second)]

    assert [reply.status for reply in replies] == [502, 502]
    assert [reply.decision for reply in replies] == ["upstream-failed", "upstream-failed"]
    assert all(r.headers["content-type"].startswith("application/problem+json") for r in replies)
    assert stack.admin("GET", f"/v1/tapes/{tape}").json()["exchanges"] == 0


def test_a_tape_that_opts_in_records_a_transport_failure_for_siblings(stack: Stack) -> None:
    tape = stack.open_tape(record_transport_failures=True)
    first, second = stack.fork(tape, 2)
    dead = f"http://127.0.0.1:{free_port()}/gone"

    failed = ask(stack, tape, first, dead)
    world = AcceptCounter(port=int(dead.split(":")[2].split("/")[0]))
    try:
        shared = ask(stack, tape, second, dead)
    finally:
        world.stop()

    assert failed.status == 502
    assert failed.headers["content-type"].startswith("application/problem+json")
    assert shared.status == 502 and shared.decision == "shared"
    assert shared.body == failed.body
    assert world.accepts == 0


def test_large_responses_pass_through_unrecorded_and_counted(
    stack: Stack, upstream: Upstream
) -> None:
    tape = stack.open_tape()
    first, second = stack.fork(tape, 2)
    url = f"{upstream.url}/big?size=200000"  # the stack's limit is 100000 bytes

    replies = [ask(stack, tape, branch, url) for branch in (first, second)]

    assert [reply.decision for reply in replies] == ["passthrough", "passthrough"]
    assert all(len(reply.body) == 200000 for reply in replies)
    assert upstream.state.count("/big") == 2
    report = stack.admin("GET", f"/v1/tapes/{tape}/report").json()
    assert report["totals"]["passthrough"] == 2


def test_missing_identity_is_a_400_and_nothing_goes_live(stack: Stack) -> None:
    world = AcceptCounter()
    try:
        answer = with_requests(
            proxy_url(stack.proxy.port), f"http://127.0.0.1:{world.port}/x", stack.ca, {}
        )
    finally:
        world.stop()
    assert answer.status == 400
    assert answer.decision == "refused"
    assert "X-Groundhog-Tape" in json.loads(answer.body)["detail"]
    assert world.accepts == 0


def test_resolver_down_is_a_503_and_nothing_forwarded(tmp_path: Path) -> None:
    with running_stack(tmp_path) as stack:
        tape = stack.open_tape()
        stack.resolver.kill_hard()
        world = AcceptCounter()
        try:
            answer = ask(stack, tape, "root", f"http://127.0.0.1:{world.port}/x")
        finally:
            world.stop()
    assert answer.status == 503
    assert answer.decision == "refused"
    assert json.loads(answer.body)["type"].endswith("resolver-unavailable")
    assert world.accepts == 0


def test_proxy_defaults_name_the_tape(tmp_path: Path, upstream: Upstream) -> None:
    with running_stack(tmp_path, "--tape", "defaulted") as stack:
        stack.open_tape(name="defaulted")
        answer = with_requests(proxy_url(stack.proxy.port), f"{upstream.url}/d", stack.ca, {})
    assert answer.status == 200 and answer.decision == "recorded"


def test_unknown_tape_is_the_resolvers_problem_relayed(stack: Stack) -> None:
    world = AcceptCounter()
    try:
        answer = ask(stack, "no-such-tape", "root", f"http://127.0.0.1:{world.port}/x")
    finally:
        world.stop()
    assert 400 <= answer.status < 500
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert "no-such-tape" in answer.body.decode()
    assert world.accepts == 0


def test_resolver_serves_the_proxys_ca(stack: Stack) -> None:
    served = stack.admin("GET", "/v1/ca.pem").content
    assert served == stack.ca.read_bytes()
    assert b"BEGIN CERTIFICATE" in served


def test_large_request_body_streams_through_unrecorded(stack: Stack, upstream: Upstream) -> None:
    tape = stack.open_tape()
    body = b"z" * 150_000  # over the stack's 100000-byte limit
    answer = ask(stack, tape, "root", f"{upstream.url}/upload", method="PUT", body=body)
    (seen,) = upstream.state.requests
    assert answer.status == 200 and answer.decision == "passthrough"
    assert seen.body == body
    report = stack.admin("GET", f"/v1/tapes/{tape}/report").json()
    assert report["totals"]["passthrough"] == 1


def test_proxy_token_is_required_and_sent(tmp_path: Path, upstream: Upstream) -> None:
    token = {"GROUNDHOG_PROXY_TOKEN": "t0ken"}
    with running_stack(tmp_path / "a", "--proxy-token", "t0ken", resolver_env=token) as stack:
        tape = stack.open_tape()
        good = ask(stack, tape, "root", f"{upstream.url}/ok")
    with running_stack(tmp_path / "b", resolver_env=token) as stack:
        tape = stack.open_tape()
        refused = ask(stack, tape, "root", f"{upstream.url}/ok")
    assert good.decision == "recorded"
    assert refused.status in (401, 403)
    assert upstream.state.count("/ok") == 1


def test_a_websocket_is_recorded_as_a_conversation(stack: Stack, upstream_cert) -> None:
    # wss through a CONNECT tunnel, as real clients do (mitmproxy refuses absolute ws:// URLs);
    # sharing and replay: tests/proxy/test_websocket_tape.py.
    tape = stack.open_tape()
    server = EchoWebSocketServer(upstream_cert)
    trust_proxy = ssl.create_default_context(cafile=str(stack.ca))

    async def talk() -> tuple[str, str | None]:
        async with (
            aiohttp.ClientSession(trust_env=False) as session,
            session.ws_connect(
                f"wss://localhost:{server.port}/ws",
                proxy=proxy_url(stack.proxy.port, tape, "root"),
                ssl=trust_proxy,
            ) as socket,
        ):
            await socket.send_str("hi")
            message = await socket.receive(timeout=10)
            return message.data, socket._response.headers.get("X-Groundhog-Decision")

    try:
        echoed, decision = asyncio.run(talk())
    finally:
        server.stop()
    assert echoed == "echo:hi"
    assert decision == "recorded"
    assert server.upgrades == 1

    def recorded_events() -> list:
        route = f"/v1/tapes/{tape}/events"
        found = stack.admin("GET", route, params={"branch": "root"}).json()["events"]
        return [event for event in found if event["exchange_id"] is not None]

    # The conversation is recorded when it ends, after the client has closed it.
    wait_until(recorded_events, what="the conversation recorded")
    (event,) = recorded_events()
    assert event["status"] == 101
    stored = stack.admin("GET", f"/v1/tapes/{tape}/exchanges/{event['exchange_id']}").json()
    assert stored["response"]["status"] == 101


def test_cooperative_headers_reach_only_cooperative_hosts(stack: Stack, upstream: Upstream) -> None:
    with Upstream("127.0.0.2", name="cooperative") as cooperative:
        tape = stack.open_tape(world_seed=11, cooperative_hosts=["127.0.0.2"])
        branch = stack.fork(tape, ["coop"])[0]
        for url in (f"{cooperative.url}/seeded", f"{upstream.url}/plain"):
            assert ask(stack, tape, branch, url).decision == "recorded"

    (seeded,) = cooperative.state.requests
    (plain,) = upstream.state.requests
    sent = {name.lower(): value for name, value in seeded.headers}
    assert sent["x-groundhog-branch"] == branch
    assert sent["x-groundhog-seed"] == "11"
    assert sent["x-groundhog-occurrence"] == "0"
    assert not [name for name, _ in plain.headers if name.lower().startswith("x-groundhog")]
    assert not [name for name, _ in seeded.headers if name.lower() == "proxy-authorization"]
