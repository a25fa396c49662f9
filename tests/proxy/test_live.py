"""The live path (proxy/live.py) in mitmproxy's addon harness, against a scripted resolver.

mitmproxy itself forwards a recorded ask; here the test plays mitmproxy's part — it sets the
world's response head, feeds a streamed body through the addon's tee, or sets the flow's
error — and checks what the addon recorded and what it gives the worker. The same paths run
through real processes in test_streams.py.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable

import pytest
from mitmproxy import flow as mitm_flow
from mitmproxy import http
from mitmproxy.test import taddons, tflow

from proxy.addon import GroundhogAddon
from proxy.live import META, FlowState, failure_kind
from proxy.native import FAILURE_PHASE, FAILURE_RESPONSE
from tests.proxy.live_script import Script, b64, recording_script
from tests.proxy.stub_resolver import StubResolver

IDENTITY = {"X-Groundhog-Tape": "t", "X-Groundhog-Branch": "root"}


def make_flow(method: str = "GET", body: bytes = b"", **headers: str) -> http.HTTPFlow:
    request = http.Request.make(method, "http://world.test/doc", body, {**IDENTITY, **headers})
    return tflow.tflow(req=request)


def world(status: int = 200, body: bytes = b"hello", *, length: bool = True, **headers: str):
    fields = [(b"Set-Cookie", b"sid=secret"), (b"X-Dup", b"a"), (b"X-Dup", b"b")]
    fields += [(name.replace("_", "-").encode(), value.encode()) for name, value in headers.items()]
    if length:
        fields.append((b"Content-Length", str(len(body)).encode()))
    else:
        fields.append((b"Transfer-Encoding", b"chunked"))
    response = http.Response.make(status, b"", fields)
    response.headers.fields = tuple(fields)  # Response.make adds a length of its own
    return response


def live(
    script: Script,
    flow: http.HTTPFlow,
    answer: http.Response | None,
    *,
    chunks: list[bytes] = (),
    error: str | None = None,
    **options,
) -> list[dict]:
    """Play mitmproxy's part for one forwarded flow; return the record payloads posted."""
    addon = GroundhogAddon()
    with StubResolver(script) as resolver:

        async def go() -> None:
            with taddons.context(addon) as context:
                context.configure(addon, groundhog_resolver_url=resolver.url, **options)
                await addon.requestheaders(flow)
                await addon.request(flow)
                assert flow.response is None, "a forwarded ask is sent by mitmproxy itself"
                if error is not None:
                    flow.error = mitm_flow.Error(error)
                    await addon.error(flow)
                else:
                    flow.response = answer
                    await addon.responseheaders(flow)
                    if callable(flow.response.stream):
                        sent = b"".join(flow.response.stream(chunk) for chunk in chunks)
                        assert sent == b"".join(chunks), "the tee passes every byte on"
                        flow.response.stream(b"")
                    elif answer is not None and not flow.response.stream:
                        flow.response.raw_content = b"".join(chunks)
                    await addon.response(flow)
                state = flow.metadata[META]
                await asyncio.gather(*state.tasks)
                state.finish()
                await addon.done()

        asyncio.run(go())
        return [payload for route, payload, _ in resolver.received if route == "/v1/record"]


def test_a_buffered_answer_is_recorded_and_the_recorder_gets_the_stored_form() -> None:
    flow = make_flow()
    records = live(recording_script(), flow, world(), chunks=[b"hello"])
    (record,) = records
    assert record["ticket"] == "t-1"
    assert base64.b64decode(record["response"]["body"]) == b"hello"
    assert ["Set-Cookie", "sid=secret"] in record["response"]["headers"]
    assert flow.response.raw_content == b"hello"  # "body": null means the bytes sent
    assert "Set-Cookie" not in flow.response.headers
    assert flow.response.headers.get_all("X-Dup") == ["a", "b"]
    assert flow.response.headers["X-Groundhog-Decision"] == "recorded"


@pytest.mark.parametrize("accept", [None, "text/event-stream"])
def test_an_event_stream_is_teed_and_recorded_at_its_end(accept: str | None) -> None:
    flow = make_flow(**({"Accept": accept} if accept else {}))
    answer = world(body=b"", length=False, Content_Type="text/event-stream")
    records = live(recording_script(), flow, answer, chunks=[b"data: 1\n\n", b"data: 2\n\n"])
    head, final = records
    assert head["head"]["status"] == 200 and ["Set-Cookie", "sid=secret"] in head["head"]["headers"]
    assert "Set-Cookie" not in flow.response.headers  # the stored head went to the worker
    assert flow.response.headers["X-Groundhog-Decision"] == "recorded"
    assert final["streamed"] is True
    assert base64.b64decode(final["response"]["body"]) == b"data: 1\n\ndata: 2\n\n"
    assert ["Set-Cookie", "sid=secret"] in final["response"]["headers"]  # redacted by the resolver
    assert not flow.error


def test_a_known_size_over_the_limit_passes_through_at_once() -> None:
    flow = make_flow()
    records = live(recording_script(), flow, world(body=b"x" * 50), groundhog_max_body_bytes=10)
    assert records == [{"ticket": "t-1", "passthrough": "too-large"}]
    assert flow.response.stream is True
    assert flow.response.headers["X-Groundhog-Decision"] == "passthrough"


def test_a_stream_outgrowing_the_limit_drops_its_copy_and_passes_through() -> None:
    flow = make_flow()
    answer = world(body=b"", length=False)
    records = live(
        recording_script(), flow, answer, chunks=[b"a" * 8, b"b" * 8], groundhog_max_body_bytes=10
    )
    assert [sorted(record) for record in records] == [["head", "ticket"], ["passthrough", "ticket"]]
    assert records[1]["passthrough"] == "too-large"
    assert flow.metadata[META].tee.buffer is None


def test_a_failure_before_any_answer_is_posted_and_the_resolvers_problem_prepared() -> None:
    flow = make_flow()
    flow.metadata[FAILURE_PHASE] = "connect"
    records = live(recording_script(), flow, None, error="Connection refused")
    assert records == [
        {"ticket": "t-1", "error": {"kind": "connect", "message": "Connection refused"}}
    ]
    served = flow.metadata[FAILURE_RESPONSE]
    assert served.status_code == 502
    assert served.headers["X-Groundhog-Decision"] == "upstream-failed"
    assert json.loads(served.content)["detail"] == "connect"


def test_a_failure_with_the_resolver_down_is_still_an_upstream_failed_problem() -> None:
    flow = make_flow()
    live(recording_script(fail={"error"}), flow, None, error="server closed connection")
    served = flow.metadata[FAILURE_RESPONSE]
    assert served.status_code == 502
    assert served.headers["Content-Type"] == "application/problem+json"
    assert served.headers["X-Groundhog-Decision"] == "upstream-failed"


def test_a_read_whose_record_fails_gets_a_503_not_the_live_bytes() -> None:
    flow = make_flow()
    live(recording_script(fail={"response"}), flow, world(), chunks=[b"hello"])
    assert flow.response.status_code == 503
    assert flow.response.headers["X-Groundhog-Decision"] == "refused"
    detail = json.loads(flow.response.content)["detail"]
    assert "happened" in detail and "retry is safe" in detail


def test_a_write_whose_record_fails_gets_its_live_answer_and_the_error_header() -> None:
    flow = make_flow("POST", b"w")
    records = live(
        recording_script(fail={"response"}, decision="write"), flow, world(), chunks=[b"done"]
    )
    assert flow.response.raw_content == b"done"
    assert "store full" in flow.response.headers["X-Groundhog-Record-Error"]
    assert records[-1]["unrecorded"]


def test_a_streamed_read_whose_record_fails_is_cut_off() -> None:
    flow = make_flow()
    live(recording_script(fail={"response"}), flow, world(body=b"", length=False), chunks=[b"z"])
    assert flow.error is not None and flow.error.msg == mitm_flow.Error.KILLED_MESSAGE


def test_a_streamed_read_without_a_stored_head_gets_a_503_problem() -> None:
    flow = make_flow()
    live(recording_script(fail={"head"}), flow, world(body=b"", length=False), chunks=[])
    assert flow.metadata[FAILURE_RESPONSE].status_code == 503
    assert flow.error is not None and flow.error.msg == mitm_flow.Error.KILLED_MESSAGE


def test_a_superseded_stream_is_cut_off_rather_than_served() -> None:
    def script(route: str, payload: dict):
        if "response" in payload and route == "/v1/record":
            stored = {"status": 200, "headers": [], "body": b64(b"the winner's bytes")}
            return 200, {"decision": "shared", "exchange_id": 1, "response": stored}
        return recording_script()(route, payload)

    flow = make_flow()
    live(script, flow, world(body=b"", length=False), chunks=[b"my own bytes"])
    assert flow.error is not None and flow.error.msg == mitm_flow.Error.KILLED_MESSAGE


ISSUED = b'{"access_token":"ghu_' + b"R" * 36 + b'"}'
STORED_ISSUED = b'{"access_token":"[redacted:issued.40.alnum.ghu_:0123456789abcdef]"}'


def issued_script(*, as_received: bool) -> Callable[[str, dict], tuple[int, object]]:
    """Records answered as the resolver answers a read whose answer held an issued token: the
    stored form with the placeholder, and (`as_received`) the answer as received, body null."""

    def script(route: str, payload: dict) -> tuple[int, object]:
        if "response" in payload and route == "/v1/record":
            head = {"status": 200, "headers": [["Content-Type", "application/json"]]}
            answer: dict = {"decision": "recorded", "exchange_id": 1, "recorded": True}
            answer["response"] = {**head, "body": b64(STORED_ISSUED)}
            if as_received:
                answer["as_received"] = {**head, "body": None}
            return 200, answer
        return recording_script()(route, payload)

    return script


@pytest.mark.parametrize("as_received", [True, False])
def test_a_read_that_received_an_issued_token_gets_it_as_received_when_the_resolver_says_so(
    as_received: bool,
) -> None:
    flow = make_flow()
    live(issued_script(as_received=as_received), flow, world(body=ISSUED), chunks=[ISSUED])
    token = json.loads(flow.response.raw_content)["access_token"]
    if as_received:
        assert flow.response.raw_content == ISSUED
    else:  # a fetcher that lost the race to another's recording: a surrogate, as its siblings
        assert token.startswith("ghu_0123456789abcdef") and len(token) == 40
    assert flow.response.headers["X-Groundhog-Decision"] == "recorded"


def test_a_streamed_read_whose_issued_token_the_tape_keeps_as_a_placeholder_is_not_cut_off() -> (
    None
):
    flow = make_flow()
    answer = world(body=b"", length=False, Content_Type="application/json")
    live(issued_script(as_received=True), flow, answer, chunks=[ISSUED])
    assert not flow.error


@pytest.mark.parametrize(
    ("phase", "message", "kind"),
    [
        ("connect", "Connection refused", "connect"),
        ("connect", "connection cancelled", "timeout"),
        ("connect", "Certificate verify failed: unable to get local issuer", "tls"),
        ("exchange", "server closed connection", "reset"),
        ("exchange", "something odd", "other"),
    ],
)
def test_failures_are_named_with_the_protocols_kinds(phase: str, message: str, kind: str) -> None:
    flow = make_flow()
    flow.error = mitm_flow.Error(message)
    flow.metadata[FAILURE_PHASE] = phase
    named, detail = failure_kind(flow, FlowState())
    assert named == kind
    assert ("--upstream-ca FILE" in detail) == ("Certificate" in message), detail
