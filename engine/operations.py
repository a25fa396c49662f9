"""Operations: what a request does, as its protocol says it (DESIGN §3, "Operation").

A POST is not always a write: an MCP `tools/list`, a JSON-RPC `getBalance` or a GraphQL `query`
read state, and an MCP `tools/call` reads or writes depending on the tool. Without this module
every tool call of an agent would be a live write and nothing would be shared; with the HTTP
method alone, marking `POST /mcp` a read would make every write tool a shared read too.

`Operation` is the value the protocol profiles (engine/protocol_profiles.py) extract and the
dependency models (engine/dependencies.py) classify. `operation_kind` is the default
read/write/session table, pure and cheap; the tape may override a tool either way
(`mcp_tools`), and the server's own `readOnlyHint` (learned from its recorded `tools/list`,
engine/mcp_tools.py) makes a tool a read.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Profile(StrEnum):
    HTTP = "http"
    JSONRPC = "jsonrpc"
    MCP = "mcp"
    GRAPHQL = "graphql"
    GRPC = "grpc"


class Kind(StrEnum):
    READ = "read"
    WRITE = "write"
    # Sets up or ends the asker's own session (MCP `initialize`, notifications, its GET stream,
    # its DELETE): always live for its own branch, like a write, since it selects the sandbox.
    SESSION = "session"
    # Plain HTTP: the method decides (GET/HEAD/OPTIONS read), as before operations existed.
    BY_METHOD = "by-method"


MCP_READS = frozenset(
    {
        "tools/list",
        "resources/list",
        "resources/read",
        "resources/templates/list",
        "prompts/list",
        "prompts/get",
        "ping",
        "completion/complete",
    }
)
MCP_SESSION = frozenset({"initialize"})
MCP_METHODS = MCP_READS | MCP_SESSION | {"tools/call", "logging/setLevel"}
MCP_METHOD_PREFIXES = ("notifications/", "resources/", "tools/", "prompts/", "sampling/")
TOOLS_CALL = "tools/call"


@dataclass(frozen=True)
class Call:
    """One JSON-RPC call inside a request (a batch holds several)."""

    method: str
    tool: str | None = None
    is_notification: bool = False


@dataclass(frozen=True)
class Operation:
    """The operation of one request. `failed` names why a detected profile could not read the
    body: such a request is an opaque write, never a shared read."""

    profile: Profile
    name: str
    calls: tuple[Call, ...] = ()
    graphql_type: str | None = None  # "query" | "mutation" | "subscription"
    failed: str | None = None
    # The request body without the JSON-RPC ids (protocol noise), canonical JSON; None when the
    # key should use the body as sent.
    keyed_body: str | None = None

    @property
    def label(self) -> str:
        """How reports and keys name it: `mcp tools/call search`, `graphql query Q`."""
        if self.failed:
            return f"{self.profile}! {self.failed}"
        return f"{self.profile} {self.name}"


def is_mcp_method(method: str) -> bool:
    return method in MCP_METHODS or method.startswith(MCP_METHOD_PREFIXES)


def _call_kind(
    call: Call, profile: Profile, tool_kinds: Mapping[str, str], read_only_tools: Collection[str]
) -> Kind:
    if profile is not Profile.MCP:
        return Kind.WRITE  # a JSON-RPC method is a write unless a rule says it reads
    if call.is_notification or call.method in MCP_SESSION:
        return Kind.SESSION
    if call.method in MCP_READS:
        return Kind.READ
    if call.method == TOOLS_CALL and call.tool is not None:
        pinned = tool_kinds.get(call.tool)
        if pinned in (Kind.READ, Kind.WRITE):
            return Kind(pinned)
        return Kind.READ if call.tool in read_only_tools else Kind.WRITE
    return Kind.WRITE


def operation_kind(
    operation: Operation,
    *,
    tool_kinds: Mapping[str, Any] = {},
    read_only_tools: Collection[str] = (),
) -> Kind:
    """Read, write or session, by the protocol's defaults and the tape's tool overrides.

    A batch reads only when every call in it reads; a session call in it makes it a session
    operation (it must reach the asker's own sandbox).
    """
    if operation.failed:
        return Kind.WRITE
    if operation.profile is Profile.HTTP:
        return Kind.BY_METHOD
    if operation.profile is Profile.GRAPHQL:
        return Kind.READ if operation.graphql_type == "query" else Kind.WRITE
    if operation.profile is Profile.GRPC:
        return Kind.WRITE  # a method is a read only where a rule says so
    if operation.profile is Profile.MCP and not operation.calls:
        # A session's own GET stream or its DELETE (no JSON-RPC body): as a write it would bump
        # the host, so a replayed GET stream (served at once, recorded only when it ended) made
        # every later read of the replaying branch miss.
        return Kind.SESSION
    kinds = {
        _call_kind(call, operation.profile, tool_kinds, read_only_tools) for call in operation.calls
    }
    if Kind.SESSION in kinds:
        return Kind.SESSION
    if kinds == {Kind.READ}:
        return Kind.READ
    return Kind.WRITE
