"""Carrying out a resolve's final step: the one place the decision path writes.

Once `decision.decide_step` names a final step (serve, refuse, inject, pass, forward, wait), the
Resolver (resolver/resolution.py) hands it here with the facts and lookups that led to it.
`FinalSteps.carry_out` writes the step's event, releases or keeps the claim, writes a forward's
request body and pending record, moves a replayed write's branch on, and builds the
`Resolution` or `Waiting` the proxy is told. Every forward first checks the store's disk reserve,
so a live answer always has room to be recorded, and now and then sweeps pending records whose
proxy never called `/v1/record`. Kept apart from the Resolver's transaction flow so that flow
reads as decide-and-look-up; without one place for these writes a step could be recorded
differently depending on which path (resolve or poll) reached it.
"""

from __future__ import annotations

import itertools
import json
import time

from sqlalchemy.orm import Session

from engine import injection
from engine.asks import Ask, cooperative_headers
from engine.cache import Recorded
from engine.decision import ClaimState, Facts, Plan, Step
from engine.dependencies import recorded_writes
from engine.facts import holder_of
from engine.fingerprint import unknown_version
from engine.policy import Action, Decision
from engine.resolve_results import Resolution, Waiting
from engine.session_labels import names_marked_session, opened_label, session_hash
from groundhog.protocol.sandbox import minted_session
from groundhog.protocol.wire import WireResponse
from resolver import answers, misses
from resolver.ask_store import bump_branch
from resolver.disk import DiskReserve
from resolver.echoes import EchoBook
from resolver.resolve_tx.units import Unit
from store import claims, counters, exchanges, sandbox_sessions, versions

# Forwards whose proxy never called /v1/record are forgotten after this long (or 10 claim lengths).
STALE_PENDING_SECONDS = 3600.0
STALE_SWEEP_EVERY = 256


class FinalSteps:
    """The final steps of one Resolver: its claim length, echo book and disk reserve."""

    def __init__(
        self,
        *,
        claim_seconds: float,
        echoes: EchoBook,
        reserve: DiskReserve | None,
        redaction_key: bytes,
    ) -> None:
        self.claim_seconds = claim_seconds
        self.redaction_key = redaction_key
        self.echoes = echoes
        self.reserve = reserve
        self._forwards = itertools.count(1)

    def carry_out(
        self,
        unit: Unit,
        ask: Ask,
        plan: Plan,
        facts: Facts,
        found: Recorded | None,
        ticket: str | None,
        claim: claims.HeldClaim | None,
        *,
        taken: bool,
    ) -> Resolution | Waiting:
        """The one place a final step writes: its event, and its claim or pending record.

        `taken`: this transaction has counted the ask's occurrence (a resolve's opening
        statement; a poll's has not). It stands only if the ask is answered now; an ask that
        leaves without its answer (told to wait, or a read sent live, answered at its record)
        gives it back (store/counters.py)."""
        assert plan.decision is not None
        # Answered by its record or its wait (a read sent live, told to wait), or not answered
        # by the world at all (a failure): the occurrence is not this ask's to keep.
        keeps = not (
            plan.step in (Step.WAIT, Step.FAIL)
            or (plan.step is Step.FORWARD and not ask.classification.is_write)
        )
        if taken and not keeps:
            counters.give_back_occurrence_later(ask.branch_id, ask.key.hash, unit=unit)
        elif keeps and not taken:
            counters.advance_occurrence_later(
                ask.branch_id, ask.key.hash, ask.occurrence, attempt=ask.attempt, unit=unit
            )
        if plan.step is Step.WAIT:
            assert claim is not None
            return Waiting(ask, plan.decision, claim.claim_expires, holder_of(claim))
        if plan.step is Step.FAIL:  # the attempt it waited on failed: the same problem
            assert claim is not None and claim.failure is not None
            write_event_later(unit, ask, Decision.UPSTREAM_FAILED, None)
            response = shared_failure(ask, claim.failure)
            return Resolution(Action.SERVE, Decision.UPSTREAM_FAILED, ask, response=response)
        if plan.step is Step.SERVE:
            assert found is not None
            if facts.claim is ClaimState.OURS and ticket is not None:
                claims.release_claim_later(ticket, unit=unit)
            write_event_later(unit, ask, plan.decision, found.exchange_id)
            if ask.classification.is_write:  # a replayed write moves the branch on as live
                bump_versions(unit.session, ask, found.response_headers)
                self._remember_minted_session(unit, ask, found.response_headers)
            return Resolution(
                Action.SERVE,
                plan.decision,
                ask,
                response=found.response,
                response_json=found.response_json,
                exchange_id=found.exchange_id,
            )
        if plan.step is Step.REFUSE:
            write_event_later(unit, ask, Decision.REFUSED, None)
            response = misses.sealed_miss(unit.session, ask)  # near-miss explanations
            return Resolution(Action.SERVE, Decision.REFUSED, ask, response=response)
        if plan.step is Step.INJECT:
            fault = injection.replacing_fault(ask)
            assert fault is not None
            write_event_later(unit, ask, Decision.INJECTED, None)
            response = injection.injected(ask, fault)
            return Resolution(Action.SERVE, Decision.INJECTED, ask, response=response)
        if plan.step is Step.PASS:
            write_event_later(unit, ask, Decision.PASSTHROUGH, None)
            headers = cooperative_headers(ask)
            return Resolution(Action.FORWARD, Decision.PASSTHROUGH, ask, None, None, headers)
        assert plan.step is Step.FORWARD
        return self._forward(unit, ask, plan.decision, ticket or claims.new_ticket())

    def _remember_minted_session(self, unit: Unit, ask: Ask, headers: list[list[str]]) -> None:
        """A replayed write that hands out a session to an asker holding none (a sealed
        `initialize`): the proxy gives it the id minted for this ask, which this ask opened
        (engine/session_labels.py), as the world's id was at the recording."""
        if ask.session_hash is not None or not names_marked_session(headers):
            return
        minted = minted_session(ask.tape_name, ask.branch, ask.occurrence)
        sandbox_sessions.remember_session_later(
            ask.branch_id,
            session_hash(minted, self.redaction_key),
            opened_label(ask.key.hash, ask.occurrence),
            unit=unit,
        )

    def _forward(self, unit: Unit, ask: Ask, decision: Decision, ticket: str) -> Resolution:
        """A live call handed out: its event, request body and pending record."""
        if self.reserve is not None:
            self.reserve.check()  # raises before anything is written: the ask is not taken
        if next(self._forwards) % STALE_SWEEP_EVERY == 0:
            horizon = max(STALE_PENDING_SECONDS, 10 * self.claim_seconds)
            claims.delete_stale_pending(time.time() - horizon, session=unit.session)
        self.echoes.remember(ticket, ask.secrets)
        # Nothing reads any of them back in this transaction: they ride with the commit.
        if ask.classification.is_write:
            write_intent_later(unit, ask)
        exchanges.put_blob_later(ask.request.body, unit=unit)
        claims.add_pending_with_event_later(
            unit=unit,
            event=_event_fields(ask, decision, None),
            ticket=ticket,
            tape_id=ask.tape_id,
            branch_id=ask.branch_id,
            key_hash=ask.key.hash,
            occurrence=ask.occurrence,
            fingerprint=ask.fingerprint,
            decision=str(decision),
            is_write=ask.classification.is_write,
            request=pending_request(ask),
            created=time.time(),
        )
        return Resolution(Action.FORWARD, decision, ask, ticket, None, cooperative_headers(ask))


def write_intent_later(unit: Unit, ask: Ask) -> None:
    """Write-ahead: before a write goes live, what it may touch (its classification's writes,
    per the tape's dependency model) is unknown in its branch, durably, in the transaction
    that hands it out. Until its record lands every read of those resources is refetched at a
    fingerprint nobody else shares, never served the base: a write whose record never lands
    (a resolver killed while it was in flight) cannot leave its branch reading the world as it
    was before the write. One statement, with the commit."""
    intent = {
        resource: unknown_version(ask.branch_id, ask.key.hash, ask.occurrence, resource)
        for resource in ask.classification.writes
    }
    versions.set_versions_later(ask.branch_id, intent, unit=unit)


def shared_failure(ask: Ask, failure: str) -> WireResponse:
    """The `upstream-failed` problem the failed holder was served, for one of its waiters."""
    kind_and_message = json.loads(failure)
    return answers.upstream_failed(
        tape_name=ask.tape_name,
        key_readable=ask.key.readable,
        occurrence=ask.occurrence,
        fingerprint=ask.fingerprint,
        kind=kind_and_message["kind"],
        message=kind_and_message["message"],
    )


def pending_request(ask: Ask) -> dict[str, object]:
    """What a forward's pending record keeps of its request, for the exchange its record makes
    (resolver/stored_form.py reads it back) and for a recorded write's version bumps."""
    return {
        "key_readable": ask.key.readable,
        "method": ask.request.method,
        "host": ask.request.normalised_host,
        "url": ask.request.url(),
        "headers": [list(pair) for pair in ask.request.headers],
        "body_sha": ask.body_sha,
        "writes": sorted(ask.classification.writes),
        # A write's versions before its intent: its record chains from these.
        "before": dict(ask.versions),
        # Its record names the attempt on the occurrence it advances (store/counters.py).
        "attempt": ask.attempt,
        # A write outside a session whose answer hands one out opened it (session_labels).
        "in_session": ask.session_hash is not None,
    }


def write_event_later(unit: Unit, ask: Ask, decision: Decision, exchange_id: int | None) -> None:
    """The ask's event on its branch, with the decision it was given. Nothing reads its id
    (a forward's goes to its pending record inside the server: `_forward`), so on PostgreSQL
    it rides with the unit's commit, one round trip fewer per served ask."""
    exchanges.add_next_event_later(unit, **_event_fields(ask, decision, exchange_id))


def _event_fields(ask: Ask, decision: Decision, exchange_id: int | None) -> dict[str, object]:
    return {
        "branch_id": ask.branch_id,
        "method": ask.request.method,
        "url": ask.request.url(),
        "key_hash": ask.key.hash,
        "occurrence": ask.occurrence,
        "fingerprint": ask.fingerprint,
        "decision": str(decision),
        "is_read": not ask.classification.is_write,
        "true_fingerprint_nonempty": ask.true_fingerprint != "",
        "exchange_id": exchange_id,
    }


def bump_versions(session: Session, ask: Ask, response_headers: list[list[str]]) -> None:
    """A replayed write moves its branch's versions on, as the live write did."""
    written = recorded_writes(ask.request, ask.model, ask.classification, response_headers)
    bump_branch(session, ask.branch_id, written, ask.key.hash, ask.body_sha)
