"""One request through the proxy, as a worker makes it, with what the checks need kept.

The fault and hostile-input scenarios send a few precise requests rather than load; each needs
the status, the decision header and the exact body bytes the worker got, or the transport
error if the proxy was gone.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import httpx

from groundhog.protocol import headers as protocol_headers


@dataclass
class Answer:
    status: int | None
    decision: str | None = None
    content_type: str = ""
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)
    error: str | None = None

    @property
    def body_sha(self) -> str:
        return hashlib.sha256(self.body).hexdigest()

    @property
    def is_problem(self) -> bool:
        return self.content_type.startswith("application/problem+json")


def through_proxy(
    proxy_url: str,
    url: str,
    *,
    tape: str,
    branch: str,
    method: str = "GET",
    content: bytes | None = None,
    headers: dict[str, str] | list[tuple[str, str]] | None = None,
    timeout: float = 60.0,
) -> Answer:
    """Send one request through the proxy; transport failures come back as `error`."""
    extra = list(headers.items()) if isinstance(headers, dict) else list(headers or [])
    sent = [(protocol_headers.TAPE, tape), (protocol_headers.BRANCH, branch), *extra]
    try:
        with httpx.Client(proxy=proxy_url, timeout=timeout, trust_env=False) as client:
            response = client.request(method, url, content=content, headers=sent)
    except httpx.HTTPError as error:
        return Answer(None, error=f"{type(error).__name__}: {error}")
    return Answer(
        status=response.status_code,
        decision=response.headers.get(protocol_headers.DECISION),
        content_type=response.headers.get("Content-Type", ""),
        body=response.content,
        headers=list(response.headers.multi_items()),
    )


def direct(method: str, url: str, **kwargs: object) -> Answer:
    """A request straight to a server (the resolver), no proxy."""
    try:
        response = httpx.request(method, url, timeout=60, trust_env=False, **kwargs)  # type: ignore[arg-type]
    except httpx.HTTPError as error:
        return Answer(None, error=f"{type(error).__name__}: {error}")
    return Answer(
        status=response.status_code,
        content_type=response.headers.get("Content-Type", ""),
        body=response.content,
        headers=list(response.headers.multi_items()),
    )
