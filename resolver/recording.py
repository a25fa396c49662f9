"""`/v1/record`: commit what the world answered to a forwarded ask, and say what to serve.

The record is one transaction: the pending record taken, the single-flight claim released,
then the answer settled by resolver/record_outcomes.py — the exchange (first recording at an
address wins), the event's exchange link, cooperative hints and, for writes, the branch's
version bumps. The proxy is told `200` only after the commit, so an acknowledged record
survives a crash of the resolver. The answer always carries the response the worker must be
served — the stored form (resolver/stored_form.py: redacted headers; `body: null` when
byte-identical to what was sent), or the winner's bytes when another fetcher recorded the
address first — so the recording branch gets exactly what its siblings get. A failure before
any HTTP answer is not the world's answer: it is not recorded (unless the tape opts in) and is
served as a 502 `upstream-failed`.

A record that fails or is rejected releases its claim in a transaction of its own, so siblings
waiting on the address take over at once; every settled address wakes its in-process waiters.
Without this module a forward's answer would never reach the tape, and its siblings would wait
out the claim.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import NoReturn

from sqlalchemy.exc import OperationalError, SQLAlchemyError

from engine import failpoints
from engine.cache import Address
from engine.errors import ProblemError
from engine.policy import Decision
from engine.refs import TapeRef
from resolver import notify
from resolver.echoes import EchoBook
from resolver.errors import BodyTooLarge, Conflict, ResolverError, StoreUnavailable
from resolver.record_outcomes import (
    RecordResult,
    finish_event,
    pending_address,
    store_answer,
    upstream_failed,
)
from resolver.resolve_tx.opening import pop_pending_and_tape
from resolver.resolve_tx.units import LoopWriter, Unit, unit_of_work
from resolver.schemas import RecordRequest, decode_base64
from resolver.stored_form import check_latin1_headers, stored_form
from store import claims
from store.claims import Pending
from store.db import Store, transaction
from store.exchanges import RecordedAnswer
from store.models import PendingRecord, Tape

logger = logging.getLogger(__name__)

# A recorded body up to this size (base64 characters, 48 KiB of bytes) is stored on the event
# loop: its hash, echo scrub and insert take tens of microseconds, not milliseconds.
LOOP_RECORD_MAX_BASE64 = 64 * 1024


class Recorder:
    """Record forwarded asks' answers into one store, and release what a failed record held."""

    def __init__(
        self,
        store: Store,
        *,
        max_body_bytes: int,
        claim_seconds: float = 30.0,
        echoes: EchoBook | None = None,
        on_settled: Callable[[Address], object] | None = None,
        keep: Callable[[Address, RecordedAnswer], object] | None = None,
        loop_writer: LoopWriter | None = None,
        redaction_key: bytes | None = None,
    ) -> None:
        self.store = store
        # Keys the placeholders of stored Set-Cookie values (the resolver's deployment key).
        self.redaction_key = redaction_key or secrets.token_bytes(32)
        self.loop_writer = loop_writer
        self.max_body_bytes = max_body_bytes
        self.claim_seconds = claim_seconds
        self.echoes = echoes if echoes is not None else EchoBook()
        self.on_settled = on_settled or (lambda _address: None)
        # The resolver's memory of recorded answers (Resolver.keep), told before the waiters.
        self.keep = keep or (lambda _address, _answer: None)

    def record(self, wire: RecordRequest) -> RecordResult:
        """The record on this thread, in a unit of work of its own (the thread lane of
        resolver/resolve_tx): a record refused or failing to commit releases its claim."""
        try:
            body = self.checked_body(wire)
        except ResolverError:
            self.release_after_failure(wire.ticket)  # a rejected record must not hold siblings
            raise
        try:
            return self.commit(wire, body, unit_of_work(self.store))
        except Exception as error:
            self.fail(wire.ticket, error)

    def fits_loop(self, wire: RecordRequest) -> bool:
        """Whether the event loop may run this record (resolver/resolve_tx): a small
        complete answer, where the store has a loop writer."""
        if self.loop_writer is None or wire.kind() != "response" or wire.response is None:
            return False
        # Hashing, scrubbing and storing a large body would hold up the loop.
        return len(wire.response.body) <= LOOP_RECORD_MAX_BASE64

    def commit(
        self, wire: RecordRequest, body: bytes, transaction: AbstractContextManager[Unit]
    ) -> RecordResult:
        """The record's one transaction, in `transaction` (the lane's unit), and its waiters
        woken. A failure is raised as it is, nothing released: the caller hands it to `fail`
        on a thread (resolver/resolve_tx)."""
        result, address = self._commit(wire, wire.kind(), body, transaction)
        if result.kept is not None:
            self.keep(address, result.kept)  # committed: a hit may now be served it
        self.on_settled(address)
        return result

    def fail(self, ticket: str, error: Exception) -> NoReturn:
        """Raise what a failed commit answers, once its claim is released (a write: run it off
        the event loop). A typed refusal (an unknown ticket, a deleted tape) left no claim.
        """
        if isinstance(error, ResolverError | ProblemError):
            raise error
        self.release_after_failure(ticket)
        if isinstance(error, SQLAlchemyError) and not isinstance(error, OperationalError):
            raise StoreUnavailable(
                f"the store could not take the record ({type(error).__name__}); nothing "
                "was recorded",
                ticket=ticket,
            ) from error
        raise error

    def checked_body(self, wire: RecordRequest) -> bytes:
        """The response body's bytes; refused when not latin-1 headers, base64 or in bounds."""
        if wire.response is None:
            return b""
        check_latin1_headers(wire.response.headers, "response.headers")
        body = decode_base64(wire.response.body, "response.body")
        if len(body) > self.max_body_bytes:
            raise BodyTooLarge(
                f"response body is {len(body)} bytes, over max_body_bytes="
                f"{self.max_body_bytes}; record it as passthrough 'too-large'",
                limit=self.max_body_bytes,
            )
        return body

    def head(self, wire: RecordRequest) -> list[list[str]]:
        """The stored (redacted) form of a stream's headers; renews the ticket's claim."""
        assert wire.head is not None
        check_latin1_headers(wire.head.headers, "head.headers")
        with transaction(self.store.write) as session:
            pending = session.get(PendingRecord, wire.ticket)
            tape = session.get(Tape, pending.tape_id) if pending is not None else None
            if pending is None or tape is None:
                raise Conflict(
                    f"ticket {wire.ticket!r} is unknown or was already recorded",
                    ticket=wire.ticket,
                )
            claims.renew_claim(
                wire.ticket, claim_expires=time.time() + self.claim_seconds, session=session
            )
            echoed = self.echoes.peek(wire.ticket)
            headers, _body = stored_form(
                tape, wire.head.headers, b"", echoed, redaction_key=self.redaction_key
            )
            return headers

    def release_after_failure(self, ticket: str) -> None:
        """Let a waiting sibling fetch the address now rather than when the claim lapses.

        The failed transaction rolled back, so the claim would otherwise hold for the whole
        lease while siblings wait. The pending record stays, so the proxy may still retry this
        ticket; the first recording at the address wins either way.
        """
        try:
            with transaction(self.store.write) as session:
                pending = session.get(PendingRecord, ticket)
                claims.release_claim(ticket, session=session)
                if pending is not None:
                    notify.announce(session, pending_address(pending))
            if pending is not None:
                self.on_settled(pending_address(pending))
        except Exception:  # the store may still be failing; the claim's lapse is the fallback
            logger.warning("could not release the claim of ticket %s after a failed record", ticket)

    @staticmethod
    def _settle_claim(
        unit: Unit, wire: RecordRequest, kind: str, pending: Pending, tape: TapeRef | None
    ) -> None:
        """Release the ticket's claim; or, when a read's live call failed before the world
        answered and nothing is recorded, leave it failed for the waiters of this attempt
        (they are served the same failure, not a live call each: store/claims.py)."""
        records_failures = tape is not None and tape.settings.record_transport_failures
        failed = kind == "error" and wire.error is not None and not pending.is_write
        if failed and not records_failures:
            assert wire.error is not None
            claims.fail_claim_later(
                wire.ticket, kind=wire.error.kind, message=wire.error.message, unit=unit
            )
            return
        claims.release_claim_later(wire.ticket, unit=unit)

    def _commit(
        self,
        wire: RecordRequest,
        kind: str,
        body: bytes,
        transaction: AbstractContextManager[Unit],
    ) -> tuple[RecordResult, Address]:
        # Every forward ends here: a Core unit (resolver/resolve_tx/units.py), with an ORM
        # Session made only for the rarer steps that need one (a lost race, a write's versions,
        # hints).
        with transaction as unit:
            connection = unit.connection
            taken = pop_pending_and_tape(wire.ticket, session=connection)
            if taken is None:
                raise Conflict(
                    f"ticket {wire.ticket!r} is unknown or was already recorded",
                    ticket=wire.ticket,
                )
            pending, tape = taken
            # Neither result is read: both ride with the commit (PostgreSQL: its round trip).
            self._settle_claim(unit, wire, kind, pending, tape)
            address = pending_address(pending)
            notify.announce_later(address, unit=unit)  # other replicas' waiters, on commit
            if tape is None:
                raise Conflict(
                    f"the tape of ticket {wire.ticket!r} was deleted", ticket=wire.ticket
                )
            echoed = self.echoes.take(wire.ticket)  # taken whatever the kind: none may linger
            if kind == "passthrough":
                finish_event(unit, pending, Decision.PASSTHROUGH, None)
                return RecordResult(str(Decision.PASSTHROUGH), None, None, False), address
            if kind == "unrecorded":
                # The event keeps no exchange: the report lists it as unrecorded.
                logger.error("ticket %s went live unrecorded: %s", wire.ticket, wire.unrecorded)
                return RecordResult(pending.decision, None, None, False), address
            if kind == "error" and not tape.settings.record_transport_failures:
                result = upstream_failed(unit, pending, tape, wire)
            else:
                result = store_answer(
                    unit, pending, tape, wire, body, echoed, redaction_key=self.redaction_key
                )
            failpoints.reach("record.before_commit")
        failpoints.reach("record.committed")
        return result, address
