"""Dependency models: which resources a request reads and writes (DESIGN §4).

The fingerprint of a read is only as good as this answer. `closure` names the whole origin —
scheme, host and port — (recall 1, the safe default); `path` the request's own path on its
origin; `rules` follows declarative route rules from the tape config; `hints` trusts a
cooperative world's `X-Groundhog-Reads/-Writes` headers. Under `rules` and `hints` every write
also bumps `origin:<origin>`, so reads that fall back to `closure` (unmatched by a rule, or never
hinted) are still invalidated by any write to the origin. Read or write comes from the request's
operation (engine/operations.py) when a protocol profile found one, and rules may match it
(`"operation": "tools/call write_note"`).

Per origin, not per host: on one machine every local tool server is `127.0.0.1`, and a write to
one of them must not make every other's reads `refetched`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from engine.content_coding import decode_content
from engine.operations import Kind, Operation, operation_kind
from engine.policy import READ_METHODS, DependencyModel
from engine.request import RequestParts
from groundhog.protocol import headers as protocol_headers

READS_HEADER = protocol_headers.READS.lower()
WRITES_HEADER = protocol_headers.WRITES.lower()
_PLACEHOLDER = re.compile(r"\{([^{}]+)\}")


@dataclass(frozen=True)
class Classification:
    is_write: bool
    reads: frozenset[str]
    writes: frozenset[str]
    # A session operation (`initialize`, a notification, the session's GET stream or DELETE):
    # live for the asker's own sandbox, at an address of its key and occurrence alone.
    session: bool = False

    @property
    def own_resources(self) -> frozenset[str]:
        """What a write's own address fingerprint covers: nothing for a session operation. Its
        session resource's version moves with every session operation, and a streamed one (the
        session's GET) is recorded only when it ends, so its intent would leave the next one's
        address (a second session's `initialize`) to depend on what was still in flight — a
        recording a sealed replay could never meet again."""
        if self.session:
            return frozenset()
        return self.reads | self.writes


def origin(request: RequestParts) -> str:
    """`scheme://host[:port]`, the port left out when it is the scheme's default."""
    return f"{request.scheme.lower()}://{request.authority}"


def origin_resource(request: RequestParts) -> str:
    return f"origin:{origin(request)}"


def path_resource(request: RequestParts) -> str:
    return f"path:{origin(request)}{request.path}"


# The per-host names `closure` and `path` used before resources were per origin. Reads still
# depend on them and writes never bump them, so a tape recorded before keeps its meaning: a
# branch that wrote under the old names gets the same non-empty fingerprint as before (refetched
# or replayed, never served the base recording), and a branch that never held them hashes nothing
# for them (a name with no version leaves the fingerprint as it was).
def legacy_host_resource(request: RequestParts) -> str:
    return f"host:{request.normalised_host}"


def legacy_path_resource(request: RequestParts) -> str:
    return f"path:{request.normalised_host}{request.path}"


def parse_resource_list(value: str | None) -> frozenset[str]:
    if not value:
        return frozenset()
    return frozenset(name.strip() for name in value.split(",") if name.strip())


def _template_regex(template: str) -> re.Pattern[str]:
    pattern = ""
    position = 0
    for match in _PLACEHOLDER.finditer(template):
        pattern += re.escape(template[position : match.start()])
        pattern += f"(?P<{match.group(1)}>[^/]+)"
        position = match.end()
    pattern += re.escape(template[position:])
    return re.compile(f"^{pattern}/?$")


def _json_body(request: RequestParts) -> Any:
    decoded = decode_content(request.body, request.header("content-encoding"))
    if not decoded:
        return None
    try:
        return json.loads(decoded.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None


def _lookup(document: Any, dotted: str) -> str:
    value = document
    for part in dotted.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _fill(
    template: str, path_values: Mapping[str, str], request: RequestParts, session_label: str = ""
) -> str:
    query = dict(request.query)
    body: list[Any] = []

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1)
        if name == "session" and name not in path_values:
            return session_label  # engine/session_labels.py: the session, by who opened it
        if name.startswith("query."):
            return query.get(name.removeprefix("query."), "")
        if name.startswith("body."):
            if not body:
                body.append(_json_body(request))
            return _lookup(body[0], name.removeprefix("body."))
        return path_values.get(name, "")

    return _PLACEHOLDER.sub(substitute, template)


def match_rule(
    request: RequestParts,
    rules: Sequence[Mapping[str, Any]],
    operation: Operation | None = None,
) -> tuple[Mapping[str, Any], dict[str, str]] | None:
    """The first rule matching method, host, path template and operation, with its path values.

    A rule naming an `operation` (a glob over the operation's name, `tools/call write_*`)
    matches only requests whose profile found that operation; its method and path default to
    any.
    """
    for rule in rules:
        wanted = rule.get("operation")
        if wanted is not None and (
            operation is None or operation.failed or not fnmatchcase(operation.name, str(wanted))
        ):
            continue
        default_method = "*" if wanted is not None else ""
        if str(rule.get("method", default_method)).upper() not in (request.method.upper(), "*"):
            continue
        host = rule.get("host")
        if host and host.lower() != request.normalised_host:
            continue
        path = rule.get("path")
        if path is None and wanted is not None:
            return rule, {}
        found = _template_regex(str(path or "")).match(request.path)
        if found:
            return rule, found.groupdict()
    return None


def request_kind(
    request: RequestParts,
    operation: Operation | None,
    *,
    tool_kinds: Mapping[str, Any] = {},
    read_only_tools: frozenset[str] = frozenset(),
) -> Kind:
    """Read, write or session: by the operation, or (plain HTTP) GET/HEAD/OPTIONS read."""
    kind = Kind.BY_METHOD
    if operation is not None:
        kind = operation_kind(operation, tool_kinds=tool_kinds, read_only_tools=read_only_tools)
    if kind is Kind.BY_METHOD:
        return Kind.READ if request.method.upper() in READ_METHODS else Kind.WRITE
    return kind


def session_resource(request: RequestParts) -> str:
    """What a session operation writes: a resource no read depends on, so setting up or ending
    a branch's own session never invalidates what it reads."""
    return f"session:{origin(request)}"


def classify(
    request: RequestParts,
    model: DependencyModel,
    *,
    rules: Sequence[Mapping[str, Any]] = (),
    hinted_reads: str | None = None,
    hinted_writes: str | None = None,
    operation: Operation | None = None,
    tool_kinds: Mapping[str, Any] = {},
    read_only_tools: frozenset[str] = frozenset(),
    session_label: str = "",
    catalog_kind: Kind | None = None,
) -> Classification:
    """Read or write, and the resources it reads and (as far as known before the answer) writes.

    `hinted_*` are the `X-Groundhog-Reads/-Writes` recorded for this key earlier (hints model);
    `hinted_reads` is None when the world never named this key's reads, "" when it said "none".
    `operation`: what a protocol profile found in the request; `tool_kinds` (the tape's
    `mcp_tools`) and `read_only_tools` (the server's `readOnlyHint`s) classify MCP tool calls.
    `session_label` is what a rule's `{session}` names (engine/session_labels.py; "" outside a
    session). `catalog_kind`: what the shipped tool catalog says a plain HTTP request does
    (engine/catalog); a tape's own rule still wins under `rules`.
    """
    kind = request_kind(request, operation, tool_kinds=tool_kinds, read_only_tools=read_only_tools)
    if catalog_kind is not None and operation is None:
        kind = catalog_kind
    if kind is Kind.SESSION:
        # Live for the asker's own sandbox, like a write, but it changes no shared resource.
        return Classification(
            True, frozenset(), frozenset({session_resource(request)}), session=True
        )
    is_write = kind is Kind.WRITE
    own_origin = origin_resource(request)
    closure = Classification(
        is_write,
        frozenset({own_origin, legacy_host_resource(request)}),
        frozenset({own_origin}) if is_write else frozenset(),
    )
    if model is DependencyModel.PATH:
        own = path_resource(request)
        reads = frozenset({own, legacy_path_resource(request)})
        return Classification(is_write, reads, frozenset({own}) if is_write else frozenset())
    if model is DependencyModel.RULES:
        matched = match_rule(request, rules, operation)
        if matched is None:
            return closure
        rule, values = matched
        reads = frozenset(_fill(t, values, request, session_label) for t in rule.get("reads") or [])
        writes = frozenset(
            _fill(t, values, request, session_label) for t in rule.get("writes") or []
        )
        rule_is_write = bool(writes)
        return Classification(
            rule_is_write, reads, writes | {own_origin} if rule_is_write else frozenset()
        )
    if model is DependencyModel.HINTS:
        if hinted_reads is None:
            # Never hinted: closure. Hinted but empty ("reads no state") is a real answer.
            return closure
        writes = parse_resource_list(hinted_writes)
        return Classification(
            is_write,
            parse_resource_list(hinted_reads),
            writes | {own_origin} if is_write else frozenset(),
        )
    return closure


def recorded_writes(
    request: RequestParts,
    model: DependencyModel,
    classification: Classification,
    response_headers: Iterable[Sequence[str]],
) -> frozenset[str]:
    """The resources a recorded write bumps; the hints model takes them from the response."""
    if model is DependencyModel.HINTS:
        named: frozenset[str] = frozenset()
        for name, value in response_headers:
            if name.lower() == WRITES_HEADER:
                named |= parse_resource_list(value)
        return named | {origin_resource(request)}
    return classification.writes


def response_hints(
    response_headers: Iterable[Sequence[str]],
) -> tuple[str | None, str] | None:
    """The (reads, writes) a cooperative world named in a response, normalised, or None.

    Reads are None when the response named writes only, so such a key keeps closure reads.
    """
    reads: set[str] | None = None
    writes: set[str] = set()
    seen = False
    for name, value in response_headers:
        if name.lower() == READS_HEADER:
            reads = (reads or set()) | parse_resource_list(value)
            seen = True
        elif name.lower() == WRITES_HEADER:
            writes |= parse_resource_list(value)
            seen = True
    if not seen:
        return None
    return (None if reads is None else ",".join(sorted(reads))), ",".join(sorted(writes))
