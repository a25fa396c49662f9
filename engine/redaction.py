"""Redaction: secrets never reach the store, and still key the same way (DESIGN §4).

Default-deny: before a request is keyed or written, every credential in it is replaced by a
keyed placeholder (`engine/redaction_rules.py`): headers, query parameters, form fields and
JSON fields (any depth) whose names say credential, and values in a known secret format
(`engine/secret_formats.py`) anywhere — path segments, any header, any query value, JSON
strings, form values, text bodies. Placeholders join the request key, so different identities
never share an answer unless the tape declares the host's credentials interchangeable.

A tape widens the rules (`redact_headers`, `redact_params`, `redact_json_paths`,
`redact_patterns`) or narrows them (`redact_keep`: names never treated as credentials;
`redact_disable`: rule names switched off, e.g. `high-entropy`). Without this an exported tape
would carry API keys to whoever receives it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from engine.redaction_bodies import redact_body
from engine.redaction_rules import (
    OAUTH_CALLBACK_NAMES,
    Finding,
    Placeholders,
    credential_word,
    oauth_callback,
)
from engine.request import RequestParts
from engine.secret_formats import (
    HIGH_ENTROPY,
    MIN_TOKEN,
    Format,
    FormatScanner,
    builtin_formats,
)
from engine.tape_settings import TapeSettings

DEFAULT_RESPONSE_HEADERS = frozenset({"set-cookie", "set-cookie2"})
# The scheme of an Authorization value stays readable; only its credentials are replaced.
_AUTH_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9_-]*) +(\S.*)$")
_AUTH_HEADERS = frozenset({"authorization", "proxy-authorization"})
_CONFIG_FIELDS = (
    "redact_headers",
    "redact_params",
    "redact_json_paths",
    "redact_patterns",
    "redact_keep",
    "redact_disable",
    "interchangeable_credentials",
)


@dataclass(frozen=True)
class Redacted:
    request: RequestParts
    findings: tuple[Finding, ...]
    secrets: tuple[tuple[str, str], ...]


class Policy:
    """A tape's redaction rules, compiled once per distinct config."""

    def __init__(
        self,
        *,
        headers: Iterable[str] = (),
        params: Iterable[str] = (),
        json_paths: Sequence[str] = (),
        patterns: Sequence[str] = (),
        keep: Iterable[str] = (),
        disable: Iterable[str] = (),
        interchangeable: Iterable[str] | str = (),
    ) -> None:
        self.headers = frozenset(name.lower() for name in headers)
        self.params = frozenset(params)
        self.json_paths = tuple(path.split(".") for path in json_paths)
        self.keep = frozenset(name.lower() for name in keep)
        self.disable = frozenset(disable)
        everywhere = interchangeable == "*" or (
            not isinstance(interchangeable, str) and "*" in interchangeable
        )
        self.interchangeable_all = everywhere
        self.interchangeable = frozenset(
            () if isinstance(interchangeable, str) else (h.lower() for h in interchangeable)
        )
        formats = tuple(fmt for fmt in builtin_formats() if fmt.rule not in self.disable)
        extra = tuple(Format(f"tape-pattern-{i}", p) for i, p in enumerate(patterns))
        self.scanner = FormatScanner(formats, entropy=HIGH_ENTROPY not in self.disable, extra=extra)

    def name_rule(
        self, name: str, configured: frozenset[str], kind: str, *, oauth: bool = False
    ) -> str | None:
        """The rule redacting a field called `name`, or None; `oauth` says the request is
        shaped like an OAuth callback, so its `code` and `state` are credentials too."""
        if oauth and name.lower() in OAUTH_CALLBACK_NAMES and name.lower() not in self.keep:
            return f"name-oauth-{name.lower()}"
        if not configured and not self.keep and "names" not in self.disable:
            word = credential_word(name)  # the common case: defaults only, cached
            return f"name-{word}" if word else None
        lowered = name.lower()
        if lowered in self.keep:
            return None
        if lowered in configured or name in configured:
            return f"tape-{kind}"
        if "names" in self.disable:
            return None
        word = credential_word(name)
        return f"name-{word}" if word else None

    def shares_identities(self, host: str) -> bool:
        return self.interchangeable_all or host in self.interchangeable

    def scan(self, text: str, where: str, marks: Placeholders) -> str:
        """`text` with every secret found by format replaced."""
        if len(text) < MIN_TOKEN and not self.scanner.extra:
            return text  # too short for any built-in format: the common case, kept cheap
        found = self.scanner.find(text)
        if not found:
            return text
        parts, last = [], 0
        for start, end, rule in found:
            parts.append(text[last:start])
            identity = rule != HIGH_ENTROPY
            parts.append(marks.replace(text[start:end], where, f"format-{rule}", identity=identity))
            last = end
        parts.append(text[last:])
        return "".join(parts)


def policy_from_config(settings: TapeSettings) -> Policy:
    """The compiled policy of a tape config (cached: the hit path asks for it on every ask)."""
    frozen = tuple(_freeze(getattr(settings, name)) for name in _CONFIG_FIELDS)
    return _policy(frozen)


def _freeze(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(value)
    return value if value is not None else ()


@lru_cache(maxsize=256)
def _policy(frozen: tuple[Any, ...]) -> Policy:
    headers, params, json_paths, patterns, keep, disable, interchangeable = frozen
    return Policy(
        headers=headers,
        params=params,
        json_paths=json_paths,
        patterns=patterns,
        keep=keep,
        disable=disable,
        interchangeable=interchangeable,
    )


# Per-connection nonces a protocol requires, not credentials: redacted, their placeholder would
# join the key and make every WebSocket upgrade an address of its own.
PROTOCOL_NONCES = frozenset({"sec-websocket-key"})


def _redact_header(name: str, value: str, policy: Policy, marks: Placeholders) -> str:
    if name.lower() in PROTOCOL_NONCES:
        return value
    rule = policy.name_rule(name, policy.headers, "header")
    if rule is None:
        return policy.scan(value, "header", marks)
    if name.lower() == "cookie":
        return _cookie_pairs_placeholder(value, rule, marks)
    scheme = _AUTH_SCHEME.match(value) if name.lower() in _AUTH_HEADERS else None
    if scheme:
        return f"{scheme.group(1)} {marks.replace(scheme.group(2), 'header', rule)}"
    return marks.replace(value, "header", rule)


def _cookie_pairs_placeholder(value: str, rule: str, marks: Placeholders) -> str:
    """`a=1; b=2` keyed per cookie, names readable: a cookie that a sealed replay served as its
    recorded `Set-Cookie` placeholder keys as the recorded cookie did, so the replayed login's
    later requests still hit (proxy/sandbox_answers.py)."""
    pairs = []
    for pair in value.split(";"):
        name, equals, cookie = pair.strip().partition("=")
        if not name and not equals:
            continue
        if not equals:
            pairs.append(marks.replace(name, "header", rule))
        else:
            keyed = marks.restamp(cookie.strip(), "header", rule, served_rule=SET_COOKIE_RULE)
            pairs.append(f"{name}={keyed}")
    return "; ".join(pairs)


def redact_request(request: RequestParts, policy: Policy, key: bytes) -> Redacted:
    """The request as it may be keyed and stored, what fired, and the raw secrets it held."""
    marks = Placeholders(key, policy.shares_identities(request.normalised_host))
    headers = [
        (name, _redact_header(name, value, policy, marks)) for name, value in request.headers
    ]
    query = []
    oauth = oauth_callback(request.path, (name for name, _value in request.query))
    for name, value in request.query:
        rule = policy.name_rule(name, policy.params, "param", oauth=oauth)
        if rule is not None:
            query.append((name, marks.replace(value, "query", rule)))
        else:
            query.append((name, policy.scan(value, "query", marks)))
    path = policy.scan(request.path, "path", marks)
    body, headers = redact_body(request.body, headers, policy, marks, path=request.path)
    redacted = request.with_changes(
        headers=tuple(headers), query=tuple(query), path=path, body=body
    )
    return Redacted(redacted, tuple(marks.findings), tuple(marks.secrets))


# Requests up to this size (body, path, header and query values) are remembered, at most
# CACHED_REQUESTS of them, so the cache holds a few tens of MiB at worst.
CACHED_BODY_BYTES = 16 * 1024
CACHED_REQUESTS = 2048


@lru_cache(maxsize=CACHED_REQUESTS)
def _redact_cached(request: RequestParts, policy: Policy, key: bytes) -> Redacted:
    return redact_request(request, policy, key)


def redact_request_cached(request: RequestParts, policy: Policy, key: bytes) -> Redacted:
    """`redact_request`, remembered for small requests: the siblings of a group send the same
    request, and each of them is redacted on the hit path. Memory only, and bounded."""
    size = len(request.body) + len(request.path)
    size += sum(len(value) for _name, value in request.headers)
    size += sum(len(value) for _name, value in request.query)
    if size > CACHED_BODY_BYTES:
        return redact_request(request, policy, key)
    return _redact_cached(request, policy, key)


SET_COOKIE_RULE = "set-cookie"


def _cookie_placeholder(value: str, marks: Placeholders) -> str:
    """`name=value; attributes` with the value a keyed placeholder, the rest readable."""
    pair, semicolon, attributes = value.partition(";")
    name, equals, cookie = pair.partition("=")
    if not equals:
        return marks.replace(value, "response", SET_COOKIE_RULE)
    cookie = cookie.strip()
    return f"{name}={marks.replace(cookie, 'response', SET_COOKIE_RULE)}{semicolon}{attributes}"


def redact_response_headers(
    headers: Iterable[Sequence[str]], extra: Iterable[str] = (), *, key: bytes
) -> list[tuple[str, str]]:
    """Response headers as a tape may keep them: a `Set-Cookie` value becomes a keyed
    placeholder (a branch's own live write still gets its real cookie: proxy/live.py; reads
    served from the tape drop the placeholder, a replayed write keeps it:
    proxy/sandbox_answers.py), and the tape's extra
    `redact_headers` are dropped."""
    dropped = {name.lower() for name in extra} - DEFAULT_RESPONSE_HEADERS
    marks = Placeholders(key, False)
    kept = []
    for name, value in headers:
        lowered = name.lower()
        if lowered in DEFAULT_RESPONSE_HEADERS:
            kept.append((name, _cookie_placeholder(value, marks)))
        elif lowered not in dropped:
            kept.append((name, value))
    return kept
