"""Protocol profiles: find the operation inside a request (JSON-RPC/MCP, GraphQL, gRPC).

The operation decides read or write (engine/operations.py) and, for JSON-RPC, what the key
must ignore (the `id`, protocol noise: after one extra call a branch's ids no longer match its
siblings'). A profile is detected from the request — a JSON-RPC 2.0 body (batches too), an
`application/grpc` content type, a GraphQL body — or pinned or switched off per host by the
tape's `protocols` (`{"api.example": "graphql", "plain.example": "off"}`).

This runs on every resolve, so plain HTTP leaves at once: no body is parsed unless its first
byte is `{` or `[` and it names `"jsonrpc"` (or `"query"` for GraphQL). A detected body that
cannot be read is an opaque write, named as failed, never a shared read.
"""

from __future__ import annotations

import json
import re
from typing import Any

from engine.content_coding import decode_content
from engine.operations import TOOLS_CALL, Call, Operation, Profile, is_mcp_method
from engine.protocol_noise import without_noise
from engine.request import RequestParts
from engine.tape_settings import TapeSettings

OFF = "off"
PINNABLE = frozenset({OFF, *(str(profile) for profile in Profile if profile is not Profile.HTTP)})
SESSION_HEADER = "mcp-session-id"
_GRAPHQL_FIELDS = frozenset({"query", "variables", "operationName", "extensions"})
_GRAPHQL_OPERATION = re.compile(
    r"(?<![_0-9A-Za-z])(query|mutation|subscription)(?:\s+([_A-Za-z][_0-9A-Za-z]*))?"
)
_GRAPHQL_COMMENT = re.compile(r"#[^\n]*")
_GRAPHQL_STRING = re.compile(r'"""[\s\S]*?"""|"(?:[^"\\\n]|\\.)*"')


def pinned_profile(settings: TapeSettings, host: str) -> str | None:
    """The tape's `protocols` entry for `host` (or `*`), or None when detection decides."""
    pins = settings.protocols
    if not pins:
        return None
    value = pins.get(host, pins.get("*"))
    return None if value is None else str(value)


def detect_operation(
    request: RequestParts, pin: str | None = None, *, in_session: bool = False
) -> Operation | None:
    """The request's operation, or None for plain HTTP (the method and path decide).

    `in_session`: the request carried an `Mcp-Session-Id` (engine/sandbox_identity.py removed
    it before redaction), so a GET or DELETE is that session's own stream or its end.
    """
    if pin == OFF:
        return None
    content_type = (request.header("content-type") or "").lower()
    if pin == Profile.GRPC or (pin is None and content_type.startswith("application/grpc")):
        return Operation(Profile.GRPC, request.path)
    if request.method != "POST":
        if pin in (None, Profile.MCP) and in_session:
            # The session's own GET stream or its closing DELETE (streamable HTTP transport).
            return Operation(Profile.MCP, f"{request.method} session")
        return None
    first = request.body[:64].lstrip()[:1]  # no copy of a large body
    if pin is None and first not in (b"{", b"["):
        return None
    if pin in (Profile.JSONRPC, Profile.MCP) or (pin is None and b'"jsonrpc"' in request.body):
        return _jsonrpc(request, Profile(pin) if pin else None)
    if pin == Profile.GRAPHQL or (pin is None and b'"query"' in request.body):
        return _graphql(request, pinned=pin is not None)
    return None


def _decoded_json(request: RequestParts) -> tuple[Any, str | None]:
    decoded = decode_content(request.body, request.header("content-encoding"))
    if decoded is None:
        return None, "undecodable content-encoding"
    try:
        return json.loads(decoded), None
    except (ValueError, RecursionError):
        return None, "body is not JSON"


def _jsonrpc(request: RequestParts, pinned: Profile | None) -> Operation:
    profile = pinned or Profile.JSONRPC
    document, error = _decoded_json(request)
    if error is not None:
        return Operation(profile, "", failed=error)
    items = document if isinstance(document, list) else [document]
    if not items:
        return Operation(profile, "", failed="empty batch")
    calls = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("method"), str):
            return Operation(profile, "", failed="a call without a method")
        method = item["method"]
        params = item.get("params")
        tool = None
        if (
            method == TOOLS_CALL
            and isinstance(params, dict)
            and isinstance(params.get("name"), str)
        ):
            tool = params["name"]
        calls.append(Call(method, tool, is_notification="id" not in item))
    if pinned is None and all(is_mcp_method(call.method) for call in calls):
        profile = Profile.MCP
    names = [call.method if call.tool is None else f"{call.method} {call.tool}" for call in calls]
    name = names[0] if not isinstance(document, list) else f"batch[{','.join(names)}]"
    # The profile's declared noise (the ids, MCP's `_meta` and `clientInfo`) leaves the key.
    without_noise_items = [without_noise(item, profile) for item in items]
    keyed = without_noise_items if isinstance(document, list) else without_noise_items[0]
    keyed_body = json.dumps(keyed, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return Operation(profile, name, calls=tuple(calls), keyed_body=keyed_body)


def _graphql(request: RequestParts, *, pinned: bool) -> Operation | None:
    document, error = _decoded_json(request)
    if error is not None:
        return Operation(Profile.GRAPHQL, "", failed=error) if pinned else None
    shaped = (
        isinstance(document, dict)
        and isinstance(document.get("query"), str)
        and document.keys() <= _GRAPHQL_FIELDS
    )
    if not shaped:
        return Operation(Profile.GRAPHQL, "", failed="not a GraphQL request") if pinned else None
    wanted = document.get("operationName")
    kind, name = graphql_operation(document["query"], wanted if isinstance(wanted, str) else None)
    if kind is None:
        # Unpinned, a `query` that names no operation is some other API's search field.
        return (
            Operation(Profile.GRAPHQL, "", failed="no operation in the query") if pinned else None
        )
    return Operation(Profile.GRAPHQL, f"{kind} {name}".strip(), graphql_type=kind)


def graphql_operation(query: str, wanted: str | None) -> tuple[str | None, str]:
    """(`query`|`mutation`|`subscription`, operation name) of a GraphQL document.

    The shorthand `{ … }` is an anonymous query. With several operations, `wanted` (the
    request's `operationName`) picks one; fragments are skipped.
    """
    text = _GRAPHQL_STRING.sub('""', _GRAPHQL_COMMENT.sub("", query)).strip()
    if text.startswith("{"):
        return "query", ""
    found = None
    for match in _GRAPHQL_OPERATION.finditer(text):
        if wanted is None or match.group(2) == wanted:
            found = match
            break
    if found is None:
        return None, ""
    return found.group(1), found.group(2) or ""
