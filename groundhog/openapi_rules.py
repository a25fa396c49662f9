"""An OpenAPI 3.x document turned into a tape's `rules` (`groundhog tape rules T --from-openapi`).

An API's own document already says which operations only read — by HTTP method, and for the
POST search and query endpoints agents call, by its naming conventions (operation ids and tags
such as `search`, `query`, `list`, `get`) or a vendor `x-` extension. Without this a user
re-types every route as a rule by hand, or leaves every POST a live write.

Safe methods (GET, HEAD, OPTIONS) read. A POST the document's conventions mark as a read is
*inferred*: it is listed for the user to confirm and becomes a read only when they accept it,
since a wrong read rule is a stale read. Everything else stays a write. Every rule reads (or
writes) the API's origin, so a write through any of its routes invalidates its reads, as the
`closure` model would.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from groundhog.errors import GroundhogError

SAFE_METHODS = ("get", "head", "options")
METHODS = ("get", "head", "options", "post", "put", "patch", "delete")
# Words in an operation id or tag that, by common convention, name an operation that reads.
READ_WORDS = frozenset(
    {"search", "query", "list", "get", "find", "lookup", "retrieve", "fetch", "read", "count"}
)
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_DEFAULT_PORTS = {"http": 80, "https": 443}


class OpenAPIError(GroundhogError, ValueError):
    """The document is not an OpenAPI 3.x document this import can read."""

    def __init__(self, detail: str) -> None:
        super().__init__(None, "Unusable OpenAPI document", detail)


@dataclass(frozen=True)
class Operation:
    """One operation of the document, as the import judged it."""

    method: str
    path: str
    operation_id: str
    kind: str  # "read" | "write"
    why: str
    inferred: bool = False


@dataclass
class Imported:
    """The rules of one document and how each operation was judged."""

    origin: str
    host: str
    operations: list[Operation] = field(default_factory=list)

    @property
    def inferred(self) -> list[Operation]:
        return [operation for operation in self.operations if operation.inferred]

    def rules(self, *, accept_inferred: bool) -> list[dict[str, Any]]:
        """The tape's `rules`: reads first, so no write rule shadows a read of the same path."""
        resource = f"origin:{self.origin}"
        reads, writes = [], []
        for operation in self.operations:
            reads_it = operation.kind == "read" and (accept_inferred or not operation.inferred)
            rule: dict[str, Any] = {
                "method": operation.method,
                "host": self.host,
                "path": operation.path,
            }
            if reads_it:
                reads.append({**rule, "reads": [resource]})
            else:
                writes.append({**rule, "writes": [resource]})
        return reads + writes


_PLACEHOLDER = re.compile(r"\{([^{}]+)\}")


def _rule_path(path: str) -> str:
    """The document's path template as a rule's: a parameter name that is no identifier
    (`{pet-id}`) is renamed, since a rule's placeholders become regex group names."""
    count = iter(range(1000))

    def name(match: re.Match[str]) -> str:
        found = match.group(1)
        return match.group(0) if found.isidentifier() else f"{{param{next(count)}}}"

    return _PLACEHOLDER.sub(name, path)


def _words(text: str) -> set[str]:
    return {word.lower() for word in _WORD.findall(text)}


def _origin(document: Mapping[str, Any], server: str | None) -> tuple[str, str, str]:
    """(origin, host, base path) from `server` or the document's first server URL."""
    url = server
    if url is None:
        servers = document.get("servers") or []
        if not servers or not isinstance(servers[0], Mapping) or not servers[0].get("url"):
            raise OpenAPIError(
                "the document names no servers[0].url: give the API's base URL with --server "
                "(e.g. --server https://api.example.com/v1)"
            )
        url = str(servers[0]["url"])
    parts = urlsplit(url)
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise OpenAPIError(
            f"server URL {url!r} is not an absolute http(s) URL: give one with --server "
            "(e.g. --server https://api.example.com/v1)"
        )
    host = parts.hostname.lower()
    port = parts.port
    authority = host if port in (None, _DEFAULT_PORTS[parts.scheme]) else f"{host}:{port}"
    return f"{parts.scheme}://{authority}", host, parts.path.rstrip("/")


def _judge(
    method: str, operation: Mapping[str, Any], read_extensions: Sequence[str]
) -> tuple[str, str, bool]:
    """(kind, why, inferred) of one operation."""
    if method in SAFE_METHODS:
        return "read", f"{method.upper()} is a safe method", False
    for name in read_extensions:
        if operation.get(name):
            return "read", f"{name} is set", True
    if method == "post":
        operation_id = str(operation.get("operationId") or "")
        matched = sorted(_words(operation_id) & READ_WORDS)
        if matched:
            return "read", f"operationId {operation_id!r} says {matched[0]!r}", True
        for tag in operation.get("tags") or ():
            matched = sorted(_words(str(tag)) & READ_WORDS)
            if matched:
                return "read", f"tag {tag!r} says {matched[0]!r}", True
    return "write", f"{method.upper()} with no read convention", False


def import_openapi(
    document: Any, *, server: str | None = None, read_extensions: Iterable[str] = ()
) -> Imported:
    """Judge every operation of an OpenAPI 3.x `document` (parsed JSON)."""
    if not isinstance(document, Mapping) or not str(document.get("openapi", "")).startswith("3."):
        raise OpenAPIError(
            "not an OpenAPI 3.x document (its top-level `openapi` field must be 3.x; convert a "
            "Swagger 2.0 document first)"
        )
    paths = document.get("paths")
    if not isinstance(paths, Mapping) or not paths:
        raise OpenAPIError("the document has no `paths`: nothing to import")
    extensions = list(read_extensions)
    for name in extensions:
        if not name.startswith("x-"):
            raise OpenAPIError(f"--read-extension {name!r} must be an x- extension name")
    origin, host, base = _origin(document, server)
    imported = Imported(origin=origin, host=host)
    for path, item in paths.items():
        if not isinstance(item, Mapping) or not str(path).startswith("/"):
            continue
        for method in METHODS:
            operation = item.get(method)
            if not isinstance(operation, Mapping):
                continue
            kind, why, inferred = _judge(method, operation, extensions)
            imported.operations.append(
                Operation(
                    method=method.upper(),
                    path=_rule_path(f"{base}{path}"),
                    operation_id=str(operation.get("operationId") or ""),
                    kind=kind,
                    why=why,
                    inferred=inferred,
                )
            )
    return imported
