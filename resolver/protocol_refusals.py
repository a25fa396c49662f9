"""A sealed miss in the protocol's own words: JSON-RPC/MCP errors, gRPC statuses (DESIGN §4).

A plain HTTP client reads the `502` problem and goes on; an MCP client that gets an HTTP error
for a `tools/call` ends its whole session (the SDK raises and the transport is gone), and a
gRPC client expects a status in trailers, not an HTML-ish body. An RL rollout should see one
failed tool call, be graded for it and go on. So a sealed miss of a JSON-RPC request is answered
`200` with a JSON-RPC error object for each call that has an `id` (code `SEALED_MISS_CODE`, a
message naming the miss, `data` the problem document), a notification-only request `202` with
no body (as a streamable-HTTP server acknowledges one), and a gRPC miss `200` with
`grpc-status` NOT_FOUND and the detail in `grpc-message` trailers. The proxy gives each error the
asker's own `id` as it does any answer (proxy/sandbox_answers.py). The decision stays `refused`.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from engine.content_coding import decode_content
from engine.operations import Profile
from engine.protocol_profiles import detect_operation
from engine.request import RequestParts
from groundhog.protocol.wire import TRAILER_PREFIX, WireResponse, encode_base64, wire_response

# JSON-RPC reserves -32000..-32099 for implementation-defined server errors.
SEALED_MISS_CODE = -32001
GRPC_NOT_FOUND = "5"
_JSON_HEADERS = [["Content-Type", "application/json"]]


def _calls(request: RequestParts) -> tuple[list[Any], bool] | None:
    """The ids of the request's calls that expect an answer, and whether it was a batch."""
    decoded = decode_content(request.body, request.header("content-encoding"))
    try:
        document = json.loads(decoded or b"")
    except (ValueError, RecursionError):
        return None
    items = document if isinstance(document, list) else [document]
    ids = [item["id"] for item in items if isinstance(item, dict) and "id" in item]
    return ids, isinstance(document, list)


def _jsonrpc_refusal(request: RequestParts, problem: dict[str, Any]) -> WireResponse | None:
    found = _calls(request)
    if found is None:
        return None
    ids, batch = found
    if not ids:
        return wire_response(202, [], "")
    message = f"Not on tape: {problem.get('detail', 'sealed miss')}"
    errors = [
        {
            "jsonrpc": "2.0",
            "id": call_id,
            "error": {"code": SEALED_MISS_CODE, "message": message, "data": problem},
        }
        for call_id in ids
    ]
    document: Any = errors if batch else errors[0]
    body = json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()
    return wire_response(200, _JSON_HEADERS, encode_base64(body))


def _grpc_refusal(problem: dict[str, Any]) -> WireResponse:
    message = quote(f"Not on tape: {problem.get('detail', 'sealed miss')}", safe=" ")
    headers = [
        ["Content-Type", "application/grpc"],
        [TRAILER_PREFIX + "grpc-status", GRPC_NOT_FOUND],
        [TRAILER_PREFIX + "grpc-message", message],
    ]
    return wire_response(200, headers, "")


def in_protocol_words(request: RequestParts, problem_body: bytes) -> WireResponse | None:
    """The sealed miss of `request` as its protocol says it, or None for plain HTTP (the 502
    problem stays)."""
    operation = detect_operation(request)
    if operation is None or operation.failed:
        return None
    problem = json.loads(problem_body)
    if operation.profile is Profile.GRPC:
        return _grpc_refusal(problem)
    if operation.profile in (Profile.JSONRPC, Profile.MCP) and request.method == "POST":
        return _jsonrpc_refusal(request, problem)
    return None
