"""Pydantic shapes of the admin API and the internal protocol (docs/internals.md).

Validation lives here so every route rejects bad input the same way (422 problem+json naming
the field and, for enums, the valid values) before anything touches the store.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from groundhog.protocol.names import (
    BRANCH_NAME_RULE,
    BRANCH_PATH_RULE,
    TAPE_NAME_RULE,
    is_branch_name,
    is_branch_path,
    is_tape_name,
)
from resolver.admin_regex import compile_admin_regex
from resolver.capabilities import CAPABILITY_LENGTH, BranchCapabilities
from resolver.catalog import entry_ids
from resolver.errors import BodyTooLarge, InvalidInput
from resolver.faults import FaultKind
from resolver.policy import DependencyModel, Mode

# Store integers are 64-bit signed (BigInteger on PostgreSQL, INTEGER on SQLite).
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def check_tape_name(name: str) -> str:
    if not is_tape_name(name):
        raise InvalidInput(f"tape name {name!r} is invalid: {TAPE_NAME_RULE}", field="name")
    return name


def check_branch_path(path: str) -> str:
    if not is_branch_path(path):
        raise InvalidInput(f"branch path {path!r} is malformed: {BRANCH_PATH_RULE}", field="branch")
    return path


def check_config_size(config: dict[str, Any], limit: int) -> None:
    """A tape's config is read on every resolve: a huge one slows every request of the tape."""
    size = len(json.dumps(config, separators=(",", ":")))
    if size > limit:
        raise BodyTooLarge(
            f"the tape config is {size} bytes of JSON, over max_tape_config_bytes={limit} "
            "(GROUNDHOG_MAX_TAPE_CONFIG_BYTES)",
            field="config",
            limit=limit,
        )


def decode_base64(value: str, field: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as error:
        raise InvalidInput(f"{field} is not valid base64: {error}", field=field) from error


def encode_base64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


_PRICED_HOST = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$")
MAX_PRICE = 1e9


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Rule(Strict):
    method: str = Field(default="*", min_length=1, max_length=20)
    host: str | None = None
    path: str | None = Field(default=None, min_length=1)
    # A glob over the operation a protocol profile found (`tools/call write_note`,
    # `query GetUser`, `/pkg.Service/Method`): resolver/operations.py.
    operation: str | None = Field(default=None, min_length=1, max_length=500)
    reads: list[str] = []
    writes: list[str] = []

    @model_validator(mode="after")
    def _target(self) -> Rule:
        if self.path is None and self.operation is None:
            raise ValueError("a rule needs a path, an operation, or both")
        return self


class FaultRuleConfig(Strict):
    """One `faults` rule of a tape (resolver/faults.py): where, how often, which failure."""

    kind: FaultKind
    rate: float = Field(ge=0.0, le=1.0)
    host: str | None = None
    path: str | None = None
    methods: list[str] = []
    retry_after: int = Field(default=1, ge=0, le=86400)
    hold_ms: int = Field(default=1000, ge=0, le=600_000)
    latency_ms: int = Field(default=200, ge=0, le=600_000)


class CatalogSetting(Strict):
    """How a tape applies the shipped tool catalog (resolver/catalog, `groundhog catalog`)."""

    enabled: bool = True
    # Entries by id switched `off`, or overridden to `read` or `write`.
    entries: dict[str, Literal["read", "write", "off"]] = {}
    # Hosts whose chat-completion APIs are part of the world (a judge, a simulator): the
    # catalog's chat entries apply to them, and to no other host. Never the policy's own model.
    world_model_hosts: list[str] = []

    @field_validator("entries")
    @classmethod
    def _known(cls, value: dict[str, str]) -> dict[str, str]:
        known = entry_ids()
        unknown = sorted(set(value) - known)
        if unknown:
            raise ValueError(
                f"no catalog entry is named {', '.join(unknown)}; the entries are "
                f"{', '.join(sorted(known))} (groundhog catalog lists them)"
            )
        return value


class TapeConfig(Strict):
    """The body of `POST /v1/tapes`: everything that defines a tape's behaviour."""

    name: str
    world_seed: int = Field(default=0, ge=INT64_MIN, le=INT64_MAX)
    mode: Mode = Mode.GROUNDHOG
    online: bool = True
    dependency_model: DependencyModel = DependencyModel.CLOSURE
    ignore_params: list[str] = []
    match_headers: list[str] = []
    cooperative_hosts: list[str] = []
    passthrough_hosts: list[str] = []
    # Package indexes and toolchain downloads pass through unrecorded: resolver/toolchain_hosts.
    toolchain_passthrough: bool = True
    redact_headers: list[str] = []
    redact_params: list[str] = []
    redact_json_paths: list[str] = []
    # Widen: extra secret formats (regexes). Narrow: names never redacted by the name rule,
    # rule names switched off (`high-entropy`, `jwt`, `names`, …). See resolver/redaction.py.
    redact_patterns: list[str] = []
    redact_keep: list[str] = []
    redact_disable: list[str] = []
    # Hosts (or "*") whose credentials name no identity: every credential keys the same there.
    interchangeable_credentials: list[str] | Literal["*"] = []
    # Negotiation headers (Range, Accept, …) left out of the request key.
    ignore_headers: list[str] = []
    rules: list[Rule] = []
    faults: list[FaultRuleConfig] = []
    simulator_url: str | None = Field(default=None, pattern=r"^https?://[^\s]+$", max_length=2000)
    simulate_writes: bool = False
    # Record a failure before any HTTP answer (connect, TLS, timeout) as the world's answer.
    record_transport_failures: bool = False
    # Price of one live call per host, in any currency: the cost report prices calls with it.
    prices: dict[str, float] = {}
    # Let asks reach cloud metadata addresses (169.254.169.254, …): resolver/forbidden_targets.
    allow_metadata_addresses: bool = False
    # Protocol profiles pinned or switched off per host (or "*"): resolver/protocol_profiles.py.
    protocols: dict[str, Literal["jsonrpc", "mcp", "graphql", "grpc", "off"]] = {}
    # MCP tools classified by the tape, overriding the server's readOnlyHint either way.
    mcp_tools: dict[str, Literal["read", "write"]] = {}
    # Sandbox identity beyond Mcp-Session-Id (resolver/sandbox_identity.py): request headers
    # and cookies that select a branch's sandbox, never keyed, never stored in clear.
    sandbox_headers: list[str] = []
    sandbox_cookies: list[str] = []
    # A WebSocket sibling that leaves the recording goes live on a connection of its own; its
    # earlier messages are sent to the world again first only where the tape says the server
    # needs them: each is then a second live call of it (proxy/websocket_live.py).
    websocket_replay_client_messages: bool = False
    # The shipped tool catalog under `closure` and `rules` (resolver/catalog).
    catalog: CatalogSetting = Field(default_factory=CatalogSetting)
    # Whether each request must present its branch's capability (resolver/capabilities.py);
    # None: the deployment's default (`required` unless the resolver listens on loopback only).
    branch_capabilities: BranchCapabilities | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not is_tape_name(value):
            raise ValueError(TAPE_NAME_RULE)
        return value

    @field_validator("redact_patterns")
    @classmethod
    def _patterns(cls, value: list[str]) -> list[str]:
        for pattern in value:
            if not pattern or len(pattern) > 500:
                raise ValueError("each pattern must be 1-500 characters")
            try:
                compile_admin_regex(pattern)
            except InvalidInput as error:
                raise ValueError(str(error)) from error
        return value

    @field_validator("prices", mode="before")
    @classmethod
    def _prices(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            return value  # pydantic says it is not an object
        for host, price in value.items():
            if not isinstance(host, str) or not _PRICED_HOST.match(host):
                raise ValueError(
                    f"{host!r} is not a host name: give it in lowercase, without scheme, port or "
                    "path (e.g. 'api.search.example')"
                )
            number_like = isinstance(price, int | float) and not isinstance(price, bool)
            if not number_like or not math.isfinite(price) or not 0 <= price <= MAX_PRICE:
                raise ValueError(
                    f"the price of {host!r} must be a number from 0 to {MAX_PRICE:g} (the cost of "
                    f"one live call), got {price!r}"
                )
        return value

    def stored_config(self) -> dict[str, Any]:
        """The parts kept in the tape's JSON config column."""
        return self.model_dump(
            mode="json", exclude={"name", "world_seed", "mode", "online", "dependency_model"}
        )


class ShimCounters(BaseModel):
    """A worker's shim counters (`groundhog.shim.counters()`); other fields are kept as sent."""

    model_config = ConfigDict(extra="allow")

    version: Literal[1]
    world_seed: int | None = None
    clock_ns: int = Field(default=0, ge=0)
    occurrences: dict[str, Annotated[int, Field(ge=0)]] = {}


# The same default as the CLI and the Python client: a fork makes a pair unless told otherwise.
DEFAULT_FORK_CHILDREN = 2


class ForkRequest(Strict):
    parent: str = "root"
    children: int | list[str] = Field(default=DEFAULT_FORK_CHILDREN)
    shim_counters: dict[str, Any] | None = None

    @field_validator("children")
    @classmethod
    def _children(cls, value: int | list[str]) -> int | list[str]:
        if isinstance(value, int):
            if not 1 <= value <= 1000:
                raise ValueError("give between 1 and 1000 children")
            return value
        if not value:
            raise ValueError("give at least one child name")
        if len(set(value)) != len(value):
            raise ValueError("child names repeat")
        for name in value:
            if not is_branch_name(name):
                raise ValueError(f"child name {name!r}: {BRANCH_NAME_RULE}")
        return value


# An attempt id: what `secrets.token_urlsafe` makes (the proxy's), in a column of 64.
ATTEMPT_PATTERN = r"^[A-Za-z0-9_-]+$"


class ResolveRequest(BaseModel):
    tape: str
    branch: str
    method: str = Field(min_length=1, max_length=20)
    scheme: Literal["http", "https"] = "http"
    host: str = Field(min_length=1, max_length=300)
    port: int = Field(ge=1, le=65535)
    path: str = "/"
    query: list[tuple[str, str]] = []
    headers: list[tuple[str, str]] = []
    body: str = ""
    body_too_large: bool = False
    # The proxy's id for this ask, sent again when it retries an ask it got no answer to: the
    # retry is given the occurrence its first try took (store/counters.py).
    attempt: str | None = Field(default=None, min_length=1, max_length=64, pattern=ATTEMPT_PATTERN)
    # The asking proxy's lease holder id (proxy/branch_leases.py), when it takes leases: a
    # branch leased to another holder is refused to it (`branch-leased`) until released.
    lease_holder: str | None = Field(
        default=None, min_length=1, max_length=64, pattern=ATTEMPT_PATTERN
    )
    # The branch capability the worker presented (resolver/capabilities.py), as it gave it: a
    # wrong one is refused by the check (403), not by validation (422), whatever its shape.
    capability: str | None = Field(default=None, max_length=4 * CAPABILITY_LENGTH)


class ResponseIn(BaseModel):
    status: int = Field(ge=100, le=599)
    headers: list[tuple[str, str]] = []
    body: str = ""


class UpstreamError(BaseModel):
    kind: Literal["connect", "timeout", "reset", "tls", "other"]
    message: str = ""


class ResponseHead(BaseModel):
    status: int = Field(ge=100, le=599)
    headers: list[tuple[str, str]] = []


RECORD_KINDS = ("response", "error", "passthrough", "head", "unrecorded")


class RecordRequest(BaseModel):
    ticket: str = Field(min_length=1, max_length=64)
    response: ResponseIn | None = None
    error: UpstreamError | None = None
    passthrough: Literal["streamed", "too-large", "websocket", "sandbox"] | None = None
    # The head of a stream being recorded while it flows: answers the stored header form.
    head: ResponseHead | None = None
    # The live call happened but its answer cannot be recorded (the reason, for the report).
    unrecorded: str | None = Field(default=None, max_length=1000)
    streamed: bool = False

    def kind(self) -> str:
        given = [name for name in RECORD_KINDS if getattr(self, name) is not None]
        if len(given) != 1:
            raise InvalidInput(
                "give exactly one of "
                + ", ".join(f"'{name}'" for name in RECORD_KINDS)
                + (f" (got {', '.join(given)})" if given else ""),
            )
        return given[0]


class TicketRequest(BaseModel):
    """`POST /v1/renew`: the ticket whose single-flight lease to extend."""

    ticket: str = Field(min_length=1, max_length=64)


class WaitRequest(BaseModel):
    """`POST /v1/wait`: the token a `wait` answer carried."""

    wait: str = Field(min_length=1, max_length=16 * 1024 * 1024)


# Ids are BIGINT (SQLite's INTEGER); epochs and occurrences INTEGER on PostgreSQL.
_MAX_ID = 2**63 - 1
_MAX_INT = 2**31 - 1
# A read-ahead names at most this many exchanges its holder keeps (the newest it knows).
MAX_HELD_EXCHANGES = 1024


class LeaseTakeRequest(BaseModel):
    """`POST /v1/leases/take`: a proxy asks to answer a branch's hits itself."""

    tape: str
    branch: str
    holder: str = Field(min_length=1, max_length=64, pattern=ATTEMPT_PATTERN)
    # The capability of the ask that made the holder take the lease (resolver/capabilities.py).
    capability: str | None = Field(default=None, max_length=4 * CAPABILITY_LENGTH)


class LeaseAheadRequest(BaseModel):
    """`POST /v1/leases/ahead`: a holder asks for the recorded answers a branch may ask next."""

    tape: str
    branch: str
    # Exchange ids of the tape whose answers the holder keeps already (a sibling's answers or
    # recordings): the read-ahead goes past them instead of sending them again.
    held: list[Annotated[int, Field(ge=1, le=_MAX_ID)]] = Field(
        default_factory=list, max_length=MAX_HELD_EXCHANGES
    )


class LeaseEvent(BaseModel):
    """One hit a lease holder served: the event a resolve would have written for it."""

    method: str = Field(min_length=1, max_length=20)
    url: str = Field(max_length=8000)
    key_hash: str = Field(min_length=1, max_length=64)
    occurrence: int = Field(ge=0, le=_MAX_INT)
    fingerprint: str = Field(max_length=100)
    exchange_id: int = Field(ge=1, le=_MAX_ID)
    true_fingerprint_nonempty: bool = False
    attempt: str | None = Field(default=None, min_length=1, max_length=64, pattern=ATTEMPT_PATTERN)
    # Its place among the hits served at this epoch (1, 2, …): a batch shipped again counts once.
    serial: int = Field(ge=1, le=_MAX_INT)


class LeaseEventsRequest(BaseModel):
    """`POST /v1/leases/events`: a holder ships the hits it served, in the order served."""

    branch_id: int = Field(ge=1, le=_MAX_ID)
    holder: str = Field(min_length=1, max_length=64, pattern=ATTEMPT_PATTERN)
    epoch: int = Field(ge=1, le=_MAX_INT)
    events: list[LeaseEvent] = Field(max_length=10_000)
    # Ship and end the lease in one call (the holder was asked to release, or is idle).
    release: bool = False


class HeldLease(BaseModel):
    branch_id: int = Field(ge=1, le=_MAX_ID)
    epoch: int = Field(ge=1, le=_MAX_INT)


class LeaseRenewRequest(BaseModel):
    """`POST /v1/leases/renew`: a holder keeps its leases; the answer names those asked back."""

    holder: str = Field(min_length=1, max_length=64, pattern=ATTEMPT_PATTERN)
    leases: list[HeldLease] = Field(max_length=100_000)
    # End the holder's leases `leases` does not list: a restarted holder, whose copies died with
    # its last life (its log shipped first), so a fork need not wait for them to lapse.
    release_unlisted: bool = False
