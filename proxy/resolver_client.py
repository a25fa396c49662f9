"""The proxy's client for the resolver's internal protocol (`/v1/resolve`, `/v1/record`).

Every request through the proxy costs one resolve round trip, so this client is on the hot
path: it keeps one aiohttp session with a keep-alive connector (measured about 4x the
throughput of httpx.AsyncClient inside mitmproxy's loop), created lazily inside the running
event loop and closed when mitmproxy shuts down. It never blocks the loop. It turns transport
failures into `ResolverUnavailable` (the proxy answers 503 and forwards nothing) and relays
the resolver's own 4xx problem+json unchanged as `ResolverRejected`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from typing import Any

import aiohttp

log = logging.getLogger(__name__)


class ResolverUnavailable(Exception):
    """The resolver could not be reached, timed out, or failed with a 5xx."""


class ResolverProtocolError(Exception):
    """The resolver answered 2xx with a body that does not follow the protocol."""


@dataclass
class ResolverRejected(Exception):
    """The resolver refused the request (4xx); its answer goes to the worker unchanged."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def __str__(self) -> str:
        return f"resolver answered {self.status}: {self.body[:200]!r}"


class ResolverClient:
    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        resolve_timeout: float = 90.0,
        record_timeout: float = 30.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.resolve_timeout = resolve_timeout
        self.record_timeout = record_timeout
        # Built once: a hit should not pay for timeout objects and header lists it never uses.
        self._resolve_timeout = aiohttp.ClientTimeout(total=resolve_timeout)
        self._record_timeout = aiohttp.ClientTimeout(total=record_timeout)
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _ensure_session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._loop is not loop:
            headers = {"Content-Type": "application/json"}
            if self.token:
                headers["Authorization"] = f"Bearer {self.token}"
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=256, keepalive_timeout=60),
                headers=headers,
                trust_env=False,
                skip_auto_headers=("User-Agent",),
            )
            self._loop = loop
        return self._session

    async def resolve(self, payload: dict[str, Any]) -> dict[str, Any]:
        return await self._post("/v1/resolve", payload, self._resolve_timeout)

    async def record(self, payload: dict[str, Any]) -> dict[str, Any]:
        return await self._post("/v1/record", payload, self._record_timeout)

    async def tunnel(self, payload: dict[str, Any]) -> dict[str, Any]:
        """May a raw tunnel reach the world (`/v1/tunnel`)? No single flight: a short call."""
        return await self._post("/v1/tunnel", payload, self._record_timeout)

    async def _post(
        self, route: str, payload: dict[str, Any], timeout: aiohttp.ClientTimeout
    ) -> dict[str, Any]:
        session = self._ensure_session()
        url = self.base_url + route
        try:
            async with session.post(
                url,
                data=json.dumps(payload, separators=(",", ":")),
                timeout=timeout,
            ) as response:
                body = await response.read()
                status = response.status
                headers = list(response.headers.items()) if status >= 400 else []
        except (aiohttp.ClientError, TimeoutError, OSError) as error:
            raise ResolverUnavailable(f"{route}: {type(error).__name__}: {error}") from error
        if status >= 500:
            raise ResolverUnavailable(f"{route} answered {status}: {body[:300]!r}")
        if status >= 400:
            raise ResolverRejected(status=status, headers=headers, body=body)
        try:
            answer = json.loads(body)
        except ValueError as error:
            raise ResolverProtocolError(f"{route} answered non-JSON: {body[:200]!r}") from error
        if not isinstance(answer, dict):
            raise ResolverProtocolError(f"{route} answered {type(answer).__name__}, not an object")
        return answer

    async def close(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None
