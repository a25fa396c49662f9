"""`/v1/record`: commit what the world answered to a forwarded ask, then acknowledge.

The record is one transaction: the exchange (first recording at an address wins), the event's
exchange link, the single-flight claim release, cooperative hints and — for writes — the branch's
version bumps. The proxy is told `200` only after the commit, so an acknowledged record survives
a crash of the resolver. A record that fails releases its claim in a transaction of its own, so
siblings waiting on the address take over at once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from resolver import answers
from resolver.asks import bump_branch
from resolver.dependencies import (
    Classification,
    host_resource,
    recorded_writes,
    response_hints,
)
from resolver.echoes import EchoBook, scrub_response
from resolver.errors import BodyTooLarge, Conflict, GroundhogError
from resolver.policy import Decision, DependencyModel
from resolver.redaction import redact_response_headers
from resolver.request import RequestParts
from resolver.schemas import RecordRequest, decode_base64
from store import claims, exchanges, repository
from store.db import Store, transaction
from store.models import PendingRecord, Tape

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RecordResult:
    decision: str
    exchange_id: int | None
    response: dict[str, Any] | None


class Recorder:
    def __init__(
        self, store: Store, *, max_body_bytes: int, echoes: EchoBook | None = None
    ) -> None:
        self.store = store
        self.max_body_bytes = max_body_bytes
        self.echoes = echoes if echoes is not None else EchoBook()

    def record(self, wire: RecordRequest) -> RecordResult:
        kind = wire.kind()
        body = b""
        if wire.response is not None:
            body = decode_base64(wire.response.body, "response.body")
            if len(body) > self.max_body_bytes:
                raise BodyTooLarge(
                    f"response body is {len(body)} bytes, over max_body_bytes="
                    f"{self.max_body_bytes}; record it as passthrough 'too-large'",
                    limit=self.max_body_bytes,
                )
        try:
            return self._commit(wire, kind, body)
        except GroundhogError:
            raise  # an unknown ticket or a deleted tape: no claim of this ticket is left
        except Exception:
            self._release_after_failure(wire.ticket)
            raise

    def _release_after_failure(self, ticket: str) -> None:
        """Let a waiting sibling fetch the address now rather than when the lease lapses.

        The failed transaction rolled back, so the claim would otherwise hold for the whole
        lease (30 s) while siblings wait. The pending record stays, so the proxy may still
        retry this ticket; the first recording at the address wins either way.
        """
        try:
            with transaction(self.store.write) as session:
                claims.release_claim(ticket, session=session)
        except Exception:  # the store may still be failing; the lease is the fallback
            logger.warning("could not release the claim of ticket %s after a failed record", ticket)

    def _commit(self, wire: RecordRequest, kind: str, body: bytes) -> RecordResult:
        with transaction(self.store.write) as session:
            pending = claims.pop_pending(wire.ticket, session=session)
            if pending is None:
                raise Conflict(
                    f"ticket {wire.ticket!r} is unknown or was already recorded",
                    ticket=wire.ticket,
                )
            claims.release_claim(wire.ticket, session=session)
            tape = session.get(Tape, pending.tape_id)
            if tape is None:
                raise Conflict(
                    f"the tape of ticket {wire.ticket!r} was deleted", ticket=wire.ticket
                )
            if kind == "passthrough":
                exchanges.finish_event(
                    pending.event_id,
                    decision=str(Decision.PASSTHROUGH),
                    exchange_id=None,
                    session=session,
                )
                return RecordResult(str(Decision.PASSTHROUGH), None, None)
            echoed = self.echoes.take(wire.ticket)
            content, response_headers = self._content(session, pending, tape, wire, body, echoed)
            exchange, _created = exchanges.insert_exchange_first_wins(
                pending.tape_id,
                pending.key_hash,
                pending.occurrence,
                pending.fingerprint,
                content,
                session=session,
            )
            exchanges.finish_event(
                pending.event_id,
                decision=pending.decision,
                exchange_id=exchange.id,
                session=session,
            )
            model = DependencyModel(tape.dependency_model)
            hints = response_hints(response_headers)
            if model is DependencyModel.HINTS and hints is not None:
                repository.set_hint(tape.id, pending.key_hash, *hints, session=session)
            if pending.is_write:
                self._bump(session, pending, model, response_headers)
            answer = None
            if wire.error is not None:
                # The proxy has nothing to serve: give it the address's answer (normally the
                # 502 for this error; an earlier recording if one won the address first).
                answer = answers.recorded(exchange, session=session, tape_name=tape.name)
            return RecordResult(pending.decision, exchange.id, answer)

    @staticmethod
    def _content(
        session: Session,
        pending: PendingRecord,
        tape: Tape,
        wire: RecordRequest,
        body: bytes,
        echoed: tuple[tuple[str, str], ...] = (),
    ) -> tuple[exchanges.ExchangeContent, list[list[str]]]:
        """What the exchange will hold (redacted), and the response headers kept."""
        request = pending.request
        content: dict[str, Any] = {
            "key_readable": request["key_readable"],
            "request_method": request["method"],
            "request_host": request["host"],
            "request_url": request["url"],
            "request_headers": request["headers"],
            "request_body_sha": request["body_sha"],
        }
        response_headers: list[list[str]] = []
        if wire.response is not None:
            redact = tape.config.get("redact_headers", [])
            kept = redact_response_headers(wire.response.headers, redact)
            response_headers, body, _echoes = scrub_response(kept, body, echoed)
            content.update(
                response_status=wire.response.status,
                response_headers=response_headers,
                response_body_sha=exchanges.put_blob(body, session=session),
            )
        elif wire.error is not None:
            content.update(error_kind=wire.error.kind, error_message=wire.error.message)
        return exchanges.ExchangeContent(**content), response_headers

    @staticmethod
    def _bump(
        session: Session, pending: PendingRecord, model: DependencyModel, headers: list[list[str]]
    ) -> None:
        request = pending.request
        parts = RequestParts(
            method=request["method"], scheme="", host=request["host"], port=0, path=""
        )
        writes = frozenset(request.get("writes", [])) or frozenset({host_resource(parts)})
        classification = Classification(True, frozenset(), writes)
        written = recorded_writes(parts, model, classification, headers)
        bump_branch(session, pending.branch_id, written, pending.key_hash, request["body_sha"])
