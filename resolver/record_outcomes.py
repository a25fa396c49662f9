"""What a record writes for the answer the world gave, and what the proxy is told to serve.

Inside the record's one transaction (resolver/recording.py), once its pending record is taken
and its claim released: a complete answer (or a transport failure the tape opts to record) is
stored as the address's exchange — first recording wins, so a read that lost the race is served
the winner's bytes, as a sibling would be — with the tape's hints and, for a write, the
branch's version bumps and its own answer (store/write_answers.py); a transport failure that
is not recorded is served as a 502 `upstream-failed`, unless a read's address was recorded
meanwhile. Each finishes the ask's event. Kept apart from the Recorder's commit flow so that
flow reads as take, release, settle; without these the proxy would have nothing consistent to
serve the recording branch, and a lost race could serve different bytes to it than to its
siblings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy.orm import Session

from engine.cache import Address
from engine.dependencies import Classification, origin_resource, recorded_writes, response_hints
from engine.fingerprint import BASE_VERSION, bump_versions, unknown_version
from engine.mcp_tools import hint_value, is_tools_list, read_only_tools, tools_key_hash
from engine.policy import Decision, DependencyModel
from engine.refs import TapeRef
from engine.request import DEFAULT_PORTS, RequestParts
from engine.session_labels import opened_label, opened_session, session_hash
from groundhog.protocol.wire import WireResponse, encode_base64, wire_response
from resolver import answers
from resolver.echoes import Secrets
from resolver.resolve_tx.units import Unit
from resolver.schemas import RecordRequest
from resolver.stored_form import Form, exchange_content
from store import counters, exchanges, sandbox_sessions, write_answers
from store.claims import Pending
from store.exchanges import ExchangeContent
from store.hints import set_hint
from store.models import PendingRecord
from store.versions import set_versions, versions_of

# A recorded read's answer up to this size is kept in memory by its record (RecordResult.kept):
# its first hit is then served without a read; a larger one waits for its first hit, so a tape
# nobody forks does not spend memory and encoding on bodies nobody asks for again.
KEPT_MAX_BYTES = 64 * 1024


@dataclass(frozen=True)
class RecordResult:
    decision: str
    exchange_id: int | None
    # What the worker must be served; body None: identical to the body the proxy sent.
    response: WireResponse | None
    recorded: bool
    # A read's answer this record stored as its address's exchange, for the resolver's memory
    # once committed (engine/cache.py); None for a write, a lost race or no answer.
    kept: exchanges.RecordedAnswer | None = field(default=None, repr=False, compare=False)
    # What the read's fetcher is served instead of `response` when the world issued it
    # credentials: `response` with them as received (never stored, never shared: DESIGN §4).
    as_received: WireResponse | None = field(default=None, repr=False, compare=False)


def pending_address(pending: PendingRecord | Pending) -> Address:
    """The address a pending record was handed out for: where its recording goes."""
    return (pending.tape_id, pending.key_hash, pending.occurrence, pending.fingerprint)


def store_answer(
    unit: Unit,
    pending: Pending,
    tape: TapeRef,
    wire: RecordRequest,
    body: bytes,
    echoed: Secrets,
    *,
    redaction_key: bytes,
) -> RecordResult:
    """The answer stored as the address's exchange (unless another recorded it first)."""
    connection = unit.connection
    content, stored_body, received = exchange_content(
        unit, pending, tape, wire, body, echoed, redaction_key=redaction_key
    )
    address = pending_address(pending)
    new_id = exchanges.insert_new_exchange(*address, content, session=connection)
    winner = None if new_id is not None else exchanges.find_winner(*address, session=unit.session)
    created = winner is None
    exchange_id = new_id if winner is None else winner.id
    # A read that lost the race is served the winner's bytes, as a sibling would be.
    decision = pending.decision if created or pending.is_write else str(Decision.SHARED)
    finish_event(unit, pending, decision, exchange_id)
    model = DependencyModel(tape.dependency_model)
    response_headers = (winner.response_headers if winner else content.response_headers) or []
    hints = response_hints(response_headers)
    if created and model is DependencyModel.HINTS and hints is not None:
        set_hint(tape.id, pending.key_hash, *hints, session=unit.session)
    if created:
        learn_read_only_tools(unit.session, tape.id, pending.request, content, stored_body)
    if pending.is_write:
        bump_write_versions(unit.session, pending, model, response_headers)
        keep_own_write_answer(unit, pending, content)
        if wire.response is not None:
            remember_opened_session(unit, pending, tape, wire.response.headers, redaction_key)
    if created and wire.response is not None:
        # What was just stored, without reading the blob back; a body byte-identical to
        # what the proxy sent is not repeated.
        assert content.response_status is not None
        response = wire_response(
            content.response_status,
            content.response_headers or [],
            None if stored_body == body else encode_base64(stored_body),
        )
        kept = None
        assert exchange_id is not None  # created: the new exchange's
        if not pending.is_write and len(stored_body) <= KEPT_MAX_BYTES:
            kept = exchanges.RecordedAnswer(
                exchange_id=exchange_id,
                status=content.response_status,
                headers=content.response_headers or [],
                body_sha=content.response_body_sha,
                body=stored_body,
                error_kind=None,
            )
        return RecordResult(
            decision,
            exchange_id,
            response,
            created,
            kept,
            _as_received(content.response_status, received, body, pending.is_write),
        )
    stored = winner or exchanges.find_exchange(*address, session=unit.session)
    assert stored is not None
    response = answers.recorded(stored, session=unit.session, tape_name=tape.name)
    return RecordResult(decision, exchange_id, response, created)


def _as_received(
    status: int, received: Form | None, body: bytes, is_write: bool
) -> WireResponse | None:
    """The answer a read's fetcher is served when the world issued it credentials: it received
    them live and must be able to use them (a write is served its live answer anyway). Only the
    fetcher whose answer became the recording: one that lost the race, and every sibling served
    the recording, gets the stored form and so surrogates (proxy/sandbox_answers.py)."""
    if received is None or is_write:
        return None
    headers, received_body = received
    return wire_response(
        status, headers, None if received_body == body else encode_base64(received_body)
    )


def keep_own_write_answer(unit: Unit, pending: Pending, content: exchanges.ExchangeContent) -> None:
    """The branch's own answer to its write, kept beside the address's exchange (which may be
    a sibling's): a sealed tape serves each lineage its own (store/write_answers.py)."""
    if content.response_status is None:
        return
    _, key_hash, occurrence, fingerprint = pending_address(pending)
    write_answers.keep_write_answer_later(
        pending.branch_id,
        key_hash,
        occurrence,
        fingerprint,
        status=content.response_status,
        headers=content.response_headers or [],
        body_sha=content.response_body_sha,
        unit=unit,
    )


def remember_opened_session(
    unit: Unit,
    pending: Pending,
    tape: TapeRef,
    live_headers: Sequence[Sequence[str]],
    redaction_key: bytes,
) -> None:
    """A write sent outside any session whose live answer hands one out (`initialize`) opened
    that session: remembered by the id's keyed hash as this ask's (engine/session_labels.py)."""
    if pending.request.get("in_session"):
        return
    opened = opened_session(live_headers, tape.settings)
    if opened is None:
        return
    sandbox_sessions.remember_session_later(
        pending.branch_id,
        session_hash(opened, redaction_key),
        opened_label(pending.key_hash, pending.occurrence),
        unit=unit,
    )


def upstream_failed(
    unit: Unit, pending: Pending, tape: TapeRef, wire: RecordRequest
) -> RecordResult:
    """Not the world's answer: nothing stored, unless a read's address was recorded since."""
    if not pending.is_write:
        won = exchanges.find_exchange(*pending_address(pending), session=unit.session)
        if won is not None:
            finish_event(unit, pending, Decision.SHARED, won.id)
            response = answers.recorded(won, session=unit.session, tape_name=tape.name)
            return RecordResult(str(Decision.SHARED), won.id, response, False)
    assert wire.error is not None
    finish_event(unit, pending, Decision.UPSTREAM_FAILED, None)
    response = answers.upstream_failed(
        tape_name=tape.name,
        key_readable=pending.request["key_readable"],
        occurrence=pending.occurrence,
        fingerprint=pending.fingerprint,
        kind=wire.error.kind,
        message=wire.error.message,
    )
    return RecordResult(str(Decision.UPSTREAM_FAILED), None, response, False)


def finish_event(unit: Unit, pending: Pending, decision: str, exchange_id: int | None) -> None:
    """The forward's event takes its final decision and, when one was kept, its exchange (with
    the record's commit: nothing reads it back). A read's answer takes its occurrence now (its
    resolve gave it back): unless it failed before the world answered, when the next ask of
    the lineage asks the same occurrence again (store/counters.py)."""
    exchanges.finish_event_later(
        pending.event_id, decision=str(decision), exchange_id=exchange_id, unit=unit
    )
    if not pending.is_write and decision != Decision.UPSTREAM_FAILED:
        counters.advance_occurrence_later(
            pending.branch_id,
            pending.key_hash,
            pending.occurrence,
            attempt=pending.request.get("attempt"),
            unit=unit,
        )


def recorded_write(pending: Pending) -> tuple[RequestParts, Classification]:
    """The write a pending record was handed out for, as `recorded_writes` reads it: its
    method and origin, and the resources it writes (its origin's, if none were kept)."""
    request = pending.request
    url = urlsplit(request["url"])
    port = url.port or DEFAULT_PORTS.get(url.scheme, 0)
    parts = RequestParts(
        method=request["method"], scheme=url.scheme, host=request["host"], port=port, path=""
    )
    writes = frozenset(request.get("writes", [])) or frozenset({origin_resource(parts)})
    return parts, Classification(True, frozenset(), writes)


def bump_write_versions(
    session: Session, pending: Pending, model: DependencyModel, headers: list[list[str]]
) -> None:
    """A recorded write moves its branch's versions on by what it wrote, replacing the unknown
    versions its intent left (resolver/final_steps.py `write_intent_later`).

    A resource still holding this write's intent chains from its version before the write
    (so a write recorded after its intent gets exactly the version it would have had without
    one); one the intent marked but the write turned out not to touch (the `hints` model names
    them in the answer) gets that version back. A resource another write changed since keeps
    moving on from where it is, as before."""
    parts, classification = recorded_write(pending)
    written = recorded_writes(parts, model, classification, headers)
    marked = classification.writes
    before: dict[str, str] = pending.request.get("before", {})
    current = versions_of(pending.branch_id, written | marked, session=session)

    def intended(resource: str) -> bool:
        intent = unknown_version(pending.branch_id, pending.key_hash, pending.occurrence, resource)
        return current.get(resource) == intent

    chained = {
        resource: before.get(resource, BASE_VERSION) if intended(resource) else version
        for resource, version in current.items()
    }
    moved = bump_versions(chained, written, pending.key_hash, pending.request["body_sha"])
    restored = {r: before.get(r, BASE_VERSION) for r in marked - written if intended(r)}
    set_versions(pending.branch_id, {**restored, **moved}, session=session)


def learn_read_only_tools(
    session: Session,
    tape_id: int,
    request: Mapping[str, Any],
    content: ExchangeContent,
    stored_body: bytes,
) -> None:
    """Keep what a just-recorded `tools/list` answer declared read-only (first one wins)."""
    if not is_tools_list(str(request.get("key_readable", ""))):
        return
    headers = {name.lower(): value for name, value in content.response_headers or []}
    names = read_only_tools(
        stored_body, headers.get("content-type"), headers.get("content-encoding")
    )
    set_hint(tape_id, tools_key_hash(str(request["url"])), hint_value(names), "", session=session)
