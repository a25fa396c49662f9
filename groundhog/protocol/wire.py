"""The proxy↔resolver wire shapes (`/v1/resolve`, `/v1/wait`, `/v1/renew`, `/v1/record`,
`/v1/tunnel`; docs/internals.md), as TypedDicts.

They type the JSON both sides exchange without costing anything at run time: resolve is the
hot path, where the resolver validates straight from bytes (resolver/schemas.py holds the
pydantic validators of the request bodies) and splices cached JSON into its answer, and the
proxy reads the answer as the dict `json.loads` gives. Bodies travel as base64, headers as
ordered `[name, value]` pairs of latin-1 text. `wire_response` is the one constructor of the
`response` object every answer carries.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict

HeaderPairs = list[list[str]]


# HTTP/2 trailers (gRPC's `grpc-status`) travel and are stored as header pairs named with this
# prefix after the head's, so a shared answer can end with the trailers the world sent.
TRAILER_PREFIX = "groundhog-trailer:"


class WireResponse(TypedDict):
    """Status, ordered header pairs and base64 body; in a `/v1/record` answer a `None` body
    means "the body you sent"."""

    status: int
    headers: HeaderPairs
    body: str | None


class ResolveAsk(TypedDict):
    """The body of `POST /v1/resolve`."""

    tape: str
    branch: str
    method: str
    scheme: str
    host: str
    port: int
    path: str
    query: list[list[str]]
    headers: HeaderPairs
    body: str
    body_too_large: bool
    # The same for every try of one ask the proxy got no answer to (docs/internals.md).
    attempt: NotRequired[str]
    # The asking proxy's lease holder id, when it takes branch leases (proxy/branch_leases.py).
    lease_holder: NotRequired[str]


class ResolveAnswer(TypedDict):
    """The answer of `/v1/resolve` and `/v1/wait`: serve `response`, forward, or wait."""

    action: str
    decision: str
    occurrence: int | None
    fingerprint: str
    request_key: str
    ticket: str | None
    upstream_headers: HeaderPairs
    response: WireResponse | None
    delay_ms: NotRequired[int]
    lease_seconds: NotRequired[float]
    wait: NotRequired[str]
    # With a passthrough: whether a WebSocket that left its recording sends its earlier
    # messages to the world again (the tape's `websocket_replay_client_messages`).
    replay_client_messages: NotRequired[bool]


class RecordAnswer(TypedDict, total=False):
    """The answer of `/v1/record`: what to serve instead of the live answer, if anything;
    a `head` record is answered with the stored header form only."""

    decision: str
    exchange_id: int | None
    recorded: bool
    response: WireResponse | None
    headers: HeaderPairs


class RenewAnswer(TypedDict):
    lease_seconds: float


class TunnelAnswer(TypedDict):
    decision: str
    detail: str


def wire_response(status: int, headers: HeaderPairs, body: str | None) -> WireResponse:
    """The `response` object of a wire answer (`body` already base64)."""
    return {"status": status, "headers": headers, "body": body}
