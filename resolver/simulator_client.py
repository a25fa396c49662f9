"""Asks a tape's simulator for a sealed miss's answer and records it at the address.

The resolve path has already claimed the address (single flight, as for a live fetch) and
written a pending record with decision `simulated`; this module makes the call, outside any
store transaction, and commits the answer through the same `Recorder` the proxy's records go
through — so siblings waiting on the address are served it as they would the world's. A
simulator that fails (unreachable, slow, malformed answer) records nothing: the ask gets the
sealed-miss 502 saying why, and the next ask tries again.
"""

from __future__ import annotations

import logging
from typing import Any

import httpx
from sqlalchemy.orm import Session

from engine.asks import Ask
from engine.near_miss import NearMiss
from engine.policy import Decision
from engine.simulation import marked_response, simulator_request
from groundhog.protocol.wire import WireResponse, encode_base64
from resolver import answers, misses
from resolver.recording import Recorder
from resolver.schemas import RecordRequest, ResponseIn
from store import claims, counters, exchanges
from store.db import Store, transaction

logger = logging.getLogger(__name__)

SIMULATOR_TIMEOUT_SECONDS = 30.0
NEAREST_SENT = 3


class SimulatorClient:
    def __init__(self, store: Store, *, max_body_bytes: int, redaction_key: bytes) -> None:
        self.store = store
        self.recorder = Recorder(store, max_body_bytes=max_body_bytes, redaction_key=redaction_key)
        self.max_body_bytes = max_body_bytes

    def answer(self, ask: Ask, ticket: str) -> tuple[Decision, WireResponse]:
        """Turn a claimed `simulated` forward into a recorded answer, or a refusal saying why."""
        assert ask.simulator_url
        with transaction(self.store.read) as session:
            near = misses.near_misses(session, ask)
            nearest = [self._with_response(session, ask, miss) for miss in near[:NEAREST_SENT]]
        try:
            reply = httpx.post(
                ask.simulator_url,
                json=simulator_request(ask, nearest),
                timeout=SIMULATOR_TIMEOUT_SECONDS,
                trust_env=False,
            )
            reply.raise_for_status()
            status, headers, body = marked_response(reply.json())
            if len(body) > self.max_body_bytes:
                raise ValueError(f"body of {len(body)} bytes is over max_body_bytes")
        except (httpx.HTTPError, ValueError) as error:
            logger.warning("simulator %s failed: %s", ask.simulator_url, error)
            return self._refuse(ask, ticket, f"the tape's simulator failed ({error})")
        record = RecordRequest(
            ticket=ticket,
            response=ResponseIn(
                status=status,
                headers=[(name, value) for name, value in headers],
                body=encode_base64(body),
            ),
        )
        result = self.recorder.record(record)
        with transaction(self.store.read) as session:
            exchange = exchanges.find_exchange(
                ask.tape_id, ask.key.hash, ask.occurrence, ask.fingerprint, session=session
            )
            assert exchange is not None and exchange.id == result.exchange_id
            response = answers.recorded(exchange, session=session, tape_name=ask.tape_name)
        return Decision.SIMULATED, response

    @staticmethod
    def _with_response(session: Session, ask: Ask, miss: NearMiss) -> dict[str, Any]:
        """A near miss as the simulator sees it: the explanation and its first recording."""
        shown = miss.as_json()
        first = miss.recordings[0] if miss.recordings else None
        if first is not None:
            key_hash = exchanges.sha256_hex(miss.key.encode())
            answer = exchanges.find_answer(
                ask.tape_id, key_hash, first.occurrence, first.fingerprint, session=session
            )
            if answer is not None and answer.error_kind is None:
                shown["response"] = answers.from_answer(answer)
        return shown

    def _refuse(self, ask: Ask, ticket: str, reason: str) -> tuple[Decision, WireResponse]:
        with transaction(self.store.write) as session:
            record = claims.pop_pending(ticket, session=session)
            claims.release_claim(ticket, session=session)
            if record is not None:
                exchanges.finish_event(
                    record.event_id,
                    decision=str(Decision.REFUSED),
                    exchange_id=None,
                    session=session,
                )
                # A refusal is an answer: it takes the occurrence the claimed ask gave back.
                counters.advance_occurrence(
                    record.branch_id,
                    record.key_hash,
                    record.occurrence,
                    attempt=ask.attempt,
                    session=session,
                )
            return Decision.REFUSED, misses.sealed_miss(session, ask, simulator_error=reason)
