"""Branch leases at the resolver: grant one with the branch's state, read ahead the recorded
answers it may ask next, take a holder's events,
fence other askers out, and settle leases before anyone reads a branch's state.

A sidecar proxy that holds a branch's lease answers the branch's recorded reads itself
(proxy/held_branches.py, deciding with engine/leased_hits.py) and ships their events here
behind. Everything else that reads or moves a branch — another proxy's ask, a fork, a seal, an
export, a report — must see those events first: a resolve for a branch leased to someone else is
refused with `branch-leased` (its holder is asked to release), and the admin routes call
`settle` first, which asks the holders back and waits until they have shipped and released or
their leases have expired. Without it a fork would copy counters that miss the hits a sidecar
served, and two proxies could serve one occurrence twice.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from engine import failpoints
from engine.refs import BranchRef, TapeRef
from groundhog.protocol.wire import (
    LeaseAheadAnswer,
    LeaseEventsAnswer,
    LeaseGrant,
    LeaseRenewAnswer,
)
from resolver import answers
from resolver.ask_store import load_tape_and_branch
from resolver.capabilities import BranchCapabilities, Capabilities, capability_digest
from resolver.errors import BranchLeased, Conflict, InvalidInput
from resolver.schemas import (
    LeaseAheadRequest,
    LeaseEventsRequest,
    LeaseRenewRequest,
    LeaseTakeRequest,
)
from store import branch_leases
from store.db import Store, transaction
from store.identity import store_token
from store.models import Branch, Tape

log = logging.getLogger(__name__)

# How often `settle` looks whether the holders it asked back have released.
SETTLE_POLL_SECONDS = 0.02
# A read-ahead hands over this many recorded answers the branch may ask next, small ones only.
READ_AHEAD_ANSWERS = 256
READ_AHEAD_BODY_BYTES = 16 * 1024
# A grant carries at most this many of the branch's counts (about 1.5 MB of JSON): a fork of a
# branch that asked a million keys would otherwise hand every take a million of them.
GRANT_COUNTS = 20_000


@dataclass(frozen=True)
class LeaseSettings:
    lease_seconds: float
    # The deployment's branch capabilities: a take is checked as a resolve is, and the grant
    # tells the holder what to compare each hit's capability with. None: nothing checked.
    capabilities: Capabilities | None = None


def fence_out(
    session: Callable[[], Session], branch: BranchRef, asker: str | None, *, now: float
) -> None:
    """Refuse an ask for a branch another proxy holds the lease of (the caller rolls back and
    asks the holder back: `ask_back`); void a lease that expired, so its holder's late events
    are refused once someone else has moved the branch on.

    `session` makes the transaction's Session: only a void needs one, and a resolve of an
    unleased branch (nearly every resolve) should not pay for making and closing it."""
    holder = branch.lease_holder
    if holder is None or holder == asker:
        return
    if branch.lease_expires >= now:
        raise BranchLeased(
            f"branch {branch.path!r} is leased to proxy {holder!r}, which has been asked to "
            "ship what it served and release; retry shortly",
            branch=branch.path,
            retry_after_seconds=max(0.0, round(branch.lease_expires - now, 3)),
        )
    branch_leases.void_expired(branch.id, holder, session=session())


def ask_back(
    store: Store, tape: str, branch: str, *, grace: float, notify: Callable[[], None]
) -> None:
    """Ask the holder of `tape`/`branch`'s lease to ship and release (after a refused ask)."""
    with transaction(store.write) as session:
        _, found = load_tape_and_branch(session, tape, branch)
        branch_leases.ask_back([found.id], now=time.time(), grace=grace, session=session)
    notify()


def _capability_digest(
    capabilities: Capabilities | None, tape: TapeRef, branch: BranchRef, presented: str | None
) -> str | None:
    """What the holder compares each hit's capability with: None where the tape requires none.
    A take that does not present the branch's capability where one is required is refused as
    a resolve would be (`CapabilityRefused`), before anything is granted."""
    if capabilities is None:
        return None
    tape_id, settings = tape.id, tape.settings
    capabilities.check(
        tape_id=tape_id, tape=tape.name, settings=settings, branch=branch.path, presented=presented
    )
    if capabilities.policy(settings) is BranchCapabilities.OPTIONAL:
        return None
    return capability_digest(capabilities.of(tape_id, branch.path))


def take(store: Store, body: LeaseTakeRequest, settings: LeaseSettings) -> LeaseGrant:
    """Grant the lease and hand the holder what it serves from: the tape as a resolve sees it
    and the branch's counters and versions (a refusal is `branch-leased`)."""
    now = time.time()
    with transaction(store.write) as session:
        tape, branch = load_tape_and_branch(session, body.tape, body.branch)
        digest = _capability_digest(settings.capabilities, tape, branch, body.capability)
        granted = branch_leases.grant(
            branch.id,
            body.holder,
            now=now,
            lease_seconds=settings.lease_seconds,
            session=session,
        )
        if isinstance(granted, branch_leases.Refused):
            refusal = granted
        else:
            counts, complete, versions = branch_leases.branch_state(
                branch.id, max_counts=GRANT_COUNTS, session=session
            )
            answer: LeaseGrant = {
                "epoch": granted.epoch,
                "expires": granted.expires,
                "shipped": granted.shipped,
                "lease_seconds": settings.lease_seconds,
                "store": store_token(session=session),
                "tape": {
                    "id": tape.id,
                    "name": tape.name,
                    "world_seed": tape.world_seed,
                    "mode": tape.mode,
                    "online": tape.online,
                    "dependency_model": tape.dependency_model,
                    "config": tape.config,
                },
                "branch": {"id": branch.id, "path": branch.path},
                "counts": counts,
                "counts_complete": complete,
                "versions": versions,
                "capability_digest": digest,
            }
    if not isinstance(granted, branch_leases.Refused):
        failpoints.reach("lease.take.committed")
        return answer
    raise BranchLeased(
        f"branch {body.branch!r} cannot be leased now: {refusal.reason}",
        branch=body.branch,
        retry_after_seconds=max(0.0, round(refusal.expires - now, 3)),
    )


def read_ahead(store: Store, body: LeaseAheadRequest) -> LeaseAheadAnswer:
    """The recorded answers `body.branch` may ask next, but those its holder keeps already.

    Asked by a holder once the resolver served one of the branch's reads from a sibling's
    recording (proxy/held_branches.py), not with every grant: most branches ask what their
    sidecar recorded or saw itself, and sending 256 answers with each take cost a take more
    resolver CPU than everything else it does. Read only: a recorded answer is immutable and
    the branch's counters only say where to start (a lagging one reads a little more)."""
    with transaction(store.read) as session:
        tape, branch = load_tape_and_branch(session, body.tape, body.branch)
        ahead = branch_leases.answers_ahead(
            tape.id,
            branch.id,
            limit=READ_AHEAD_ANSWERS,
            body_bytes=READ_AHEAD_BODY_BYTES,
            held=body.held,
            session=session,
        )
        return {
            "ahead": [
                {
                    "key": key,
                    "occurrence": occurrence,
                    "fingerprint": fingerprint,
                    "exchange_id": recorded.exchange_id,
                    "response": answers.from_answer(recorded),
                }
                for key, occurrence, fingerprint, recorded in ahead
            ]
        }


def ship(store: Store, body: LeaseEventsRequest) -> LeaseEventsAnswer:
    """Apply a holder's events (and release its lease if it asks); `409` if it lost it."""
    events = [event.model_dump() for event in body.events]
    for event in events:
        event.update(decision="shared", is_read=True)
    try:
        with transaction(store.write) as session:
            if not branch_leases.apply_events(
                body.branch_id, body.holder, body.epoch, events, session=session
            ):
                raise Conflict(
                    f"proxy {body.holder!r} no longer holds the lease of branch "
                    f"{body.branch_id} at epoch {body.epoch}: its {len(events)} events were not "
                    "applied",
                    branch_id=body.branch_id,
                )
            if body.release:
                branch_leases.release(body.branch_id, body.holder, body.epoch, session=session)
            failpoints.reach("lease.events.before_commit")
    except IntegrityError as error:
        ids = sorted({event["exchange_id"] for event in events})
        raise InvalidInput(
            f"the events name exchanges the store does not hold (one of {ids[:10]}): nothing "
            "was applied and the lease is as it was",
            field="events",
        ) from error
    failpoints.reach("lease.events.committed")
    return {"applied": len(events), "released": body.release}


def renew(store: Store, body: LeaseRenewRequest, settings: LeaseSettings) -> LeaseRenewAnswer:
    """Extend a holder's leases; name those asked back (ship and release) and those lost."""
    held = [(lease.branch_id, lease.epoch) for lease in body.leases]
    with transaction(store.write) as session:
        renewed, revoked, lost = branch_leases.renew(
            body.holder,
            held,
            now=time.time(),
            lease_seconds=settings.lease_seconds,
            release_unlisted=body.release_unlisted,
            session=session,
        )
    return {
        "lease_seconds": settings.lease_seconds,
        "renewed": renewed,
        "revoke": revoked,
        "lost": lost,
    }


def settle(
    store: Store,
    tape: str,
    branch: str | None = None,
    *,
    grace: float,
    notify: Callable[[], None],
) -> None:
    """Before a branch's state is read or copied: ask the holders of the tape's leases (or of
    `branch`'s alone) to ship and release, and wait until they have, or until their leases
    lapsed `grace` ago (a holder that lost the store for a while ships when it is back); those
    are then ended, and what their holders ship later is refused.

    Runs in the route's worker thread; a tape with no lease held costs one read. (It cost a
    write, which queued every report and fork behind the store's writers: a lease taken just
    after the read is no different from one taken just after that write.)"""
    with transaction(store.read) as session:
        held = branch_leases.any_held_on_tape(
            tape, branch, now=time.time(), grace=grace, session=session
        )
        if not held:
            return
        branch_ids = _branch_ids(session, tape, branch)
    with transaction(store.write) as session:
        deadline = branch_leases.ask_back(branch_ids, now=time.time(), grace=grace, session=session)
    if deadline == 0.0:
        return
    notify()
    while True:
        now = time.time()
        with transaction(store.read) as session:
            if not branch_leases.any_held(branch_ids, now=now, grace=grace, session=session):
                return
        if now > deadline:
            break
        time.sleep(SETTLE_POLL_SECONDS)
    log.warning("branch leases of tape %r not released in time: ended", tape)
    with transaction(store.write) as session:
        branch_leases.void_lapsed(branch_ids, before=time.time() - grace, session=session)


def _branch_ids(session: Session, tape: str, branch: str | None) -> list[int]:
    query = select(Branch.id).join(Tape, Tape.id == Branch.tape_id).where(Tape.name == tape)
    if branch is not None:
        query = query.where(Branch.path == branch)
    return list(session.scalars(query))  # none: the route's own lookup says what is missing
