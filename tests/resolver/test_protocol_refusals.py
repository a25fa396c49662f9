"""A sealed miss spoken in the request's protocol: JSON-RPC errors per call, gRPC trailers."""

from __future__ import annotations

import base64
import json

from engine.request import RequestParts
from resolver.protocol_refusals import SEALED_MISS_CODE, in_protocol_words

PROBLEM = json.dumps({"type": "sealed-miss", "detail": "tape 't' is sealed"}).encode()


def _request(body: object, content_type: str = "application/json") -> RequestParts:
    return RequestParts(
        "POST", "http", "h", 80, "/mcp", headers=(("content-type", content_type),),
        body=json.dumps(body).encode() if not isinstance(body, bytes) else body,
    )  # fmt: skip


def _body(answer) -> object:
    return json.loads(base64.b64decode(answer["body"]))


def test_a_call_gets_an_error_for_its_id_inside_200() -> None:
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "search"}}
    answer = in_protocol_words(_request(call), PROBLEM)
    assert answer is not None and answer["status"] == 200
    error = _body(answer)
    assert error["id"] == 7 and error["error"]["code"] == SEALED_MISS_CODE
    assert "Not on tape" in error["error"]["message"] and error["error"]["data"]["detail"]


def test_a_batch_gets_one_error_per_call_and_notifications_none() -> None:
    batch = [
        {"jsonrpc": "2.0", "id": "a", "method": "tools/list"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": "b", "method": "ping"},
    ]
    answer = in_protocol_words(_request(batch), PROBLEM)
    assert answer is not None
    assert [item["id"] for item in _body(answer)] == ["a", "b"]
    alone = in_protocol_words(_request(batch[1]), PROBLEM)
    assert alone is not None and alone["status"] == 202 and alone["body"] == ""


def test_grpc_gets_a_status_in_trailers_and_plain_http_keeps_the_problem() -> None:
    answer = in_protocol_words(_request(b"\0\0\0\0\0", "application/grpc"), PROBLEM)
    assert answer is not None and answer["status"] == 200
    trailers = dict(answer["headers"])
    assert any(name.endswith("grpc-status") and value == "5" for name, value in trailers.items())
    plain = RequestParts("GET", "http", "h", 80, "/page")
    assert in_protocol_words(plain, PROBLEM) is None
    assert in_protocol_words(_request({"query": "x"}), PROBLEM) is None
