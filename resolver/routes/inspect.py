"""Inspection routes: what each branch was served (events), one exchange, report and digest."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request

from engine.policy import Decision
from groundhog.protocol.admin import EventPage, TapeDigest
from groundhog.protocol.wire import encode_base64
from resolver.advice import advice_section
from resolver.audit import audit_document, audit_tape
from resolver.auth import require_admin
from resolver.errors import NotFound
from resolver.protocol_report import protocol_summary
from resolver.redaction_report import redaction_summary
from resolver.report import ReportView
from resolver.routes.leases import settle_before
from resolver.routes.tapes import find_tape, store_of
from resolver.schemas import check_branch_path
from resolver.tape_signals import cost_section, counted_report, signed_report
from store import exchanges, inspect
from store.branches import get_branch
from store.db import transaction
from store.digest import tape_digest

router = APIRouter(prefix="/v1/tapes", tags=["inspect"], dependencies=[Depends(require_admin)])

# Ids and cursors are 64-bit in the store; larger values are refused, not overflowed.
MAX_ID = 2**63 - 1
ANSWERED_502 = frozenset({Decision.REFUSED, Decision.UPSTREAM_FAILED})
REPORT_VIEW = (
    "`counts`: the decision counts and the unrecorded list only (no signals, digests, "
    "contamination, redaction, protocols or costs), cheap enough to ask after every group"
)


@router.get("/{tape}/events", response_model=EventPage)
def events(
    tape: str,
    request: Request,
    branch: str | None = None,
    after: int = Query(default=0, ge=0, le=MAX_ID),
    limit: int = Query(default=100, ge=1, le=1000),
) -> dict[str, Any]:
    """Paged events. With `branch`, `after` is that branch's seq; without, the event id."""
    if branch is not None:
        check_branch_path(branch)
    settle_before(request, tape, branch)
    with transaction(store_of(request).read) as session:
        found = find_tape(tape, session=session)
        if branch is not None and get_branch(found.id, branch, session=session) is None:
            raise NotFound(f"branch {branch!r} does not exist on tape {tape!r}", branch=branch)
        rows = inspect.events_page(
            found.id, branch=branch, after=after, limit=limit, session=session
        )
    page = [
        {
            "id": row.id,
            "seq": row.seq,
            "branch": row.branch,
            "method": row.method,
            "url": row.url,
            "request_key": row.key_hash,
            "occurrence": row.occurrence,
            "fingerprint": row.fingerprint,
            "decision": row.decision,
            "exchange_id": row.exchange_id,
            # A refusal or an upstream failure has no exchange, but the worker was answered 502.
            "status": 502 if row.decision in ANSWERED_502 else row.status,
        }
        for row in rows
    ]
    cursor = None
    if len(rows) == limit:
        cursor = rows[-1].seq if branch is not None else rows[-1].id
    return {"events": page, "next_after": cursor}


@router.get("/{tape}/exchanges/{exchange_id}")
def exchange(
    tape: str, request: Request, exchange_id: int = Path(ge=0, le=MAX_ID)
) -> dict[str, Any]:
    with transaction(store_of(request).read) as session:
        found = find_tape(tape, session=session)
        row = exchanges.get_exchange(found.id, exchange_id, session=session)
        if row is None:
            raise NotFound(
                f"exchange {exchange_id} is not on tape {tape!r}", exchange_id=exchange_id
            )
        response = None
        if row.error_kind is None:
            response = {
                "status": row.response_status,
                "headers": row.response_headers or [],
                "body": encode_base64(exchanges.get_blob(row.response_body_sha, session=session)),
            }
        return {
            "id": row.id,
            "request_key": row.key_hash,
            "key_readable": row.key_readable,
            "occurrence": row.occurrence,
            "fingerprint": row.fingerprint,
            "request": {
                "method": row.request_method,
                "url": row.request_url,
                "headers": row.request_headers,
                "body": encode_base64(exchanges.get_blob(row.request_body_sha, session=session)),
            },
            "response": response,
            "error": None
            if row.error_kind is None
            else {"kind": row.error_kind, "message": row.error_message},
        }


@router.get("/{tape}/report")
def report(
    tape: str,
    request: Request,
    view: Annotated[ReportView, Query(description=REPORT_VIEW)] = ReportView.FULL,
) -> dict[str, Any]:
    settle_before(request, tape)
    with transaction(store_of(request).read) as session:
        found = find_tape(tape, session=session)
        if view is ReportView.COUNTS:
            return counted_report(found, session=session)
        result = signed_report(found, session=session)
        result["redaction"] = redaction_summary(found.id, found.settings, session=session)
        result["costs"] = cost_section(found, session=session)
        result["protocols"] = protocol_summary(found.id, found.settings, session=session)
        result["advice"] = advice_section(found.id, session=session)
        return result


@router.get("/{tape}/digest", response_model=TapeDigest)
def digest(tape: str, request: Request) -> dict[str, Any]:
    settle_before(request, tape)
    with transaction(store_of(request).read) as session:
        found = find_tape(tape, session=session)
        value, count = tape_digest(found.id, session=session)
        return {"tape": found.name, "digest": value, "exchanges": count}


@router.get("/{tape}/audit")
def audit(tape: str, request: Request) -> dict[str, Any]:
    """Where the tape's stored bytes still look like secrets, by rule; never the values."""
    with transaction(store_of(request).read) as session:
        found = find_tape(tape, session=session)
        return audit_document(found.name, audit_tape(found.id, found.settings, session=session))
