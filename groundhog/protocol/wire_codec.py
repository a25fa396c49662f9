"""Header pairs and bodies as they travel, and the resolve ask a parsed request becomes.

The resolver speaks JSON with base64 bodies and headers as ordered `[name, value]` lists of
latin-1 text (docs/internals.md): latin-1 maps every byte to one code point and back, so any
header the world sends survives the round trip unchanged. Both the proxy (proxy/wire.py, on
the requests mitmproxy parses) and the resolver's sealed replay (resolver/verify/replay.py, on
recorded requests) turn a request into `POST /v1/resolve`'s body; doing it here, on any object
shaped like a parsed request, keeps that one translation without the resolver importing the
proxy, and without this package importing mitmproxy (a worker's environment has none).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Sequence
from typing import Protocol

from groundhog.protocol import headers
from groundhog.protocol.wire import HeaderPairs, ResolveAsk

PROXY_AUTHORIZATION = b"proxy-authorization"
HeaderFields = tuple[tuple[bytes, bytes], ...]


def header_text(value: bytes) -> str:
    return value.decode("latin-1")


def header_bytes(value: str) -> bytes:
    return value.encode("latin-1")


def encode_body(body: bytes | None) -> str:
    return base64.b64encode(body or b"").decode("ascii")


def decode_body(body: str | None) -> bytes:
    return base64.b64decode(body) if body else b""


def pairs_from_fields(fields: Iterable[tuple[bytes, bytes]]) -> HeaderPairs:
    return [[header_text(name), header_text(value)] for name, value in fields]


def fields_from_pairs(pairs: Sequence[Sequence[str]]) -> HeaderFields:
    return tuple((header_bytes(name), header_bytes(value)) for name, value in pairs)


def without_private_fields(fields: Iterable[tuple[bytes, bytes]]) -> HeaderFields:
    """The fields without any `X-Groundhog-*` header or the proxy credentials: they carry the
    worker's identity and the proxy's own bookkeeping, which the world must never see."""
    return tuple(
        (name, value)
        for name, value in fields
        if not name.lower().startswith(headers.PREFIX_BYTES) and name.lower() != PROXY_AUTHORIZATION
    )


class _Query(Protocol):
    def items(self, multi: bool = ...) -> Iterable[tuple[str, str]]: ...


class _Headers(Protocol):
    @property
    def fields(self) -> HeaderFields: ...


class ParsedRequest(Protocol):
    """What a resolve ask is made of, as an HTTP parser (mitmproxy's `http.Request`) gives it."""

    @property
    def method(self) -> str: ...

    @property
    def scheme(self) -> str: ...

    @property
    def pretty_host(self) -> str: ...

    @property
    def port(self) -> int: ...

    @property
    def path(self) -> str: ...

    @property
    def query(self) -> _Query: ...

    @property
    def headers(self) -> _Headers: ...

    @property
    def raw_content(self) -> bytes | None: ...


def resolve_payload(
    request: ParsedRequest, *, tape: str, branch: str, body_too_large: bool
) -> ResolveAsk:
    """The `POST /v1/resolve` body for a request whose private headers are already gone."""
    path, _, _ = request.path.partition("?")
    return {
        "tape": tape,
        "branch": branch,
        "method": request.method,
        "scheme": request.scheme,
        "host": request.pretty_host.lower(),
        "port": request.port,
        "path": path or "/",
        "query": [[name, value] for name, value in request.query.items(multi=True)],
        "headers": pairs_from_fields(request.headers.fields),
        "body": "" if body_too_large else encode_body(request.raw_content),
        "body_too_large": body_too_large,
    }
