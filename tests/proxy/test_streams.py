"""Real HTTP at the boundary (issue 13): streams, big bodies, big headers, slow and failing
upstreams — end to end through the real resolver, the real proxy and real clients.

Streaming is shown by order, never by time: `/gated` holds its second event until the test
has read the first one through the proxy, so a proxy that buffered the body would deadlock
(and fail on the client's timeout) rather than pass.
"""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.proxy.stack import Stack, running_stack
from tests.proxy.stream_server import StreamUpstream
from tests.support.servers import wait_until

MIB = 1024 * 1024


@pytest.fixture(scope="module")
def world() -> Iterator[StreamUpstream]:
    with StreamUpstream() as server:
        yield server


def client(
    stack: Stack, tape: str, branch: str, *, verify: ssl.SSLContext | bool = True, **headers: str
) -> httpx.Client:
    return httpx.Client(
        proxy=stack.proxy.url,
        trust_env=False,
        timeout=60,
        verify=verify,
        headers={"X-Groundhog-Tape": tape, "X-Groundhog-Branch": branch, **headers},
    )


def proxy_rss_kib(stack: Stack) -> int:
    status = Path(f"/proc/{stack.proxy.process.pid}/status").read_text()
    return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS"))


def events(stack: Stack, tape: str) -> list[dict]:
    return stack.admin("GET", f"/v1/tapes/{tape}/events").json()["events"]


@pytest.mark.parametrize("accept", [None, "text/event-stream"], ids=["no-accept", "accept-sse"])
def test_an_event_stream_flows_as_it_arrives_and_siblings_share_it(
    stack: Stack, world: StreamUpstream, accept: str | None
) -> None:
    tape = stack.open_tape()
    first, second = stack.fork(tape, 2)
    world.gate.clear()
    url = f"{world.url}/gated?tape={tape}"
    extra = {"Accept": accept} if accept else {}
    seen: list[str] = []
    with client(stack, tape, first, **extra) as http, http.stream("GET", url) as answer:
        lines = answer.iter_lines()
        seen.append(next(line for line in lines if line))
        # Only now may the world finish: the first event reached us before the stream ended.
        world.gate.set()
        seen += [line for line in lines if line]
        decision = answer.headers["x-groundhog-decision"]
    with client(stack, tape, second, **extra) as http:
        sibling = http.get(url)

    assert seen == ["data: first", "data: after-gate"]
    assert decision == "recorded"
    assert sibling.headers["x-groundhog-decision"] == "shared"
    assert sibling.text == "data: first\n\ndata: after-gate\n\n"


def test_the_recorder_and_its_siblings_get_the_stored_head_without_set_cookie(
    stack: Stack, world: StreamUpstream
) -> None:
    tape = stack.open_tape()
    first, second = stack.fork(tape, 2)
    url = f"{world.url}/sse?n=4&tape={tape}"
    before = world.calls["/sse"]
    with client(stack, tape, first) as http:
        recorded = http.get(url)
    with client(stack, tape, second) as http:
        shared = http.get(url)

    assert world.calls["/sse"] - before == 1
    assert [recorded.headers["x-groundhog-decision"], shared.headers["x-groundhog-decision"]] == [
        "recorded",
        "shared",
    ]
    assert "set-cookie" not in recorded.headers and "set-cookie" not in shared.headers
    assert recorded.headers["x-number"] == shared.headers["x-number"]
    assert recorded.content == shared.content and recorded.content.count(b"data: event") == 4


def test_an_llm_style_streamed_post_arrives_whole_and_is_recorded(
    stack: Stack, world: StreamUpstream
) -> None:
    tape = stack.open_tape()
    with (
        client(stack, tape, "root") as http,
        http.stream("POST", f"{world.url}/llm", json={"prompt": "the quick brown fox"}) as answer,
    ):
        lines = [json.loads(line) for line in answer.iter_lines() if line]
        decision = answer.headers["x-groundhog-decision"]
        record_error = answer.headers.get("x-groundhog-record-error")

    assert [line.get("token") for line in lines[:-1]] == ["THE", "QUICK", "BROWN", "FOX"]
    assert lines[-1] == {"done": True}
    assert decision == "write" and record_error is None
    (event,) = events(stack, tape)
    assert event["decision"] == "write" and event["exchange_id"] is not None


def test_an_endless_stream_reaches_the_worker_and_becomes_passthrough(
    stack: Stack, world: StreamUpstream
) -> None:
    tape = stack.open_tape()
    received = 0
    with client(stack, tape, "root") as http, http.stream("GET", f"{world.url}/endless") as answer:
        for line in answer.iter_lines():
            if line.startswith("data: "):
                received += 1
            if received == 300:  # about 300 KB: three times the stack's 100 000-byte limit
                break

    assert received == 300
    wait_until(
        lambda: [event["decision"] for event in events(stack, tape)] == ["passthrough"],
        timeout=30,
        what="the endless stream to be reported as passthrough",
    )


@pytest.mark.slow
@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_300_mib_download_streams_with_bounded_proxy_memory(
    stack: Stack, world: StreamUpstream, chunked: bool
) -> None:
    tape = stack.open_tape()
    size = 300 * MIB
    url = f"{world.url}/download?size={size}&chunked={int(chunked)}"
    baseline = peak = proxy_rss_kib(stack)
    received = 0
    with client(stack, tape, "root") as http, http.stream("GET", url) as answer:
        decision = answer.headers["x-groundhog-decision"]
        for index, piece in enumerate(answer.iter_raw(MIB)):
            received += len(piece)
            if index % 8 == 0:
                peak = max(peak, proxy_rss_kib(stack))

    assert received == size and decision == ("recorded" if chunked else "passthrough")
    # The promise is < 64 MiB (measured in bench.reliability); generous here for loaded CI.
    assert (peak - baseline) / 1024 < 96, f"proxy RSS grew {(peak - baseline) / 1024:.0f} MiB"
    wait_until(
        lambda: [event["decision"] for event in events(stack, tape)] == ["passthrough"],
        timeout=30,
        what="the download to be reported as passthrough",
    )


def test_a_20_kib_response_header_reaches_the_worker_and_is_shared(
    stack: Stack, world: StreamUpstream
) -> None:
    tape = stack.open_tape()
    first, second = stack.fork(tape, 2)
    url = f"{world.url}/big-header?size={20 * 1024}&tape={tape}"
    with client(stack, tape, first) as http:
        recorded = http.get(url)
    with client(stack, tape, second) as http:
        shared = http.get(url)

    assert recorded.status_code == 200 and shared.status_code == 200
    assert len(recorded.headers["x-big"]) == 20 * 1024 == len(shared.headers["x-big"])
    assert [recorded.headers["x-groundhog-decision"], shared.headers["x-groundhog-decision"]] == [
        "recorded",
        "shared",
    ]


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_an_upstream_past_its_deadline_is_an_upstream_failed_timeout(
    tmp_path: Path, upstream_cert: tuple[Path, Path], scheme: str
) -> None:
    # Over HTTPS the flow lives inside a CONNECT tunnel: the deadline must reach it there too.
    with (
        StreamUpstream(cert=upstream_cert if scheme == "https" else None) as slow,
        running_stack(tmp_path, "--set", "groundhog_upstream_deadline=1") as stack,
    ):
        tape = stack.open_tape()
        with client(
            stack, tape, "root", verify=ssl.create_default_context(cafile=str(stack.ca))
        ) as http:
            late = http.get(f"{slow.url}/slow?delay=4")

    assert late.status_code == 502
    assert late.headers["content-type"].startswith("application/problem+json")
    assert late.headers["x-groundhog-decision"] == "upstream-failed"
    assert "timeout" in late.text


def test_a_slow_holder_renews_its_claim_so_its_sibling_waits_and_shares(
    tmp_path: Path, world: StreamUpstream
) -> None:
    claim = {"GROUNDHOG_CLAIM_SECONDS": "1"}
    with running_stack(tmp_path, resolver_env=claim) as stack:
        tape = stack.open_tape()
        first, second = stack.fork(tape, 2)
        url = f"{world.url}/slow?delay=3&tape={tape}"
        before = world.calls["/slow"]
        answers: dict[str, httpx.Response] = {}

        def ask(branch: str) -> None:
            with client(stack, tape, branch) as http:
                answers[branch] = http.get(url)

        holder = threading.Thread(target=ask, args=(first,))
        holder.start()
        wait_until(lambda: world.calls["/slow"] > before, what="the holder's live call")
        ask(second)  # asks while the holder's fetch runs, for longer than one claim
        holder.join(timeout=60)

    assert world.calls["/slow"] - before == 1
    assert answers[first].headers["x-groundhog-decision"] == "recorded"
    assert answers[second].headers["x-groundhog-decision"] == "shared"
    assert answers[first].content == answers[second].content
