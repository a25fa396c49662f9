"""The resolve path: one short transaction that takes the ask, settles it through the one
decision path (resolver/decision.py) and carries out the final step: serve from tape, hand out a
ticket to go live, or say "wait, someone is fetching".

This is the edge where the pure modules (keys, redaction, dependencies, fingerprint, policy,
decision) meet the store. Without it the proxy would have nobody to ask. Waiting itself (single
flight) is driven by the async `/v1/wait` route, which calls `poll` when woken (the address was
recorded) or when the holder's lease lapses; a holder keeps its lease (resolver/leases.py) while
it fetches. A poll settles through the same decision path, from the facts it has looked up.

`_settle` is the loop: it asks `decide_step` for the next step, performs the lookups it asks for
(`_find`, the locked online flag, a claim attempt) and hands the final step to `_carry_out`, the
one place that writes events, pending records and claims. A plain hit is that loop with one
lookup. Every forward re-reads the tape's online flag under a share lock in the transaction that
hands it out, so once a seal commits no new live call starts; and every forward first checks the
store's disk reserve, so a live answer always has room to be recorded.
"""

from __future__ import annotations

import itertools
import secrets
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace

from sqlalchemy.orm import Session

from resolver import answers, injection, misses
from resolver.asks import (
    Ask,
    bump_branch,
    cooperative_headers,
    load_tape_and_branch,
    take_ask,
    take_ask_as_guessed,
)
from resolver.cache import AnswerCache, Recorded
from resolver.decision import ClaimState, Facts, Plan, Step, decide_step
from resolver.dependencies import recorded_writes
from resolver.disk import DiskReserve
from resolver.echoes import EchoBook
from resolver.errors import BodyTooLarge
from resolver.policy import Action, Decision
from resolver.schemas import ResolveRequest, decode_base64
from resolver.simulation import is_simulated
from resolver.simulator_client import SimulatorClient
from store import claims, exchanges
from store.db import Store, relax_commit_durability
from store.loop_writes import LoopWriter, WouldWait
from store.models import Claim
from store.prepared import Executor
from store.refs import TapeRef
from store.unit import Unit, unit_of_work

# Forwards whose proxy never called /v1/record are forgotten after this long (or 10 leases).
STALE_PENDING_SECONDS = 3600.0
STALE_SWEEP_EVERY = 256
# Tapes whose config is kept as a guess (a few per deployment; more only clears the guesses).
TAPES_REMEMBERED = 1024


def facts_of(ask: Ask, *, passthrough: bool = False) -> Facts:
    """What the ask itself tells the decision, before any lookup."""
    return Facts(
        is_write=ask.classification.is_write,
        mode=ask.mode,
        online=ask.online,
        true_fingerprint=ask.true_fingerprint,
        branch=ask.branch,
        passthrough=passthrough,
        fault=injection.replacing_fault(ask) is not None,
        simulator=bool(ask.simulator_url),
        simulate_writes=ask.simulate_writes,
    )


def _wants_simulator(result: Resolution | Waiting) -> bool:
    """A claimed `simulated` ask: its answer comes from the tape's simulator."""
    return (
        isinstance(result, Resolution)
        and result.decision is Decision.SIMULATED
        and result.action is Action.FORWARD
        and result.ticket is not None
    )


def claim_state(claim: Claim | None, now: float) -> ClaimState:
    if claim is None:
        return ClaimState.FREE
    return ClaimState.HELD if claim.lease_expires >= now else ClaimState.EXPIRED


@dataclass
class Resolution:
    """What `/v1/resolve` answers (see docs/internals.md)."""

    action: Action
    decision: Decision
    ask: Ask
    ticket: str | None = None
    response: dict[str, object] | None = None
    upstream_headers: list[list[str]] = field(default_factory=list)
    # `response` already encoded as JSON (a cached recording), so the reply need not re-encode it.
    response_json: bytes | None = None
    # How long the proxy holds the answer: a latency fault, or a timeout fault's hold.
    delay_ms: int = 0


@dataclass(frozen=True)
class Waiting:
    """Another asker holds the claim on this address; poll until it is recorded."""

    ask: Ask
    # When the holder's lease lapses (wall time), if known: the next look worth taking.
    lease_expires: float | None = None


class Resolver:
    """Resolve and record against one store."""

    def __init__(
        self,
        store: Store,
        *,
        max_body_bytes: int,
        lease_seconds: float,
        cache: AnswerCache | None = None,
        redaction_key: bytes | None = None,
        echoes: EchoBook | None = None,
        reserve: DiskReserve | None = None,
        loop_writer: LoopWriter | None = None,
    ) -> None:
        self.store = store
        self.loop_writer = loop_writer
        # Without a deployment key (tests, benches) placeholders are keyed by a process key.
        self.redaction_key = redaction_key or secrets.token_bytes(32)
        self.echoes = echoes if echoes is not None else EchoBook()
        self.max_body_bytes = max_body_bytes
        self.lease_seconds = lease_seconds
        self.cache = cache if cache is not None else AnswerCache()
        self.simulator = SimulatorClient(store, max_body_bytes=max_body_bytes)
        self.reserve = reserve
        self._forwards = itertools.count(1)
        # Each tape as the last resolve found it (store/fused.py `TakenAsGuessed`).
        self._tapes: dict[str, TapeRef] = {}

    def resolve(self, wire: ResolveRequest) -> Resolution | Waiting:
        return self.finish(self._resolve(wire, unit_of_work(self.store)))

    def resolve_without_waiting(self, wire: ResolveRequest) -> Resolution | Waiting | None:
        """`resolve`'s transaction on the caller's thread (the event loop), or None if it would
        wait for another writer (store/loop_writes.py). Nothing is taken when it answers None.

        The caller passes what it gets to `finish` (on a worker thread where `needs_thread`
        says so: a simulator's answer is a network call).
        """
        if self.loop_writer is None:
            return None
        try:
            return self._resolve(wire, self.loop_writer.unit())
        except WouldWait:
            return None

    def finish(self, result: Resolution | Waiting) -> Resolution | Waiting:
        """A taken resolve's last steps: the tape simulator's answer, a fault's delay."""
        return injection.with_delay(self._simulate(result))

    @staticmethod
    def needs_thread(result: Resolution | Waiting) -> bool:
        """Whether `finish` may block (it asks the tape's simulator over HTTP)."""
        return _wants_simulator(result)

    def _remember(self, tape: TapeRef) -> None:
        """Keep the tape as this resolve found it: the next resolve's guess of its config."""
        if len(self._tapes) >= TAPES_REMEMBERED and tape.name not in self._tapes:
            self._tapes.clear()
        self._tapes[tape.name] = tape

    def poll(self, waiting: Waiting) -> Resolution | Waiting:
        """One look at an address someone else is fetching."""
        return injection.with_delay(self._simulate(self._poll(waiting)))

    def _resolve(
        self, wire: ResolveRequest, transaction: AbstractContextManager[Unit]
    ) -> Resolution | Waiting:
        body = decode_base64(wire.body, "body") if wire.body else b""
        if len(body) > self.max_body_bytes:
            raise BodyTooLarge(
                f"request body is {len(body)} bytes, over max_body_bytes={self.max_body_bytes}; "
                "send body_too_large=true to pass it through unrecorded",
                limit=self.max_body_bytes,
            )
        with transaction as unit:
            connection = unit.connection
            # Both relax the commit as `relax_commit_durability` would, in their own statement.
            guess = self._tapes.get(wire.tape)
            if guess is None:
                tape, branch = load_tape_and_branch(
                    connection, wire.tape, wire.branch, relax_commit=True
                )
                ask = take_ask(
                    connection, tape, branch, wire, body, redaction_key=self.redaction_key
                )
            else:
                tape, ask = take_ask_as_guessed(
                    connection, guess, wire, body, redaction_key=self.redaction_key
                )
            self._remember(tape)
            passthrough_hosts = {host.lower() for host in tape.config.get("passthrough_hosts", [])}
            passthrough = wire.body_too_large or ask.request.normalised_host in passthrough_hosts
            return self._settle(unit, ask, facts_of(ask, passthrough=passthrough))

    def _poll(self, waiting: Waiting) -> Resolution | Waiting:
        """The same decision from a poll's facts; waiting again needs only a read."""
        ask = waiting.ask
        start = facts_of(ask)  # a passthrough or a fault never waits
        with unit_of_work(self.store, write=False) as unit:
            found = self._find(unit, ask)
            claim = None if found else claims.get_claim(*_address(ask), session=unit.session)
        looked = start.updated(**_recorded_facts(found), claim=claim_state(claim, time.time()))
        if decide_step(looked).step is Step.WAIT:
            assert claim is not None
            return Waiting(ask, claim.lease_expires)
        with unit_of_work(self.store) as unit:
            relax_commit_durability(unit.connection)
            claim = claims.get_claim(*_address(ask), session=unit.session)
            facts = start.updated(claim=claim_state(claim, time.time()))
            return self._settle(unit, ask, facts, claim=claim)

    def _simulate(self, result: Resolution | Waiting) -> Resolution | Waiting:
        """A claimed `simulated` ask: ask the tape's simulator, record and serve its answer."""
        if not _wants_simulator(result):
            return result
        assert isinstance(result, Resolution) and result.ticket is not None
        decision, response = self.simulator.answer(result.ask, result.ticket)
        return Resolution(Action.SERVE, decision, result.ask, response=response)

    def _settle(
        self, unit: Unit, ask: Ask, facts: Facts, *, claim: Claim | None = None
    ) -> Resolution | Waiting:
        """Decide, look up what the decision asks for, decide again; then carry it out."""
        found: Recorded | None = None
        ticket: str | None = None
        while True:
            plan = decide_step(facts)
            if plan.step is Step.LOOK_UP:
                found = self._find(unit, ask)
                facts = facts.updated(**_recorded_facts(found))
            elif plan.step is Step.CONFIRM_ONLINE:
                online = bool(claims.tape_online_locked(ask.tape_id, session=unit.connection))
                ask = replace(ask, online=online)
                facts = facts.updated(online=online, online_confirmed=True)
            elif plan.step is Step.CLAIM:
                ticket = claims.new_ticket()
                if self._take_claim(unit.connection, ask, ticket):
                    # Someone may have recorded and released between our lookup and our claim.
                    facts = facts.updated(claim=ClaimState.OURS, recorded=None)
                else:
                    facts = facts.updated(claim=ClaimState.HELD)
            elif plan.step is Step.TAKE_OVER:
                assert claim is not None
                ticket = claims.new_ticket()
                if self._take_over(unit.session, claim, ticket):
                    facts = facts.updated(claim=ClaimState.OURS, recorded=None)
                else:
                    facts = facts.updated(claim=ClaimState.HELD)
            else:
                lease = claim.lease_expires if claim is not None else None
                return self._carry_out(unit, ask, plan, facts, found, ticket, lease)

    def _carry_out(
        self,
        unit: Unit,
        ask: Ask,
        plan: Plan,
        facts: Facts,
        found: Recorded | None,
        ticket: str | None,
        lease_expires: float | None,
    ) -> Resolution | Waiting:
        """The one place a final step writes: its event, and its claim or pending record."""
        assert plan.decision is not None
        if plan.step is Step.WAIT:
            return Waiting(ask, lease_expires)
        if plan.step is Step.SERVE:
            assert found is not None
            if facts.claim is ClaimState.OURS and ticket is not None:
                claims.release_claim(ticket, session=unit.connection)
            self._write_event(unit.connection, ask, plan.decision, found.exchange_id)
            if ask.classification.is_write:  # a replayed write moves the branch on as live
                self._bump_versions(unit.session, ask, found.response_headers)
            return Resolution(
                Action.SERVE,
                plan.decision,
                ask,
                response=found.response,
                response_json=found.response_json,
            )
        if plan.step is Step.REFUSE:
            self._write_event(unit.connection, ask, Decision.REFUSED, None)
            response = misses.sealed_miss(unit.session, ask)  # near-miss explanations
            return Resolution(Action.SERVE, Decision.REFUSED, ask, response=response)
        if plan.step is Step.INJECT:
            fault = injection.replacing_fault(ask)
            assert fault is not None
            self._write_event(unit.connection, ask, Decision.INJECTED, None)
            response = injection.injected(ask, fault)
            return Resolution(Action.SERVE, Decision.INJECTED, ask, response=response)
        if plan.step is Step.PASS:
            self._write_event(unit.connection, ask, Decision.PASSTHROUGH, None)
            headers = cooperative_headers(ask)
            return Resolution(Action.FORWARD, Decision.PASSTHROUGH, ask, None, None, headers)
        assert plan.step is Step.FORWARD
        return self._write_forward(unit, ask, plan.decision, ticket or claims.new_ticket())

    def _find(self, unit: Unit, ask: Ask) -> Recorded | None:
        """The answer recorded at the ask's address (from memory when it was served before)."""
        address = _address(ask)
        cached = self.cache.get(address)
        if cached is not None:
            return cached
        answer = exchanges.find_answer(*address, session=unit.connection)
        if answer is None:
            return None
        if answer.error_kind is not None:  # rare: its 502 problem names the whole exchange
            exchange = exchanges.find_exchange(*address, session=unit.session)
            assert exchange is not None
            response = answers.recorded(exchange, session=unit.session, tape_name=ask.tape_name)
        else:
            if answer.body_sha and answer.body is None:
                raise LookupError(f"blob {answer.body_sha} is missing from the store")
            response = answers.from_answer(answer)
        found = Recorded(answer.exchange_id, response, answer.headers)
        self.cache.put(address, found)
        return found

    def _take_claim(self, session: Executor, ask: Ask, ticket: str) -> bool:
        lease_expires = time.time() + self.lease_seconds
        return claims.try_claim(
            *_address(ask), ticket=ticket, lease_expires=lease_expires, session=session
        )

    def _take_over(self, session: Session, claim: Claim, ticket: str) -> bool:
        now = time.time()
        return claims.take_over_expired(
            claim.id,
            old_ticket=claim.ticket,
            ticket=ticket,
            now=now,
            lease_expires=now + self.lease_seconds,
            session=session,
        )

    @staticmethod
    def _write_event(
        session: Executor, ask: Ask, decision: Decision, exchange_id: int | None
    ) -> int:
        return exchanges.add_next_event(
            session=session,
            branch_id=ask.branch_id,
            method=ask.request.method,
            url=ask.request.url(),
            key_hash=ask.key.hash,
            occurrence=ask.occurrence,
            fingerprint=ask.fingerprint,
            decision=str(decision),
            is_read=not ask.classification.is_write,
            true_fingerprint_nonempty=ask.true_fingerprint != "",
            exchange_id=exchange_id,
        )

    def _write_forward(self, unit: Unit, ask: Ask, decision: Decision, ticket: str) -> Resolution:
        """A live call handed out: its event, request body and pending record."""
        if self.reserve is not None:
            self.reserve.check()  # raises before anything is written: the ask is not taken
        if next(self._forwards) % STALE_SWEEP_EVERY == 0:
            horizon = max(STALE_PENDING_SECONDS, 10 * self.lease_seconds)
            claims.delete_stale_pending(time.time() - horizon, session=unit.session)
        event_id = self._write_event(unit.connection, ask, decision, None)
        session = unit.connection
        self.echoes.remember(ticket, ask.secrets)
        exchanges.put_blob(ask.request.body, session=session)
        claims.add_pending(
            session=session,
            ticket=ticket,
            tape_id=ask.tape_id,
            branch_id=ask.branch_id,
            event_id=event_id,
            key_hash=ask.key.hash,
            occurrence=ask.occurrence,
            fingerprint=ask.fingerprint,
            decision=str(decision),
            is_write=ask.classification.is_write,
            request={
                "key_readable": ask.key.readable,
                "method": ask.request.method,
                "host": ask.request.normalised_host,
                "url": ask.request.url(),
                "headers": [list(pair) for pair in ask.request.headers],
                "body_sha": ask.body_sha,
                "writes": sorted(ask.classification.writes),
            },
            created=time.time(),
        )
        return Resolution(Action.FORWARD, decision, ask, ticket, None, cooperative_headers(ask))

    @staticmethod
    def _bump_versions(session: Session, ask: Ask, response_headers: list[list[str]]) -> None:
        written = recorded_writes(ask.request, ask.model, ask.classification, response_headers)
        bump_branch(session, ask.branch_id, written, ask.key.hash, ask.body_sha)


def _address(ask: Ask) -> tuple[int, str, int, str]:
    return (ask.tape_id, ask.key.hash, ask.occurrence, ask.fingerprint)


def _recorded_facts(found: Recorded | None) -> dict[str, bool]:
    simulated = found is not None and is_simulated(found.response_headers)
    return {"recorded": found is not None, "simulated_recording": simulated}
