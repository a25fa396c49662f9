"""Work out which tape and branch a request belongs to.

Every exchange is addressed by tape and branch; a request filed under the wrong branch would
share noise it should not, or miss a write it made. Names are read from the raw header bytes
and held to the grammar of groundhog/protocol/names.py: anything else is a `CredentialsError`,
answered `400` before the request goes anywhere. Workers name them in three ways, in order
of precedence: `X-Groundhog-Tape`/`X-Groundhog-Branch` headers, proxy credentials
`TAPE:BRANCH[:CAPABILITY]` (Proxy-Authorization, remembered per client connection because HTTPS
requests inside a CONNECT tunnel no longer carry it), then the proxy's configured defaults. The
branch's capability (proxy/capabilities.py) comes the same way, from `X-Groundhog-Capability`
or the credentials' password, and is held to its own grammar.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import unquote

from mitmproxy import http

from groundhog.protocol.headers import BRANCH as HEADER_BRANCH
from groundhog.protocol.headers import CAPABILITY as HEADER_CAPABILITY
from groundhog.protocol.headers import TAPE as HEADER_TAPE
from groundhog.protocol.names import (
    BRANCH_PATH_RULE,
    CAPABILITY_RULE,
    TAPE_NAME_RULE,
    is_branch_path,
    is_capability,
    is_tape_name,
)
from proxy.capabilities import split_branch_password
from proxy.errors import ProxyError


class CredentialsError(ProxyError, ValueError):
    """Proxy-Authorization is not Basic TAPE:BRANCH, or a tape or branch the worker named (in
    credentials or headers) is outside the grammar of groundhog/protocol/names.py."""


@dataclass(frozen=True)
class Credentials:
    tape: str | None
    branch: str | None
    capability: str | None = None  # proxy/capabilities.py


@dataclass(frozen=True)
class Identity:
    tape: str
    branch: str
    capability: str | None = None


def header_bytes(request: http.Request, name: str) -> bytes | None:
    """The raw bytes of the one header `name` (None when absent or empty); twice is an error.

    mitmproxy decodes header bytes leniently (surrogate escapes); the identity is read from the
    bytes, so a byte outside the grammar is refused here and never travels further as text.
    """
    wanted = name.lower().encode("ascii")
    values = [value for key, value in request.headers.fields if key.lower() == wanted]
    if len(values) > 1:
        raise CredentialsError(f"{name} is given {len(values)} times; give it once")
    return values[0] if values and values[0] else None


def _ascii(value: bytes, where: str) -> str:
    try:
        return value.decode("ascii")
    except UnicodeDecodeError as error:
        raise CredentialsError(
            f"{where} holds a byte that is not ASCII ({value[:120]!r}, byte {error.start})"
        ) from error


def _checked(text: str, where: str, what: str, valid: Callable[[str], bool], rule: str) -> str:
    """`text` percent-decoded, if `valid`; else a `CredentialsError` naming `where` and `rule`."""
    name = unquote(text, errors="strict") if "%" in text else text
    if not valid(name):
        noun = what.split()[0]
        raise CredentialsError(f"{where} names {noun} {name[:120]!r}, not a {what}: {rule}")
    return name


def checked_tape(text: str, where: str) -> str:
    return _checked(text, where, "tape name", is_tape_name, TAPE_NAME_RULE)


def checked_branch(text: str, where: str) -> str:
    return _checked(text, where, "branch path", is_branch_path, BRANCH_PATH_RULE)


def checked_capability(text: str, where: str) -> str:
    if not is_capability(text):
        raise CredentialsError(
            f"{where} presents a capability {text[:80]!r} that is not one: {CAPABILITY_RULE}"
        )
    return text


def parse_proxy_authorization(value: bytes | str | None) -> Credentials | None:
    """Decode `Basic base64(TAPE:BRANCH[:CAPABILITY])`; the branch may come URL-encoded or not."""
    if not value:
        return None
    raw = value if isinstance(value, bytes) else value.encode("utf-8", "surrogateescape")
    scheme, _, token = _ascii(raw, "Proxy-Authorization").strip().partition(" ")
    if scheme.lower() != "basic" or not token.strip():
        raise CredentialsError(f"Proxy-Authorization scheme {scheme[:40]!r} is not Basic")
    try:
        decoded = base64.b64decode(token.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError) as error:
        raise CredentialsError("Proxy-Authorization is not valid base64 of UTF-8 text") from error
    tape, separator, password = decoded.partition(":")
    if not separator:
        raise CredentialsError("Proxy-Authorization has no ':' between tape and branch")
    where = "Proxy-Authorization"
    try:
        branch, capability = split_branch_password(password)
        return Credentials(
            tape=checked_tape(tape, where) if tape else None,
            branch=checked_branch(branch, where) if branch else None,
            capability=checked_capability(capability, where) if capability else None,
        )
    except UnicodeDecodeError as error:
        raise CredentialsError(f"{where} percent-encodes bytes that are not UTF-8") from error


def credentials_from_request(request: http.Request) -> Credentials | None:
    return parse_proxy_authorization(header_bytes(request, "Proxy-Authorization"))


def _header_identity(request: http.Request) -> Credentials:
    """The tape, branch and capability the request's own headers name (each None if absent)."""
    tape = header_bytes(request, HEADER_TAPE)
    branch = header_bytes(request, HEADER_BRANCH)
    capability = header_bytes(request, HEADER_CAPABILITY)
    try:
        return Credentials(
            tape=checked_tape(_ascii(tape, HEADER_TAPE), HEADER_TAPE) if tape else None,
            branch=checked_branch(_ascii(branch, HEADER_BRANCH), HEADER_BRANCH) if branch else None,
            capability=(
                checked_capability(_ascii(capability, HEADER_CAPABILITY), HEADER_CAPABILITY)
                if capability
                else None
            ),
        )
    except UnicodeDecodeError as error:
        raise CredentialsError(
            "an identity header percent-encodes bytes that are not UTF-8"
        ) from error


def connect_credentials(request: http.Request) -> Credentials | None:
    """What a CONNECT names for its tunnel: headers on the CONNECT win over its credentials.

    Some clients put headers on the CONNECT itself (requests' proxy_headers). None when it
    names nothing; raises `CredentialsError` for malformed credentials or names.
    """
    credentials = credentials_from_request(request)
    headers = _header_identity(request)
    tape = headers.tape or (credentials.tape if credentials else None)
    branch = headers.branch or (credentials.branch if credentials else None)
    capability = headers.capability or (credentials.capability if credentials else None)
    if credentials is None and not tape and not branch and not capability:
        return None
    return Credentials(tape=tape, branch=branch, capability=capability)


def identify(
    request: http.Request,
    *,
    remembered: Credentials | None,
    default_tape: str | None,
    default_branch: str | None,
    default_capability: str | None = None,
) -> tuple[Identity | None, str | None]:
    """The request's identity, or the name of what is missing ("tape", "branch").

    Each part is taken from the first source that names it: headers, then credentials on this
    request, then credentials remembered from the tunnel's CONNECT, then the defaults.
    """
    sources = [_header_identity(request), credentials_from_request(request), remembered]
    tape = _first(s.tape for s in sources if s)
    branch = _first(s.branch for s in sources if s)
    capability = _first(s.capability for s in sources if s) or default_capability
    tape = tape or default_tape
    branch = branch or default_branch
    if not tape and not branch:
        return None, "tape or branch"
    if not tape:
        return None, "tape"
    if not branch:
        return None, "branch"
    return Identity(tape=tape, branch=branch, capability=capability), None


def _first(values) -> str | None:
    for value in values:
        if value:
            return value
    return None
