"""The proxy's client for the resolver's internal protocol (`/v1/resolve`, `/v1/wait`,
`/v1/renew`, `/v1/record`; docs/internals.md).

Every request through the proxy costs one resolve round trip, so this client is on the hot
path: it posts over `proxy.resolver_http`'s pooled keep-alive connections (a lean HTTP/1.1
client: about half aiohttp's CPU per call, and far less than httpx inside mitmproxy's loop),
made inside the running event loop and closed when mitmproxy shuts down. It never blocks the
loop. It turns transport failures into `ResolverUnavailable` (the proxy answers 503 and
forwards nothing) and relays the resolver's own 4xx problem+json unchanged as
`ResolverRejected`.

A resolve has a short timeout of its own: the resolver answers at once (`wait` when another
asker is fetching the address), so a resolver that does not answer quickly is treated as down
and the worker gets a 503 without anything going upstream. Waiting on a live single-flight
holder is a separate, longer long-poll on `/v1/wait`, repeated up to an overall bound.

A resolver whose connection fails (refused, reset, closed before its answer: it died or is
restarting) is asked again, with the same attempt id (proxy/attempts.py), for up to
`resolve_retry` seconds, so a resolver restarted by its supervisor costs the worker a pause, not
a 503. A timeout or a 5xx is not retried: the resolver is there and slow or refusing, and a
retry would only make the worker wait longer for the same 503.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, cast

from groundhog.protocol.problems import TYPE_BASE
from groundhog.protocol.wire import (
    LeaseAheadAnswer,
    LeaseAheadAsk,
    LeaseEventsAnswer,
    LeaseEventsAsk,
    LeaseGrant,
    LeaseRenewAnswer,
    LeaseRenewAsk,
    LeaseTakeAsk,
    RecordAnswer,
    ResolveAnswer,
    ResolveAsk,
    TunnelAnswer,
)
from proxy.errors import ProxyError
from proxy.resolver_http import ResolverHttp

log = logging.getLogger(__name__)
# Idle connections to the resolver are closed by this side first: the resolver keeps them 75 s
# (resolver/__main__.py), so a resolve never races the server closing its socket.
CLIENT_KEEP_ALIVE_SECONDS = 30.0
# Pauses between asks of a resolver that is gone: doubling, from a restart's usual second.
RETRY_FIRST_PAUSE_SECONDS = 0.1
RETRY_LONGEST_PAUSE_SECONDS = 1.0


class ResolverUnavailable(ProxyError):
    """The resolver could not be reached, timed out, or failed with a 5xx."""


class ResolverGone(ResolverUnavailable):
    """The resolver's connection failed before its answer: it died or is restarting."""


class BranchLeasedElsewhere(ResolverGone):
    """Another sidecar holds the branch's lease and has been asked to release it: asked
    again within `resolve_retry`, as a restarting resolver is."""


class ResolverProtocolError(ProxyError):
    """The resolver answered 2xx with a body that does not follow the protocol."""


@dataclass
class ResolverRejected(ProxyError):
    """The resolver refused the request (4xx); its answer goes to the worker unchanged."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def __str__(self) -> str:
        return f"resolver answered {self.status}: {self.body[:200]!r}"


# The resolver's problem while another sidecar holds the branch's lease (resolver/errors.py).
BRANCH_LEASED = TYPE_BASE + "branch-leased"


def _problem_type(body: bytes) -> str | None:
    """The `type` of a problem+json body, or None for anything else."""
    try:
        document = json.loads(body)
    except ValueError:
        return None
    kind = document.get("type") if isinstance(document, dict) else None
    return kind if isinstance(kind, str) else None


async def asked_again[T](
    call: Callable[[], Awaitable[T]],
    patience: float,
    *,
    while_raising: type[ResolverUnavailable] = ResolverUnavailable,
) -> T:
    """`call()`, called again after pauses that double (up to a second) while it raises
    `while_raising` (a resolver restarting), for up to `patience` seconds; then its error."""
    loop = asyncio.get_running_loop()
    give_up = loop.time() + patience
    pause = RETRY_FIRST_PAUSE_SECONDS
    while True:
        try:
            return await call()
        except while_raising as gone:
            if loop.time() + pause > give_up:
                raise
            log.info("resolver gone (%s); asking again in %.2fs", gone, pause)
        await asyncio.sleep(pause)  # the resolver is restarting: give it the time
        pause = min(pause * 2, RETRY_LONGEST_PAUSE_SECONDS)


class ResolverClient:
    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        resolve_timeout: float = 5.0,
        record_timeout: float = 30.0,
        wait_timeout: float = 30.0,
        wait_limit: float = 180.0,
        resolve_retry: float = 3.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.resolve_timeout = resolve_timeout
        self.record_timeout = record_timeout
        self.wait_timeout = wait_timeout
        self.wait_limit = wait_limit
        self.resolve_retry = resolve_retry
        self._http: ResolverHttp | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _transport(self) -> ResolverHttp:
        """This event loop's connections (a new loop, e.g. a restarted test, gets new ones)."""
        loop = asyncio.get_running_loop()
        if self._http is None or self._loop is not loop:
            if self._http is not None:
                self._http.close()
            headers = {"Content-Type": "application/json"}
            if self.token:
                headers["Authorization"] = f"Bearer {self.token}"
            self._http = ResolverHttp(
                self.base_url, headers=headers, keep_alive_seconds=CLIENT_KEEP_ALIVE_SECONDS
            )
            self._loop = loop
        return self._http

    async def resolve(self, payload: ResolveAsk) -> ResolveAnswer:
        """The final answer (`serve` or `forward`), long-polling `/v1/wait` through any `wait`;
        asked again from the start while the resolver is gone, within `resolve_retry`."""
        return await asked_again(
            partial(self._resolve_once, payload), self.resolve_retry, while_raising=ResolverGone
        )

    async def _resolve_once(self, payload: ResolveAsk) -> ResolveAnswer:
        answer = await self._post("/v1/resolve", payload, self.resolve_timeout)
        deadline = asyncio.get_running_loop().time() + self.wait_limit
        while answer.get("action") == "wait":
            token = answer.get("wait")
            if not isinstance(token, str) or not token:
                raise ResolverProtocolError("/v1/resolve answered wait without a wait token")
            if asyncio.get_running_loop().time() > deadline:
                raise ResolverUnavailable(
                    f"waited over {self.wait_limit:.0f}s for another asker to record this "
                    "address; nothing was sent upstream"
                )
            answer = await self._post("/v1/wait", {"wait": token}, self.wait_timeout)
        return cast(ResolveAnswer, answer)

    async def renew(self, ticket: str) -> float | None:
        """Extend `ticket`'s single-flight claim: its length in seconds, or None if superseded."""
        try:
            answer = await self._post("/v1/renew", {"ticket": ticket}, self.resolve_timeout)
        except ResolverRejected as rejected:
            if rejected.status == 409:
                return None
            raise
        seconds = answer.get("claim_seconds")
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds <= 0:
            raise ResolverProtocolError(f"/v1/renew answered no usable claim_seconds: {seconds!r}")
        return float(seconds)

    async def record(self, payload: dict[str, Any]) -> RecordAnswer:
        return cast(RecordAnswer, await self._post("/v1/record", payload, self.record_timeout))

    # The branch-lease answers are cast, not checked, as every answer here is: their reader
    # (proxy/held_branches.py) takes what it needs and treats a missing or odd field as a
    # resolver that does not follow the protocol.
    async def take_lease(self, payload: LeaseTakeAsk) -> LeaseGrant:
        """`/v1/leases/take`: the branch's lease and its state (proxy/held_branches.py).

        A worker's first ask of a branch waits on it, as on a resolve: a frozen resolver must
        cost it `resolve_timeout`, not a record's (the counts granted are bounded, GRANT_COUNTS)."""
        answer = await self._post("/v1/leases/take", payload, self.resolve_timeout)
        return cast(LeaseGrant, answer)

    async def read_ahead(self, payload: LeaseAheadAsk) -> LeaseAheadAnswer:
        """`/v1/leases/ahead`: recorded answers a leased branch may ask next."""
        answer = await self._post("/v1/leases/ahead", payload, self.record_timeout)
        return cast(LeaseAheadAnswer, answer)

    async def ship_lease_events(self, payload: LeaseEventsAsk) -> LeaseEventsAnswer:
        """`/v1/leases/events`: the hits a lease holder served (`409`: the lease is lost)."""
        answer = await self._post("/v1/leases/events", payload, self.record_timeout)
        return cast(LeaseEventsAnswer, answer)

    async def renew_leases(self, payload: LeaseRenewAsk, hold: float) -> LeaseRenewAnswer:
        """`/v1/leases/renew`, a long poll the resolver holds up to `hold` seconds."""
        answer = await self._post("/v1/leases/renew", payload, hold + self.resolve_timeout)
        return cast(LeaseRenewAnswer, answer)

    async def tunnel(self, payload: dict[str, Any]) -> TunnelAnswer:
        """May a raw tunnel reach the world (`/v1/tunnel`)? No single flight: a short call."""
        return cast(TunnelAnswer, await self._post("/v1/tunnel", payload, self.record_timeout))

    async def _post(self, route: str, payload: Mapping[str, Any], timeout: float) -> dict[str, Any]:
        body = json.dumps(payload, separators=(",", ":")).encode()
        try:
            answer = await self._transport().post(route, body, timeout=timeout)
        except TimeoutError as error:
            raise ResolverUnavailable(
                f"{route}: TimeoutError: no answer within {timeout:g}s"
            ) from error
        except OSError as error:
            raise ResolverGone(f"{route}: {type(error).__name__}: {error}") from error
        status = answer.status
        if status == 503 and _problem_type(answer.body) == BRANCH_LEASED:
            raise BranchLeasedElsewhere(f"{route}: {answer.body[:300]!r}")
        if status >= 500:
            raise ResolverUnavailable(f"{route} answered {status}: {answer.body[:300]!r}")
        if status >= 400:
            raise ResolverRejected(status=status, headers=answer.headers, body=answer.body)
        try:
            decoded = json.loads(answer.body)
        except ValueError as error:
            raise ResolverProtocolError(
                f"{route} answered non-JSON: {answer.body[:200]!r}"
            ) from error
        if not isinstance(decoded, dict):
            raise ResolverProtocolError(f"{route} answered {type(decoded).__name__}, not an object")
        return decoded

    async def close(self) -> None:
        if self._http is not None:
            self._http.close()
        self._http = None
