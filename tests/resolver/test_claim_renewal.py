"""Unit tests of resolver/claim_renewal.py: when `renew` extends a ticket's claim and when it
says the ticket is superseded.

The route (`/v1/renew`) and the slow-fetch figures exercise renewal end to end; these call
`renew` on an in-process store so each of its answers is pinned to the state that causes it:
a held claim, a write that holds none, a claim taken over, an address recorded by someone
else, a failed claim, and a ticket that was never issued or is already recorded.
"""

from __future__ import annotations

import base64
import time

import pytest
from sqlalchemy import select, update

from engine.policy import Action, Decision
from engine.resolve_request import ResolveRequest
from engine.resolve_results import Resolution
from resolver.claim_renewal import renew
from resolver.recording import Recorder
from resolver.resolution import Resolver
from resolver.schemas import RecordRequest, ResponseIn
from store.db import Store, transaction
from store.models import Claim, PendingRecord
from tests.resolver.test_hit_path import ask

CLAIM = 30.0
RENEWED = 7.5


@pytest.fixture
def resolver(store: Store) -> Resolver:
    return Resolver(store, max_body_bytes=1024, claim_seconds=CLAIM)


def forward(resolver: Resolver, wire: ResolveRequest) -> str:
    """The ticket of the forward `wire` is handed (it must be one)."""
    result = resolver.resolve(wire)
    assert isinstance(result, Resolution) and result.action is Action.FORWARD, result
    assert result.ticket is not None
    return result.ticket


def claims_by_ticket(store: Store) -> dict[str, float]:
    with transaction(store.read) as session:
        return {claim.ticket: claim.claim_expires for claim in session.scalars(select(Claim))}


def record(store: Store, ticket: str) -> None:
    body = base64.b64encode(b"answer").decode()
    Recorder(store, max_body_bytes=1024).record(
        RecordRequest(ticket=ticket, response=ResponseIn(status=200, headers=[], body=body))
    )


def lapse_every_claim(store: Store) -> None:
    with transaction(store.write) as session:
        session.execute(update(Claim).values(claim_expires=0.0))


def test_a_claim_holder_renews_its_claim_from_now(store: Store, resolver: Resolver) -> None:
    ticket = forward(resolver, ask("/x", "root/a"))
    assert claims_by_ticket(store)[ticket] > time.time() + RENEWED  # the first claim: CLAIM

    before = time.time()
    assert renew(store, ticket, RENEWED) == RENEWED
    after = time.time()

    # The claim is set from now, not added to the old one (it shrank from CLAIM to RENEWED).
    assert before + RENEWED <= claims_by_ticket(store)[ticket] <= after + RENEWED


def test_a_write_renews_without_a_claim_while_its_pending_record_lasts(
    store: Store, resolver: Resolver
) -> None:
    write = ResolveRequest(
        tape="t", branch="root/a", method="POST", scheme="http", host="w.example", port=80,
        path="/docs", query=[],
    )  # fmt: skip
    result = resolver.resolve(write)
    assert isinstance(result, Resolution) and result.decision is Decision.WRITE
    assert result.ticket is not None
    assert claims_by_ticket(store) == {}  # nobody can take a write over

    assert renew(store, result.ticket, RENEWED) == RENEWED
    assert claims_by_ticket(store) == {}  # renewing took no claim either

    record(store, result.ticket)
    assert renew(store, result.ticket, RENEWED) is None  # recorded: nothing left to renew


def test_a_ticket_never_issued_is_superseded(store: Store, resolver: Resolver) -> None:
    forward(resolver, ask("/x", "root/a"))  # a live claim under another ticket
    held = claims_by_ticket(store)
    assert renew(store, "no-such-ticket", RENEWED) is None
    assert claims_by_ticket(store) == held


def test_a_holder_taken_over_then_recorded_over_stays_superseded(
    store: Store, resolver: Resolver
) -> None:
    first = forward(resolver, ask("/x", "root/a"))
    lapse_every_claim(store)  # the first holder stalled past its claim
    second = forward(resolver, ask("/x", "root/b"))  # the same address: a takeover
    assert second != first and set(claims_by_ticket(store)) == {second}
    second_claim = claims_by_ticket(store)[second]

    # Taken over: the first ticket's pending record is still there, but the claim is not its.
    with transaction(store.read) as session:
        assert session.get(PendingRecord, first) is not None
    assert renew(store, first, RENEWED) is None
    assert claims_by_ticket(store) == {second: second_claim}  # the taker's claim is untouched

    # Recorded by the taker: no claim on the address any more, and still not the first's turn.
    record(store, second)
    assert claims_by_ticket(store) == {}
    with transaction(store.read) as session:
        assert session.get(PendingRecord, first) is not None
    assert renew(store, first, RENEWED) is None


def test_a_read_whose_claim_went_away_renews_until_the_address_is_recorded(
    store: Store, resolver: Resolver
) -> None:
    """No claim, no recording: nobody else can hold the address, so the fetch goes on."""
    first = forward(resolver, ask("/x", "root/a"))
    lapse_every_claim(store)
    second = forward(resolver, ask("/x", "root/b"))
    with transaction(store.write) as session:  # the taker's claim is released, unrecorded
        session.execute(Claim.__table__.delete())
    assert renew(store, first, RENEWED) == RENEWED
    assert renew(store, second, RENEWED) == RENEWED
    assert claims_by_ticket(store) == {}  # renewal does not claim the address back

    record(store, second)
    assert renew(store, first, RENEWED) is None


def test_a_failed_claim_is_not_revived_by_its_holder(store: Store, resolver: Resolver) -> None:
    ticket = forward(resolver, ask("/x", "root/a"))
    with transaction(store.write) as session:
        session.execute(update(Claim).values(failure='{"kind": "connect", "message": "x"}'))
    expires = claims_by_ticket(store)[ticket]
    assert renew(store, ticket, RENEWED) is None
    assert claims_by_ticket(store) == {ticket: expires}
