"""The proxy↔resolver wire shapes (`/v1/resolve`, `/v1/wait`, `/v1/renew`, `/v1/record`,
`/v1/tunnel`, `/v1/leases/*`; docs/internals.md), as TypedDicts.

They type the JSON both sides exchange without costing anything at run time: resolve is the
hot path, where the resolver validates straight from bytes (resolver/schemas.py holds the
pydantic validators of the request bodies) and splices cached JSON into its answer, and the
proxy reads the answer as the dict `json.loads` gives. Bodies travel as base64, headers as
ordered `[name, value]` pairs of latin-1 text. `wire_response` is the one constructor of the
`response` object every answer carries.
"""

from __future__ import annotations

import base64
from typing import Any, NotRequired, TypedDict

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
    # The asking proxy's lease holder id, when it takes branch leases (proxy/held_branches.py).
    lease_holder: NotRequired[str]
    # The branch capability the worker presented (resolver/capabilities.py), when it gave one.
    capability: NotRequired[str]


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
    claim_seconds: NotRequired[float]
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
    # A read whose answer held credentials the world issued: what its fetcher is served, the
    # credentials as received (`response` holds them as placeholders). Absent otherwise.
    as_received: WireResponse
    headers: HeaderPairs


class RenewAnswer(TypedDict):
    claim_seconds: float


class TunnelAnswer(TypedDict):
    decision: str
    detail: str


# -- branch leases (proxy/held_branches.py, resolver/lease_service.py) ---------------------
# The request bodies are validated by resolver/schemas.py's Lease* models, held to these by
# tests/resolver/test_schemas.py (a field the proxy always sends may have a default there, never
# the other way round); the answers are built by resolver/lease_service.py as these.


class LeaseTakeAsk(TypedDict):
    """The body of `POST /v1/leases/take`."""

    tape: str
    branch: str
    holder: str
    # The capability of the ask that made the holder take it (resolver/capabilities.py).
    capability: NotRequired[str]


# A read-ahead names at most this many exchanges its holder keeps (the newest it knows).
MAX_HELD_EXCHANGES = 1024


class LeaseAheadAsk(TypedDict):
    """The body of `POST /v1/leases/ahead` (`held`: exchange ids of the tape the holder keeps
    already, which the read-ahead leaves out)."""

    tape: str
    branch: str
    held: list[int]


class LeaseTape(TypedDict):
    """The tape as a resolve sees it (`engine.refs.TapeRef`'s fields)."""

    id: int
    name: str
    world_seed: int
    mode: str
    online: bool
    dependency_model: str
    config: dict[str, Any] | None


class LeaseBranch(TypedDict):
    id: int
    path: str


class AheadAnswer(TypedDict):
    """A recorded answer the grant reads ahead, at its address in the grant's tape."""

    key: str
    occurrence: int
    fingerprint: str
    exchange_id: int
    response: WireResponse


class LeaseGrant(TypedDict):
    """The answer of `/v1/leases/take`: the lease, and the branch's state to serve it from."""

    epoch: int
    expires: float
    # The serial of the last hit applied at this epoch: the holder numbers on from it.
    shipped: int
    lease_seconds: float
    # The store's token (store/identity.py): tape ids are unique within one store only, so what
    # a holder keeps past its process (proxy/answer_disk.py) is filed under it.
    store: str
    tape: LeaseTape
    branch: LeaseBranch
    counts: dict[str, int]
    # False: the branch has more keys than a grant carries, and a key missing from `counts`
    # is unknown (its first ask goes to the resolver, whose answer tells its count).
    counts_complete: bool
    versions: dict[str, str]
    # SHA-256 (hex) of the branch's capability where the tape requires one: a hit presenting
    # another is not served by the holder (the resolver refuses it). None: none required.
    capability_digest: NotRequired[str | None]


class LeaseAheadAnswer(TypedDict):
    """The answer of `/v1/leases/ahead`: recorded answers the branch may ask next."""

    ahead: list[AheadAnswer]


class LeaseHitEvent(TypedDict):
    """One hit a lease holder served, as it ships it (and keeps it in its log)."""

    method: str
    url: str
    key_hash: str
    occurrence: int
    fingerprint: str
    exchange_id: int
    true_fingerprint_nonempty: bool
    attempt: str | None
    serial: int


class LeaseEventsAsk(TypedDict):
    """The body of `POST /v1/leases/events`."""

    branch_id: int
    holder: str
    epoch: int
    events: list[LeaseHitEvent]
    release: bool


class LeaseEventsAnswer(TypedDict):
    applied: int
    released: bool


class HeldLeaseRef(TypedDict):
    branch_id: int
    epoch: int


class LeaseRenewAsk(TypedDict):
    """The body of `POST /v1/leases/renew`."""

    holder: str
    leases: list[HeldLeaseRef]
    # End the holder's leases `leases` does not list (it restarted: their copies died).
    release_unlisted: NotRequired[bool]


class LeaseRenewAnswer(TypedDict):
    """Branch ids: renewed, asked back (ship and release), and lost (another holder's now)."""

    lease_seconds: float
    renewed: list[int]
    revoke: list[int]
    lost: list[int]


def wire_response(status: int, headers: HeaderPairs, body: str | None) -> WireResponse:
    """The `response` object of a wire answer (`body` already base64)."""
    return {"status": status, "headers": headers, "body": body}


def encode_base64(data: bytes) -> str:
    """A body as it travels: base64 text."""
    return base64.b64encode(data).decode("ascii")
