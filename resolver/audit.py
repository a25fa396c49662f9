"""Audit: what a tape's stored bytes still hold that looks like a secret (issue 31, item 5).

Redaction runs before anything is stored, but a tape made before a rule existed (an older
Groundhog, a hand-edited import, a world that answers with a key of its own) may still hold
credentials, and an export or a published dataset would carry them to whoever receives it.
The audit re-reads every stored part of a tape with the rules in force now and says where
something would still be replaced, and by which rule, never the value:

- the request side (URL, headers, body blob decoded per its `Content-Encoding`, the readable
  key, each event's URL) by the very redaction the record path runs (`redact_request` under
  the tape's policy), so a finding means "recording it today would have replaced this", and a
  tape recorded under these rules is clean by construction (placeholders are left alone);
- the response side (headers, body blob decoded) by the named secret formats only, plus a kept
  `Set-Cookie`: responses are served byte for byte, so they are scrubbed of echoes, not of
  every random id, and the entropy rule would flag ids the world hands out.

Both sides also get a second opinion (resolver/audit_second_opinion.py): detect-secrets' plugins
over the same stored text (URLs, `name: value` header lines, bodies decoded from their content
coding, a compressed payload inside opened too, events' URLs), so a secret that our rules do not
know, or that a tape switched a rule off for, is still found; its findings' rules start with
`detect-secrets-`.

`GET /v1/tapes/{tape}/audit` answers `{"tape", "clean", "findings": [{"exchange", "where",
"rule"}]}`; export refuses a tape whose audit is not clean unless told `allow_unscrubbed`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from sqlalchemy import select
from sqlalchemy.orm import Session

from engine.content_coding import decode_content, decode_sniffed
from engine.redaction import DEFAULT_RESPONSE_HEADERS, Policy, policy_from_config, redact_request
from engine.redaction_rules import PLACEHOLDER
from engine.request import RequestParts
from engine.secret_formats import FormatScanner, builtin_formats
from engine.tape_settings import TapeSettings
from resolver.audit_second_opinion import second_opinion
from resolver.errors import ResolverError
from store.exchanges import get_blob
from store.models import Branch, Event, Exchange

# Placeholders are only read for their findings here: no digest leaves this module.
_AUDIT_KEY = b"groundhog-audit-reads-findings-only"
_BODY_HEADERS = frozenset({"content-type", "content-encoding"})


class UnscrubbedTape(ResolverError):
    """An export of a tape whose audit found secrets, not told to allow it."""

    status, slug, title = 409, "unscrubbed-tape", "Tape holds unscrubbed secrets"


@dataclass(frozen=True, order=True)
class AuditFinding:
    exchange: int | None
    where: str
    rule: str


@cache
def _response_scanner() -> FormatScanner:
    return FormatScanner(builtin_formats(), entropy=False)


def _rules(request: RequestParts, policy: Policy) -> list[str]:
    return sorted(
        {finding.rule for finding in redact_request(request, policy, _AUDIT_KEY).findings}
    )


def _url_request(method: str, url: str) -> RequestParts:
    parts = urlsplit(url)
    default = 443 if parts.scheme == "https" else 80
    return RequestParts(
        method,
        parts.scheme or "http",
        parts.hostname or "",
        parts.port or default,
        unquote(parts.path) or "/",
        tuple(parse_qsl(parts.query, keep_blank_values=True)),
    )


def _header(headers: Iterable[list[str]], name: str) -> str | None:
    return next((value for key, value in headers if key.lower() == name), None)


def _decoded_text(body: bytes, encoding: str | None) -> str | None:
    """A stored body as text, its content coding undone (and a compressed payload inside)."""
    decoded = decode_content(body, encoding) if body else None
    if not decoded:
        return None
    sniffed = decode_sniffed(decoded)
    return (sniffed[0] if sniffed is not None else decoded).decode("latin-1")


def _second_opinions(
    exchange: Exchange, request_body: bytes, response_body: bytes
) -> Iterable[tuple[str, str]]:
    """detect-secrets' findings in every stored part of an exchange."""
    for rule in second_opinion(exchange.request_url):
        yield "request.url", rule
    for side, pairs in (
        ("request", exchange.request_headers or []),
        ("response", exchange.response_headers or []),
    ):
        for name, value in pairs:
            for rule in second_opinion(f"{name}: {value}"):
                yield f"{side}.headers.{name}", rule
    for side, body, headers in (
        ("request", request_body, exchange.request_headers or []),
        ("response", response_body, exchange.response_headers or []),
    ):
        text = _decoded_text(body, _header(headers, "content-encoding"))
        if text:
            for rule in second_opinion(text):
                yield f"{side}.body", rule


def _request_findings(exchange: Exchange, body: bytes, policy: Policy) -> Iterable[tuple[str, str]]:
    url = _url_request(exchange.request_method, exchange.request_url)
    for rule in _rules(url, policy):
        yield "request.url", rule
    headers = [(name, value) for name, value in exchange.request_headers or []]
    for name, value in headers:
        for rule in _rules(url.with_changes(query=(), path="/", headers=((name, value),)), policy):
            yield f"request.headers.{name}", rule
    if body:
        described = tuple((n, v) for n, v in headers if n.lower() in _BODY_HEADERS)
        request = url.with_changes(query=(), headers=described, body=body)
        findings = redact_request(request, policy, _AUDIT_KEY).findings
        for rule in sorted({f.rule for f in findings if f.where not in ("header", "path")}):
            yield "request.body", rule
    for _start, _end, rule in policy.scanner.find(exchange.key_readable):
        yield "request.key", f"format-{rule}"


def _cookie_is_placeholder(value: str) -> bool:
    """A `Set-Cookie` as the tape keeps it now: its value a keyed placeholder (older tapes kept
    none; one kept in clear is a finding)."""
    pair = value.partition(";")[0]
    cookie = pair.partition("=")[2].strip() if "=" in pair else pair.strip()
    return PLACEHOLDER.fullmatch(cookie) is not None


def _response_findings(exchange: Exchange, body: bytes) -> Iterable[tuple[str, str]]:
    headers = exchange.response_headers or []
    scanner = _response_scanner()
    for name, value in headers:
        if name.lower() in DEFAULT_RESPONSE_HEADERS:
            if not _cookie_is_placeholder(value):
                yield f"response.headers.{name}", "response-set-cookie"
            continue
        for _start, _end, rule in scanner.find(value):
            yield f"response.headers.{name}", f"format-{rule}"
    text = _decoded_text(body, _header(headers, "content-encoding"))
    if text:
        for _start, _end, rule in scanner.find(text):
            yield "response.body", f"format-{rule}"


def audit_tape(tape_id: int, settings: TapeSettings, *, session: Session) -> list[AuditFinding]:
    """Every place in the tape's stored bytes that still looks like a secret (sorted, unique)."""
    policy = policy_from_config(settings)
    found: set[AuditFinding] = set()
    for exchange in session.scalars(select(Exchange).where(Exchange.tape_id == tape_id)):
        request_body = get_blob(exchange.request_body_sha, session=session)
        response_body = get_blob(exchange.response_body_sha, session=session)
        for where, rule in _request_findings(exchange, request_body, policy):
            found.add(AuditFinding(exchange.id, where, rule))
        for where, rule in _response_findings(exchange, response_body):
            found.add(AuditFinding(exchange.id, where, rule))
        for where, rule in _second_opinions(exchange, request_body, response_body):
            found.add(AuditFinding(exchange.id, where, rule))
    events = session.execute(
        select(Event.exchange_id, Event.method, Event.url)
        .join(Branch, Branch.id == Event.branch_id)
        .where(Branch.tape_id == tape_id)
    )
    for exchange_id, method, url in events:
        for rule in _rules(_url_request(method, url), policy) + sorted(second_opinion(url)):
            found.add(AuditFinding(exchange_id, "event.url", rule))
    return sorted(found, key=lambda f: (f.exchange or 0, f.where, f.rule))


def audit_document(name: str, findings: list[AuditFinding]) -> dict[str, Any]:
    """The audit route's answer (issue 31's shape; `tape publish` reads it)."""
    return {
        "tape": name,
        "clean": not findings,
        "findings": [{"exchange": f.exchange, "where": f.where, "rule": f.rule} for f in findings],
    }


def refuse_unscrubbed(name: str, findings: list[AuditFinding]) -> None:
    """Raise `UnscrubbedTape` naming where (never what) when the audit is not clean."""
    if not findings:
        return
    places = sorted({f"{f.where} ({f.rule})" for f in findings})
    shown = ", ".join(places[:5]) + (f" and {len(places) - 5} more" if len(places) > 5 else "")
    raise UnscrubbedTape(
        f"tape {name!r} still holds {len(findings)} value(s) that look like secrets: {shown}; "
        f"see `groundhog tape audit {name}` (GET /v1/tapes/{name}/audit), re-record or "
        "re-import it, or export anyway with --allow-unscrubbed (allow_unscrubbed=true)",
        tape=name,
        findings=len(findings),
    )
