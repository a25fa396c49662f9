"""A tape's settings, named once: what `POST /v1/tapes` accepts beside the tape's identity.

Every setting is one field of `TapeSettings`. The API schema (`TapeConfig` adds the identity
columns), the stored JSON config column (`stored_config`), the tape view, the reopen comparison
(409) and the ask all derive from this model, and a stored config is parsed into it once per
distinct config (`stored_settings`), so readers use typed attributes instead of string keys.
Without it a setting was named in five to nine files, and the copies drifted (a setting accepted
and compared on reopen but missing from the tape view).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from enum import StrEnum
from functools import lru_cache
from typing import Any, Literal, NoReturn

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from engine.admin_regex import compile_admin_regex
from engine.errors import InvalidSpec

_PRICED_HOST = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$")
MAX_PRICE = 1e9


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FaultKind(StrEnum):
    TIMEOUT = "timeout"
    RESET = "reset"
    TOO_MANY_REQUESTS = "429"
    UNAVAILABLE = "503"
    LATENCY = "latency"


class BranchCapabilities(StrEnum):
    """Whether a tape's requests must present their branch's capability
    (resolver/capabilities.py)."""

    REQUIRED = "required"
    OPTIONAL = "optional"

    @classmethod
    def _missing_(cls, value: object) -> NoReturn:
        valid = ", ".join(repr(member.value) for member in cls)
        raise ValueError(f"{value!r} is not a branch_capabilities value; use one of {valid}")


class CatalogSetting(Strict):
    """How a tape applies the shipped tool catalog (engine/catalog, `groundhog catalog`).
    Entry ids are checked against the catalog where the API takes them (resolver/schemas.py)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    # Entries by id switched `off`, or overridden to `read` or `write`.
    entries: dict[str, Literal["read", "write", "off"]] = {}
    # Hosts whose chat-completion APIs are part of the world (a judge, a simulator): the
    # catalog's chat entries apply to them, and to no other host. Never the policy's own model.
    world_model_hosts: list[str] = []


class Rule(Strict):
    method: str = Field(default="*", min_length=1, max_length=20)
    host: str | None = None
    path: str | None = Field(default=None, min_length=1)
    # A glob over the operation a protocol profile found (`tools/call write_note`,
    # `query GetUser`, `/pkg.Service/Method`): engine/operations.py.
    operation: str | None = Field(default=None, min_length=1, max_length=500)
    reads: list[str] = []
    writes: list[str] = []

    @model_validator(mode="after")
    def _target(self) -> Rule:
        if self.path is None and self.operation is None:
            raise ValueError("a rule needs a path, an operation, or both")
        return self


class FaultRuleConfig(Strict):
    """One `faults` rule of a tape (engine/faults.py): where, how often, which failure."""

    kind: FaultKind
    rate: float = Field(ge=0.0, le=1.0)
    host: str | None = None
    path: str | None = None
    methods: list[str] = []
    retry_after: int = Field(default=1, ge=0, le=86400)
    hold_ms: int = Field(default=1000, ge=0, le=600_000)
    latency_ms: int = Field(default=200, ge=0, le=600_000)


class TapeSettings(Strict):
    """Everything a tape's config column holds. Adding a setting is one field here (with its
    default, so tapes stored before it keep their behaviour) and its tests: docs/internals.md,
    "Adding a tape setting"."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ignore_params: list[str] = []
    match_headers: list[str] = []
    cooperative_hosts: list[str] = []
    passthrough_hosts: list[str] = []
    # Package indexes and toolchain downloads pass through unrecorded: engine/toolchain_hosts.
    toolchain_passthrough: bool = True
    redact_headers: list[str] = []
    redact_params: list[str] = []
    redact_json_paths: list[str] = []
    # Widen: extra secret formats (regexes). Narrow: names never redacted by the name rule,
    # rule names switched off (`high-entropy`, `jwt`, `names`, …). See engine/redaction.py.
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
    # Let asks reach cloud metadata addresses (169.254.169.254, …): engine/forbidden_targets.
    allow_metadata_addresses: bool = False
    # Protocol profiles pinned or switched off per host (or "*"): engine/protocol_profiles.py.
    protocols: dict[str, Literal["jsonrpc", "mcp", "graphql", "grpc", "off"]] = {}
    # MCP tools classified by the tape, overriding the server's readOnlyHint either way.
    mcp_tools: dict[str, Literal["read", "write"]] = {}
    # Sandbox identity beyond Mcp-Session-Id (engine/sandbox_identity.py): request headers
    # and cookies that select a branch's sandbox, never keyed, never stored in clear.
    sandbox_headers: list[str] = []
    sandbox_cookies: list[str] = []
    # A WebSocket sibling that leaves the recording goes live on a connection of its own; its
    # earlier messages are sent to the world again first only where the tape says the server
    # needs them: each is then a second live call of it (proxy/websocket_live.py).
    websocket_replay_client_messages: bool = False
    # The shipped tool catalog under `closure` and `rules` (engine/catalog).
    catalog: CatalogSetting = Field(default_factory=CatalogSetting)
    # Whether each request must present its branch's capability (resolver/capabilities.py);
    # None: the deployment's default (`required` unless the resolver listens on loopback only).
    branch_capabilities: BranchCapabilities | None = None

    _rule_mappings: tuple[dict[str, Any], ...] = PrivateAttr(default=())
    _cooperative: frozenset[str] = PrivateAttr(default=frozenset())
    _passthrough: frozenset[str] = PrivateAttr(default=frozenset())

    @field_validator("redact_patterns")
    @classmethod
    def _patterns(cls, value: list[str]) -> list[str]:
        for pattern in value:
            if not pattern or len(pattern) > 500:
                raise ValueError("each pattern must be 1-500 characters")
            try:
                compile_admin_regex(pattern)
            except InvalidSpec as error:
                raise ValueError(error.detail) from error
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
        """The settings as the tape's JSON config column keeps them (a subclass's fields left
        out: they are columns of their own)."""
        return self.model_dump(mode="json", include=set(TapeSettings.model_fields))

    def settings(self) -> TapeSettings:
        """Only the settings (a `TapeConfig` less the tape's identity)."""
        return TapeSettings.model_validate(self.stored_config())

    def model_post_init(self, context: Any, /) -> None:
        # Derived once per parse (a stored config is parsed once): the hit path reads them.
        self._rule_mappings = tuple(rule.model_dump(mode="json") for rule in self.rules)
        self._cooperative = frozenset(host.lower() for host in self.cooperative_hosts)
        self._passthrough = frozenset(host.lower() for host in self.passthrough_hosts)

    @property
    def rule_mappings(self) -> tuple[dict[str, Any], ...]:
        """The `rules` as the stored config holds them, for the pure matchers that read them."""
        return self._rule_mappings

    @property
    def cooperative_host_set(self) -> frozenset[str]:
        """`cooperative_hosts`, lowercased for comparison with a request's host."""
        return self._cooperative

    @property
    def passthrough_host_set(self) -> frozenset[str]:
        """`passthrough_hosts`, lowercased for comparison with a request's host."""
        return self._passthrough


# What a tape stored before a setting existed behaves as, where that differs from the setting's
# default for new tapes: such a tape keeps serving what it recorded (package downloads it
# recorded before toolchain passthrough existed stay on its tape).
STORED_BEFORE_IT_EXISTED: dict[str, Any] = {"toolchain_passthrough": False}


@lru_cache(maxsize=256)
def _parsed(text: str) -> TapeSettings:
    stored = json.loads(text)
    known = {name: value for name, value in stored.items() if name in TapeSettings.model_fields}
    return TapeSettings.model_validate({**STORED_BEFORE_IT_EXISTED, **known})


def stored_settings(config: Mapping[str, Any], text: str | None = None) -> TapeSettings:
    """The settings of a stored config (`text`: the column's JSON text, when read with it).

    Parsed once per distinct config: every resolve reads its tape's settings. Keys this version
    does not know (an export's `redaction` summary, a setting since removed) are left aside;
    a setting the config lacks (stored before it existed) takes its default.
    """
    if text is None:
        text = json.dumps(dict(config), sort_keys=True, separators=(",", ":"))
    return _parsed(text)
