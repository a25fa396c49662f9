"""Work out which tape and branch a request belongs to.

Every exchange is addressed by tape and branch; a request filed under the wrong branch would
share noise it should not, or miss a write it made. Workers name them in three ways, in order
of precedence: `X-Groundhog-Tape`/`X-Groundhog-Branch` headers, proxy credentials
`TAPE:BRANCH[:CAPABILITY]` (Proxy-Authorization, remembered per client connection because HTTPS
requests inside a CONNECT tunnel no longer carry it), then the proxy's configured defaults.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from urllib.parse import unquote

from mitmproxy import http

from groundhog.protocol.headers import BRANCH as HEADER_BRANCH
from groundhog.protocol.headers import TAPE as HEADER_TAPE
from proxy.capabilities import header_capability, split_branch_password
from proxy.errors import ProxyError


class CredentialsError(ProxyError, ValueError):
    """Proxy-Authorization is present but is not Basic TAPE:BRANCH."""


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


def parse_proxy_authorization(value: str | None) -> Credentials | None:
    """Decode `Basic base64(TAPE:BRANCH[:CAPABILITY])`; the branch may come URL-encoded or not."""
    if not value:
        return None
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "basic" or not token.strip():
        raise CredentialsError(f"Proxy-Authorization scheme {scheme!r} is not Basic")
    try:
        decoded = base64.b64decode(token.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError) as error:
        raise CredentialsError("Proxy-Authorization is not valid base64 of UTF-8 text") from error
    tape, separator, password = decoded.partition(":")
    if not separator:
        raise CredentialsError("Proxy-Authorization has no ':' between tape and branch")
    branch, capability = split_branch_password(password)
    return Credentials(tape=unquote(tape) or None, branch=branch, capability=capability)


def credentials_from_request(request: http.Request) -> Credentials | None:
    return parse_proxy_authorization(request.headers.get("Proxy-Authorization"))


def connect_credentials(request: http.Request) -> Credentials | None:
    """What a CONNECT names for its tunnel: headers on the CONNECT win over its credentials.

    Some clients put headers on the CONNECT itself (requests' proxy_headers). None when it
    names nothing; raises `CredentialsError` for malformed credentials.
    """
    credentials = credentials_from_request(request)
    tape = request.headers.get(HEADER_TAPE) or (credentials.tape if credentials else None)
    branch = request.headers.get(HEADER_BRANCH) or (credentials.branch if credentials else None)
    capability = header_capability(request) or (credentials.capability if credentials else None)
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
    own = credentials_from_request(request)
    sources = [own, remembered]
    tape = request.headers.get(HEADER_TAPE) or _first(s.tape for s in sources if s)
    branch = request.headers.get(HEADER_BRANCH) or _first(s.branch for s in sources if s)
    capability = header_capability(request) or _first(s.capability for s in sources if s)
    tape = tape or default_tape
    branch = branch or default_branch
    if not tape and not branch:
        return None, "tape or branch"
    if not tape:
        return None, "tape"
    if not branch:
        return None, "branch"
    capability = capability or default_capability
    return Identity(tape=tape, branch=unquote(branch), capability=capability), None


def _first(values) -> str | None:
    for value in values:
        if value:
            return value
    return None
