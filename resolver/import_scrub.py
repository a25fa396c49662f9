"""Importing a tape never weakens redaction: what it stores is scrubbed by this deployment's
default rules, whatever the file says (DESIGN §4, issue 14).

An export from an older Groundhog, or a file edited by hand, may hold credentials that the
rules in force here would have replaced. Before the import commits, every exchange's request
headers, URL and readable key are passed through the default policy (the file's own narrowing
fields are not consulted), and response `Set-Cookie` headers are dropped. Addresses (key
hashes) are kept, so the tape still replays; a request body is keyed by content already.
"""

from __future__ import annotations

import re
from functools import partial
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from sqlalchemy import select
from sqlalchemy.orm import Session

from engine.redaction import DEFAULT_RESPONSE_HEADERS, Policy, policy_from_config
from engine.redaction_rules import Placeholders
from engine.tape_settings import TapeSettings
from store.models import Exchange

_QUERY_IN_KEY = re.compile(r"(\S+://\S+)")


def _scrub_match(match: re.Match[str], *, policy: Policy, marks: Placeholders) -> str:
    return _scrub_url(match.group(1), policy, marks)


def _scrub_url(url: str, policy: Policy, marks: Placeholders) -> str:
    parts = urlsplit(url)
    query = []
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        rule = policy.name_rule(name, frozenset(), "param")
        new = marks.replace(value, "query", rule) if rule else policy.scan(value, "query", marks)
        query.append((name, new))
    path = policy.scan(parts.path, "path", marks)
    return urlunsplit(parts._replace(path=path, query=urlencode(query, quote_via=quote)))


def scrub_imported(tape_id: int, key: bytes, *, session: Session) -> int:
    """Scrub the imported tape's exchanges in place; the number of exchanges changed."""
    policy = policy_from_config(TapeSettings())
    changed = 0
    for exchange in session.scalars(select(Exchange).where(Exchange.tape_id == tape_id)):
        marks = Placeholders(key, False)
        headers = []
        for name, value in exchange.request_headers or []:
            rule = policy.name_rule(name, frozenset(), "header")
            scrubbed = (
                marks.replace(value, "header", rule)
                if rule and "[redacted:" not in value
                else policy.scan(value, "header", marks)
            )
            headers.append([name, scrubbed])
        url = _scrub_url(exchange.request_url, policy, marks)
        key_text = _QUERY_IN_KEY.sub(
            partial(_scrub_match, policy=policy, marks=marks), exchange.key_readable
        )
        key_text = policy.scan(key_text, "body", marks)
        response = [
            pair
            for pair in exchange.response_headers or []
            if pair[0].lower() not in DEFAULT_RESPONSE_HEADERS
        ]
        if marks.findings or response != (exchange.response_headers or []):
            exchange.request_headers = headers
            exchange.request_url = url
            exchange.key_readable = key_text
            exchange.response_headers = response
            changed += 1
    return changed
