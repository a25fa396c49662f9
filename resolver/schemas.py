"""Pydantic shapes of the admin API and the internal protocol (docs/internals.md).

Validation lives here so every route rejects bad input the same way (422 problem+json naming
the field and, for enums, the valid values) before anything touches the store.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from engine.catalog import entry_ids
from engine.policy import DependencyModel, Mode
from engine.resolve_request import ATTEMPT_PATTERN, MAX_CAPABILITY_TEXT
from engine.tape_settings import CatalogSetting, Strict, TapeSettings
from groundhog.protocol import wire
from groundhog.protocol.names import (
    BRANCH_NAME_RULE,
    BRANCH_PATH_RULE,
    TAPE_NAME_RULE,
    is_branch_name,
    is_branch_path,
    is_tape_name,
)
from resolver.errors import BodyTooLarge, InvalidInput

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


class TapeIdentity(Strict):
    """What names a tape and is a column of its own: the tape's identity and switches."""

    name: str
    world_seed: int = Field(default=0, ge=INT64_MIN, le=INT64_MAX)
    mode: Mode = Mode.GROUNDHOG
    online: bool = True
    dependency_model: DependencyModel = DependencyModel.CLOSURE

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not is_tape_name(value):
            raise ValueError(TAPE_NAME_RULE)
        return value


# The identity's fields come first in the schema (pydantic orders fields from the last base).
class TapeConfig(TapeSettings, TapeIdentity):
    """The body of `POST /v1/tapes`: everything that defines a tape's behaviour. Its settings
    are `TapeSettings` (engine/tape_settings.py), the one place a setting is named."""

    def identity(self) -> dict[str, Any]:
        """The identity's fields as the tape view shows them."""
        return self.model_dump(mode="json", include=set(TapeIdentity.model_fields))

    @field_validator("catalog")
    @classmethod
    def _known_catalog_entries(cls, value: CatalogSetting) -> CatalogSetting:
        # The catalog's ids are the resolver's data: checked where the API takes a setting.
        known = entry_ids()
        unknown = sorted(set(value.entries) - known)
        if unknown:
            raise ValueError(
                f"no catalog entry is named {', '.join(unknown)}; the entries are "
                f"{', '.join(sorted(known))} (groundhog catalog lists them)"
            )
        return value


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
    """`POST /v1/renew`: the ticket whose single-flight claim to extend."""

    ticket: str = Field(min_length=1, max_length=64)


class WaitRequest(BaseModel):
    """`POST /v1/wait`: the token a `wait` answer carried."""

    wait: str = Field(min_length=1, max_length=16 * 1024 * 1024)


# Ids are BIGINT (SQLite's INTEGER); epochs and occurrences INTEGER on PostgreSQL.
_MAX_ID = 2**63 - 1
_MAX_INT = 2**31 - 1


class LeaseTakeRequest(BaseModel):
    """`POST /v1/leases/take`: a proxy asks to answer a branch's hits itself."""

    tape: str
    branch: str
    holder: str = Field(min_length=1, max_length=64, pattern=ATTEMPT_PATTERN)
    # The capability of the ask that made the holder take the lease (resolver/capabilities.py).
    capability: str | None = Field(default=None, max_length=MAX_CAPABILITY_TEXT)


class LeaseAheadRequest(BaseModel):
    """`POST /v1/leases/ahead`: a holder asks for the recorded answers a branch may ask next."""

    tape: str
    branch: str
    # Exchange ids of the tape whose answers the holder keeps already (a sibling's answers or
    # recordings): the read-ahead goes past them instead of sending them again.
    held: list[Annotated[int, Field(ge=1, le=_MAX_ID)]] = Field(
        default_factory=list, max_length=wire.MAX_HELD_EXCHANGES
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
