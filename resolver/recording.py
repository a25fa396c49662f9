"""`/v1/record`: commit what the world answered to a forwarded ask, and say what to serve.

The record is one transaction: the exchange (first recording at an address wins), the event's
exchange link, the single-flight claim release, cooperative hints and — for writes — the branch's
version bumps. The proxy is told `200` only after the commit, so an acknowledged record survives
a crash of the resolver. The answer always carries the response the worker must be served — the
stored form (redacted headers; `body: null` when byte-identical to what was sent), or the
winner's bytes when another fetcher recorded the address first — so the recording branch gets
exactly what its siblings get. A failure before any HTTP answer is not the world's answer: it is
not recorded (unless the tape opts in) and is served as a 502 `upstream-failed`.

A record that fails or is rejected releases its claim in a transaction of its own, so siblings
waiting on the address take over at once; every settled address wakes its in-process waiters.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, NoReturn

from sqlalchemy.exc import OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session

from groundhog.protocol.wire import WireResponse, wire_response
from resolver import answers, notify
from resolver.asks import bump_branch
from resolver.dependencies import Classification, host_resource, recorded_writes, response_hints
from resolver.echoes import EchoBook, Secrets, scrub_response
from resolver.errors import (
    BodyTooLarge,
    Conflict,
    InvalidInput,
    ResolverError,
    StoreUnavailable,
)
from resolver.policy import Decision, DependencyModel
from resolver.redaction import redact_response_headers
from resolver.request import RequestParts
from resolver.schemas import RecordRequest, decode_base64, encode_base64
from resolver.wakeups import Address
from store import claims, exchanges
from store.claims import Pending
from store.db import Store, transaction
from store.hints import set_hint
from store.loop_writes import LoopWriter, WouldWait
from store.models import PendingRecord, Tape
from store.prepared import Executor
from store.refs import TapeRef, find_tape_ref
from store.unit import Unit, unit_of_work

logger = logging.getLogger(__name__)

# A recorded body up to this size (base64 characters, 48 KiB of bytes) is stored on the event
# loop: its hash, echo scrub and insert take tens of microseconds, not milliseconds.
LOOP_RECORD_MAX_BASE64 = 64 * 1024


@dataclass(frozen=True)
class RecordResult:
    decision: str
    exchange_id: int | None
    # What the worker must be served; body None: identical to the body the proxy sent.
    response: WireResponse | None
    recorded: bool


def _address(pending: PendingRecord | Pending) -> Address:
    return (pending.tape_id, pending.key_hash, pending.occurrence, pending.fingerprint)


def check_latin1_headers(headers: list[tuple[str, str]], field: str) -> None:
    """HTTP/1 header fields are Latin-1: a value outside it could never be served again."""
    for index, (name, value) in enumerate(headers):
        for part, text in (("name", name), ("value", value)):
            try:
                text.encode("latin-1")
            except UnicodeEncodeError as error:
                raise InvalidInput(
                    f"{field}[{index}] ({name!r}) has a {part} outside Latin-1; "
                    "send header bytes decoded as Latin-1",
                    field=f"{field}[{index}]",
                    header=name,
                ) from error


class Recorder:
    def __init__(
        self,
        store: Store,
        *,
        max_body_bytes: int,
        lease_seconds: float = 30.0,
        echoes: EchoBook | None = None,
        on_settled: Callable[[Address], object] | None = None,
        loop_writer: LoopWriter | None = None,
    ) -> None:
        self.store = store
        self.loop_writer = loop_writer
        self.max_body_bytes = max_body_bytes
        self.lease_seconds = lease_seconds
        self.echoes = echoes if echoes is not None else EchoBook()
        self.on_settled = on_settled or (lambda _address: None)

    def record(self, wire: RecordRequest) -> RecordResult:
        kind = wire.kind()
        try:
            body = self._checked_body(wire)
        except ResolverError:
            self._release_after_failure(wire.ticket)  # a rejected record must not hold siblings
            raise
        try:
            result, address = self._commit(wire, kind, body, unit_of_work(self.store))
        except Exception as error:
            self.fail(wire.ticket, error)
        self.on_settled(address)
        return result

    def record_without_waiting(self, wire: RecordRequest) -> RecordResult | None:
        """`record` on the caller's thread (the event loop), for a small complete answer whose
        transaction need not wait for another writer (store/loop_writes.py); None otherwise,
        with nothing done. If the commit fails the caller hands the error to `fail` on a worker
        thread (it writes the claim's release).
        """
        if self.loop_writer is None or wire.kind() != "response" or wire.response is None:
            return None
        if len(wire.response.body) > LOOP_RECORD_MAX_BASE64:
            return None  # hashing, scrubbing and storing a large body would hold up the loop
        try:
            body = self._checked_body(wire)
        except ResolverError:
            return None  # `record` rejects it, and releases the claim, on a thread
        try:
            result, address = self._commit(wire, "response", body, self.loop_writer.unit())
        except WouldWait:
            return None
        self.on_settled(address)
        return result

    def fail(self, ticket: str, error: Exception) -> NoReturn:
        """Raise what a failed commit answers, once its claim is released (a write: run it off
        the event loop). A typed refusal (an unknown ticket, a deleted tape) left no claim.
        """
        if isinstance(error, ResolverError):
            raise error
        self._release_after_failure(ticket)
        if isinstance(error, SQLAlchemyError) and not isinstance(error, OperationalError):
            raise StoreUnavailable(
                f"the store could not take the record ({type(error).__name__}); nothing "
                "was recorded",
                ticket=ticket,
            ) from error
        raise error

    def _checked_body(self, wire: RecordRequest) -> bytes:
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
        """The stored (redacted) form of a stream's headers; renews the ticket's lease."""
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
                wire.ticket, lease_expires=time.time() + self.lease_seconds, session=session
            )
            echoed = self.echoes.peek(wire.ticket)
            headers, _body = self._stored_form(tape, wire.head.headers, b"", echoed)
            return headers

    def _release_after_failure(self, ticket: str) -> None:
        """Let a waiting sibling fetch the address now rather than when the lease lapses.

        The failed transaction rolled back, so the claim would otherwise hold for the whole
        lease while siblings wait. The pending record stays, so the proxy may still retry this
        ticket; the first recording at the address wins either way.
        """
        try:
            with transaction(self.store.write) as session:
                pending = session.get(PendingRecord, ticket)
                claims.release_claim(ticket, session=session)
                if pending is not None:
                    notify.announce(session, _address(pending))
            if pending is not None:
                self.on_settled(_address(pending))
        except Exception:  # the store may still be failing; the lease is the fallback
            logger.warning("could not release the claim of ticket %s after a failed record", ticket)

    def _commit(
        self,
        wire: RecordRequest,
        kind: str,
        body: bytes,
        transaction: AbstractContextManager[Unit],
    ) -> tuple[RecordResult, Address]:
        # Every forward ends here: a Core unit (store/unit.py), with an ORM Session made only
        # for the rarer steps that need one (a lost race, a write's versions, hints).
        with transaction as unit:
            connection = unit.connection
            pending = claims.pop_pending(wire.ticket, session=connection)
            if pending is None:
                raise Conflict(
                    f"ticket {wire.ticket!r} is unknown or was already recorded",
                    ticket=wire.ticket,
                )
            claims.release_claim(wire.ticket, session=connection)
            notify.announce(connection, _address(pending))  # other replicas' waiters, on commit
            tape = find_tape_ref(pending.tape_id, session=connection)
            if tape is None:
                raise Conflict(
                    f"the tape of ticket {wire.ticket!r} was deleted", ticket=wire.ticket
                )
            echoed = self.echoes.take(wire.ticket)  # taken whatever the kind: none may linger
            if kind == "passthrough":
                self._finish(connection, pending, Decision.PASSTHROUGH, None)
                return RecordResult(str(Decision.PASSTHROUGH), None, None, False), _address(pending)
            if kind == "unrecorded":
                # The event keeps no exchange: the report lists it as unrecorded.
                logger.error("ticket %s went live unrecorded: %s", wire.ticket, wire.unrecorded)
                return RecordResult(pending.decision, None, None, False), _address(pending)
            if kind == "error" and not tape.config.get("record_transport_failures", False):
                return self._upstream_failed(unit, pending, tape, wire), _address(pending)
            stored = self._store(unit, pending, tape, wire, body, echoed)
            return stored, _address(pending)

    def _store(
        self,
        unit: Unit,
        pending: Pending,
        tape: TapeRef,
        wire: RecordRequest,
        body: bytes,
        echoed: Secrets,
    ) -> RecordResult:
        connection = unit.connection
        content, stored_body = self._content(connection, pending, tape, wire, body, echoed)
        exchange, created = exchanges.insert_exchange_first_wins(
            *_address(pending), content, session=connection
        )
        # A read that lost the race is served the winner's bytes, as a sibling would be.
        decision = pending.decision if created or pending.is_write else str(Decision.SHARED)
        self._finish(connection, pending, decision, exchange.id)
        model = DependencyModel(tape.dependency_model)
        response_headers = exchange.response_headers or []
        hints = response_hints(response_headers)
        if created and model is DependencyModel.HINTS and hints is not None:
            set_hint(tape.id, pending.key_hash, *hints, session=unit.session)
        if pending.is_write:
            self._bump(unit.session, pending, model, response_headers)
        if created and wire.response is not None:
            # What was just stored, without reading the blob back; a body byte-identical to
            # what the proxy sent is not repeated.
            assert content.response_status is not None
            response = wire_response(
                content.response_status,
                content.response_headers or [],
                None if stored_body == body else encode_base64(stored_body),
            )
        else:
            response = answers.recorded(exchange, session=unit.session, tape_name=tape.name)
        return RecordResult(decision, exchange.id, response, created)

    def _upstream_failed(
        self, unit: Unit, pending: Pending, tape: TapeRef, wire: RecordRequest
    ) -> RecordResult:
        """Not the world's answer: nothing stored, unless a read's address was recorded since."""
        if not pending.is_write:
            won = exchanges.find_exchange(*_address(pending), session=unit.session)
            if won is not None:
                self._finish(unit.connection, pending, Decision.SHARED, won.id)
                response = answers.recorded(won, session=unit.session, tape_name=tape.name)
                return RecordResult(str(Decision.SHARED), won.id, response, False)
        assert wire.error is not None
        self._finish(unit.connection, pending, Decision.UPSTREAM_FAILED, None)
        response = answers.upstream_failed(
            tape_name=tape.name,
            key_readable=pending.request["key_readable"],
            occurrence=pending.occurrence,
            fingerprint=pending.fingerprint,
            kind=wire.error.kind,
            message=wire.error.message,
        )
        return RecordResult(str(Decision.UPSTREAM_FAILED), None, response, False)

    @staticmethod
    def _finish(
        session: Executor, pending: Pending, decision: str, exchange_id: int | None
    ) -> None:
        exchanges.finish_event(
            pending.event_id, decision=str(decision), exchange_id=exchange_id, session=session
        )

    @staticmethod
    def _stored_form(
        tape: Tape | TapeRef, headers: list[tuple[str, str]], body: bytes, echoed: Secrets
    ) -> tuple[list[list[str]], bytes]:
        """Headers redacted by the tape's rules, then headers and body scrubbed of echoes."""
        kept = redact_response_headers(headers, tape.config.get("redact_headers", []))
        stored_headers, stored_body, _echoes = scrub_response(kept, body, echoed)
        return stored_headers, stored_body

    def _content(
        self,
        session: Executor,
        pending: Pending,
        tape: TapeRef,
        wire: RecordRequest,
        body: bytes,
        echoed: Secrets,
    ) -> tuple[exchanges.ExchangeContent, bytes]:
        """What the exchange will hold (redacted, echoes scrubbed), and its stored body."""
        request = pending.request
        content: dict[str, Any] = {
            "key_readable": request["key_readable"],
            "request_method": request["method"],
            "request_host": request["host"],
            "request_url": request["url"],
            "request_headers": request["headers"],
            "request_body_sha": request["body_sha"],
        }
        stored = b""
        if wire.response is not None:
            headers, stored = self._stored_form(tape, wire.response.headers, body, echoed)
            content.update(
                response_status=wire.response.status,
                response_headers=headers,
                response_body_sha=exchanges.put_blob(stored, session=session),
            )
        elif wire.error is not None:
            content.update(error_kind=wire.error.kind, error_message=wire.error.message)
        return exchanges.ExchangeContent(**content), stored

    @staticmethod
    def _bump(
        session: Session, pending: Pending, model: DependencyModel, headers: list[list[str]]
    ) -> None:
        request = pending.request
        parts = RequestParts(
            method=request["method"], scheme="", host=request["host"], port=0, path=""
        )
        writes = frozenset(request.get("writes", [])) or frozenset({host_resource(parts)})
        classification = Classification(True, frozenset(), writes)
        written = recorded_writes(parts, model, classification, headers)
        bump_branch(session, pending.branch_id, written, pending.key_hash, request["body_sha"])
