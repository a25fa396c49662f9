"""The resolve hot path: one short transaction that gathers branch state, asks `policy.decide`
and either serves from tape, hands out a ticket to go live, or says "wait, someone is fetching".

This is the edge where the pure modules (keys, redaction, dependencies, fingerprint, policy) meet
the store. Without it the proxy would have nobody to ask. Waiting itself (single flight) is
driven by the async route, which calls `poll` until the address is recorded or the lease lapses.

A plain hit (a read served from tape) is most of the traffic, so it is tried first on a bare
driver transaction (store/hot.py) that does the same writes (occurrence, event) without the ORM;
anything else rolls that back and takes the general path, which decides afresh.
"""

from __future__ import annotations

import itertools
import secrets
import threading
import time
from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from resolver import answers
from resolver.asks import (
    Ask,
    build_ask,
    bump_branch,
    cooperative_headers,
    find_tape_and_branch,
    load_tape_and_branch,
)
from resolver.cache import AnswerCache, Recorded
from resolver.dependencies import recorded_writes
from resolver.echoes import EchoBook
from resolver.errors import BodyTooLarge
from resolver.policy import Action, Decision, DependencyModel, Mode, decide
from resolver.schemas import ResolveRequest, decode_base64, encode_base64
from store import claims, exchanges, hot
from store.db import Store, relax_commit_durability, transaction
from store.hot import Executor
from store.repository import TapeRef

# Forwards whose proxy never called /v1/record are forgotten after this long (or 10 leases).
STALE_PENDING_SECONDS = 3600.0
STALE_SWEEP_EVERY = 256


# Served from tape with nothing but an occurrence and an event: what `_serve_hit` handles.
_PLAIN_HITS = frozenset({Decision.SHARED, Decision.STALE})


class _NotAPlainHit(Exception):
    """The ask needs the general path (ORM, claims, live calls); nothing was committed."""


def _passthrough_hosts(tape: TapeRef) -> set[str]:
    return {host.lower() for host in tape.config.get("passthrough_hosts", [])}


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


@dataclass(frozen=True)
class Waiting:
    """Another asker holds the claim on this address; poll until it is recorded."""

    ask: Ask


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
    ) -> None:
        self.store = store
        # Without a deployment key (tests, benches) placeholders are keyed by a process key.
        self.redaction_key = redaction_key or secrets.token_bytes(32)
        self.echoes = echoes if echoes is not None else EchoBook()
        self.max_body_bytes = max_body_bytes
        self.lease_seconds = lease_seconds
        self.cache = cache if cache is not None else AnswerCache()
        self._forwards = itertools.count(1)
        # The in-process SQLite writer lock `transaction(store.write)` takes; the hit path's
        # driver transaction must queue on the same one.
        self._write_lock: threading.Lock | None = store.write.kw.get("info", {}).get("write_lock")

    def resolve(self, wire: ResolveRequest) -> Resolution | Waiting:
        body = decode_base64(wire.body, "body") if wire.body else b""
        if len(body) > self.max_body_bytes:
            raise BodyTooLarge(
                f"request body is {len(body)} bytes, over max_body_bytes={self.max_body_bytes}; "
                "send body_too_large=true to pass it through unrecorded",
                limit=self.max_body_bytes,
            )
        if not wire.body_too_large:
            try:
                return self._serve_hit(wire, body)
            except _NotAPlainHit:
                pass  # rolled back, nothing taken: the general path decides afresh
        with transaction(self.store.write) as session:
            relax_commit_durability(session)
            tape, branch = load_tape_and_branch(session, wire.tape, wire.branch)
            ask = build_ask(session, tape, branch, wire, body, redaction_key=self.redaction_key)
            passthrough = wire.body_too_large or (
                ask.request.normalised_host in _passthrough_hosts(tape)
            )
            is_write = ask.classification.is_write
            looks_up = not passthrough and not (
                tape.online and (is_write or ask.mode is Mode.NAIVE)
            )
            found = self._find(session, ask) if looks_up else None
            outcome = decide(
                is_write=is_write,
                mode=ask.mode,
                online=ask.online,
                true_fingerprint=ask.true_fingerprint,
                branch=ask.branch,
                recorded=found is not None,
                passthrough=passthrough,
            )
            if outcome.action is Action.SERVE:
                return self._serve(session, ask, outcome.decision, found)
            if outcome.decision is Decision.PASSTHROUGH:
                self._event(session, ask, Decision.PASSTHROUGH, None)
                return Resolution(
                    Action.FORWARD, Decision.PASSTHROUGH, ask, None, None, cooperative_headers(ask)
                )
            if is_write or ask.mode is Mode.NAIVE:
                return self._forward(session, ask, outcome.decision)
            return self._claim_or_wait(session, ask, outcome.decision)

    def _serve_hit(self, wire: ResolveRequest, body: bytes) -> Resolution:
        """The common case, a read served from tape, on a bare driver transaction.

        Exactly what the general path does for a `shared` or `stale` answer (occurrence taken,
        event written, one transaction), minus the ORM's cost. Anything else (unknown tape or
        branch, passthrough, hints, a live call, a miss, a write) raises `_NotAPlainHit`, which
        rolls the transaction back so the general path starts from the same state.
        """
        with hot.driver_transaction(self.store.engine, self._write_lock) as driver:
            found_refs = find_tape_and_branch(driver, wire.tape, wire.branch)
            if found_refs is None:
                raise _NotAPlainHit
            tape, branch = found_refs
            if tape.dependency_model == DependencyModel.HINTS:
                raise _NotAPlainHit
            ask = build_ask(driver, tape, branch, wire, body, redaction_key=self.redaction_key)
            if ask.request.normalised_host in _passthrough_hosts(tape):
                raise _NotAPlainHit
            if ask.classification.is_write or (tape.online and ask.mode is Mode.NAIVE):
                raise _NotAPlainHit
            found = self._find(driver, ask)
            if found is None:
                raise _NotAPlainHit
            outcome = decide(
                is_write=False,
                mode=ask.mode,
                online=ask.online,
                true_fingerprint=ask.true_fingerprint,
                branch=ask.branch,
                recorded=True,
            )
            if outcome.action is not Action.SERVE or outcome.decision not in _PLAIN_HITS:
                raise _NotAPlainHit
            return self._serve(driver, ask, outcome.decision, found)

    def poll(self, waiting: Waiting) -> Resolution | Waiting:
        """One look at an address someone else is fetching."""
        ask = waiting.ask
        with transaction(self.store.read) as session:
            found = self._find(session, ask)
            claim = (
                None
                if found
                else claims.get_claim(
                    ask.tape_id, ask.key.hash, ask.occurrence, ask.fingerprint, session=session
                )
            )
            if found is None and claim is not None and claim.lease_expires >= time.time():
                return waiting
        with transaction(self.store.write) as session:
            relax_commit_durability(session)
            found = self._find(session, ask)
            if found is not None:
                return self._serve(session, ask, Decision.SHARED, found)
            decision = Decision.RECORDED if ask.fingerprint == "" else Decision.REFETCHED
            claim = claims.get_claim(
                ask.tape_id, ask.key.hash, ask.occurrence, ask.fingerprint, session=session
            )
            if claim is None:
                return self._claim_or_wait(session, ask, decision)
            ticket = claims.new_ticket()
            now = time.time()
            if claims.take_over_expired(
                claim.id,
                old_ticket=claim.ticket,
                ticket=ticket,
                now=now,
                lease_expires=now + self.lease_seconds,
                session=session,
            ):
                return self._forward(session, ask, decision, ticket=ticket)
            return waiting

    def _find(self, session: Executor, ask: Ask) -> Recorded | None:
        address = (ask.tape_id, ask.key.hash, ask.occurrence, ask.fingerprint)
        cached = self.cache.get(address)
        if cached is not None:
            return cached
        answer = hot.find_answer(*address, session=session)
        if answer is None:
            return None
        if answer.error_kind is not None:  # rare: its 502 problem names the whole exchange
            if not isinstance(session, Session):
                raise _NotAPlainHit
            exchange = exchanges.find_exchange(*address, session=session)
            assert exchange is not None
            response = answers.recorded(exchange, session=session, tape_name=ask.tape_name)
        else:
            if answer.body_sha and answer.body is None:
                raise LookupError(f"blob {answer.body_sha} is missing from the store")
            response = {
                "status": answer.status,
                "headers": answer.headers,
                "body": encode_base64(answer.body or b""),
            }
        found = Recorded(answer.exchange_id, response, answer.headers)
        self.cache.put(address, found)
        return found

    def _event(
        self, session: Executor, ask: Ask, decision: Decision, exchange_id: int | None
    ) -> int:
        seq = hot.take_event_seq(ask.branch_id, session=session)
        return hot.add_event(
            session=session,
            branch_id=ask.branch_id,
            seq=seq,
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

    def _serve(
        self, session: Executor, ask: Ask, decision: Decision, found: Recorded | None
    ) -> Resolution:
        if decision is Decision.REFUSED or found is None:
            if not isinstance(session, Session):
                raise _NotAPlainHit
            self._event(session, ask, Decision.REFUSED, None)
            nearest = answers.nearest_keys(
                exchanges.recorded_keys(
                    ask.tape_id, ask.request.method, ask.request.normalised_host, session=session
                ),
                ask.key.readable,
            )
            response = answers.refused(ask, nearest)
            return Resolution(Action.SERVE, Decision.REFUSED, ask, response=response)
        self._event(session, ask, decision, found.exchange_id)
        if decision is Decision.REPLAYED_WRITE:
            if not isinstance(session, Session):
                raise _NotAPlainHit
            self.bump(session, ask, found.response_headers)
        return Resolution(
            Action.SERVE, decision, ask, response=found.response, response_json=found.response_json
        )

    def _claim_or_wait(
        self, session: Session, ask: Ask, decision: Decision
    ) -> Resolution | Waiting:
        ticket = claims.new_ticket()
        claimed = claims.try_claim(
            ask.tape_id,
            ask.key.hash,
            ask.occurrence,
            ask.fingerprint,
            ticket=ticket,
            lease_expires=time.time() + self.lease_seconds,
            session=session,
        )
        if not claimed:
            return Waiting(ask)
        # Someone may have recorded and released between our lookup and our claim.
        found = self._find(session, ask)
        if found is not None:
            claims.release_claim(ticket, session=session)
            return self._serve(session, ask, Decision.SHARED, found)
        return self._forward(session, ask, decision, ticket=ticket)

    def _forward(
        self, session: Session, ask: Ask, decision: Decision, *, ticket: str | None = None
    ) -> Resolution:
        ticket = ticket or claims.new_ticket()
        if next(self._forwards) % STALE_SWEEP_EVERY == 0:
            horizon = max(STALE_PENDING_SECONDS, 10 * self.lease_seconds)
            claims.delete_stale_pending(time.time() - horizon, session=session)
        event_id = self._event(session, ask, decision, None)
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
    def bump(session: Session, ask: Ask, response_headers: list[list[str]]) -> None:
        written = recorded_writes(ask.request, ask.model, ask.classification, response_headers)
        bump_branch(session, ask.branch_id, written, ask.key.hash, ask.body_sha)
