"""`/v1/leases/*`: a sidecar proxy takes a branch's lease, reads ahead, ships the hits it served,
renews.

The proxy's side is proxy/held_branches.py; the rules are resolver/lease_service.py and
store/branch_leases.py. `renew` is a long poll: held up to a third of the lease, it answers at
once when one of the holder's branches is asked back in this process (a fork, a seal, another
proxy's ask; another replica's is seen at the holder's next poll, which follows at once), so
a holder ships and releases within a round trip instead of at its next renewal. Without these
routes a proxy could not answer any hit itself.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Depends, Request, Response
from starlette.concurrency import run_in_threadpool

from engine.cache import dumps_compact
from groundhog.protocol.wire import (
    LeaseAheadAnswer,
    LeaseEventsAnswer,
    LeaseGrant,
    LeaseRenewAnswer,
)
from resolver import lease_service
from resolver.auth import require_proxy
from resolver.errors import BranchLeased
from resolver.hot_protocol import json_response
from resolver.schemas import (
    LeaseAheadRequest,
    LeaseEventsRequest,
    LeaseRenewRequest,
    LeaseTakeRequest,
)

router = APIRouter(prefix="/v1/leases", tags=["internal"], dependencies=[Depends(require_proxy)])


class Revocations:
    """Wakes held renewals when a lease is asked back in this process (other replicas' asks
    are seen at the renewal's end, a third of a lease later at most)."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._changed: asyncio.Event | None = None

    def _event(self) -> asyncio.Event:
        if self._changed is None:
            self._loop = asyncio.get_running_loop()
            self._changed = asyncio.Event()
        return self._changed

    def notify(self) -> None:
        """Safe from any thread (the admin routes run in worker threads)."""
        loop, changed = self._loop, self._changed
        if loop is None or changed is None:
            return
        loop.call_soon_threadsafe(changed.set)

    async def wait(self, timeout: float) -> bool:
        """Whether a lease was asked back in this process within `timeout` seconds."""
        changed = self._event()
        try:
            await asyncio.wait_for(changed.wait(), timeout)
        except TimeoutError:
            return False
        changed.clear()
        return True


def settle_before(request: Request, tape: str, branch: str | None = None) -> None:
    """For an admin route about to read or copy a branch's state (in its worker thread): the
    tape's (or `branch`'s) lease holders ship what they served and release first."""
    state = request.app.state
    grace = state.settings.lease_grace_seconds
    lease_service.settle(state.store, tape, branch, grace=grace, notify=state.revocations.notify)


def _settings(request: Request) -> lease_service.LeaseSettings:
    state = request.app.state
    return lease_service.LeaseSettings(
        state.settings.branch_lease_seconds, capabilities=state.resolver.capabilities
    )


def _wire_json(
    answer: LeaseGrant | LeaseAheadAnswer | LeaseEventsAnswer | LeaseRenewAnswer,
) -> Response:
    """A wire TypedDict as built, encoded once. Returned as a dict, FastAPI would first walk it
    with `jsonable_encoder`: for a read-ahead of 256 answers that walk cost more resolver CPU
    than reading them."""
    return json_response(dumps_compact(answer))


# The answers are the wire TypedDicts (groundhog/protocol/wire.py), sent as built: no second
# validation of what resolver/lease_service.py typed already.
@router.post("/take", response_model=None)
async def take(body: LeaseTakeRequest, request: Request) -> Response:
    """Grant the branch's lease to `holder`, with the branch's counters and versions."""
    state = request.app.state
    state.metrics.lease_calls.labels(call="take").inc()
    try:
        grant = await run_in_threadpool(lease_service.take, state.store, body, _settings(request))
    except BranchLeased:
        # The refusal asked the holder back: its held poll answers now. A granted take wakes
        # no one (waking every holder's poll would make each take cost every sidecar a
        # renewal).
        state.revocations.notify()
        raise
    return _wire_json(grant)


@router.post("/ahead", response_model=None)
async def ahead(body: LeaseAheadRequest, request: Request) -> Response:
    """The recorded answers the branch may ask next, but those the holder names as kept."""
    request.app.state.metrics.lease_calls.labels(call="ahead").inc()
    return _wire_json(
        await run_in_threadpool(lease_service.read_ahead, request.app.state.store, body)
    )


@router.post("/events", response_model=None)
async def events(body: LeaseEventsRequest, request: Request) -> Response:
    """Apply the hits a holder served, in order; `release` ends its lease after them."""
    request.app.state.metrics.lease_calls.labels(call="events").inc()
    return _wire_json(await run_in_threadpool(lease_service.ship, request.app.state.store, body))


@router.post("/renew", response_model=None)
async def renew(body: LeaseRenewRequest, request: Request) -> Response:
    """Extend the holder's leases; held until one is asked back or a third of a lease passed."""
    state, settings = request.app.state, _settings(request)
    state.metrics.lease_calls.labels(call="renew").inc()
    answer = await run_in_threadpool(lease_service.renew, state.store, body, settings)
    if answer["revoke"] or answer["lost"] or not body.leases:
        return _wire_json(answer)
    if not await state.revocations.wait(settings.lease_seconds / 3):
        # Nothing asked back here; another replica's ask is seen by the holder's next poll,
        # at once, which renews anyway: a second renewal now would only double the cost.
        return _wire_json(answer)
    return _wire_json(await run_in_threadpool(lease_service.renew, state.store, body, settings))
