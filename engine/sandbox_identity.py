"""Sandbox identity: the values that select a branch's sandbox in the world (DESIGN §3).

`Mcp-Session-Id`, and the headers and cookies a tape names (`sandbox_headers`,
`sandbox_cookies`), say *whose* sandbox a request reaches, not what it asks. Were they keyed,
siblings with their own sessions would never share a read; were they credentials (keyed
placeholders, as the word `session` would make them), the same; were they stored in clear, a
tape would hand one branch's session to another, whose closing `DELETE` would then end it for
everyone. So they leave the request before it is redacted and keyed (the live call still
carries them: the proxy forwards the worker's own request), and a recorded answer keeps a
marker in their place, which the proxy replaces with the asker's own value (proxy/answers.py).
Credentials stay credentials: this module never touches what engine/redaction.py redacts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from engine.request import RequestParts
from engine.tape_settings import TapeSettings

DEFAULT_HEADERS = frozenset({"mcp-session-id"})
# What a stored answer holds in place of a sandbox header's value (never a secret's form, so it
# joins no key and no redaction counts it).
MARKER = "[sandbox]"


def sandbox_headers(settings: TapeSettings) -> frozenset[str]:
    named = settings.sandbox_headers
    if not named:
        return DEFAULT_HEADERS
    return DEFAULT_HEADERS | {name.lower() for name in named}


def _without_cookies(value: str, names: frozenset[str]) -> str:
    kept = [
        part.strip()
        for part in value.split(";")
        if part.strip() and part.split("=", 1)[0].strip() not in names
    ]
    return "; ".join(kept)


def without_sandbox_identity(request: RequestParts, settings: TapeSettings) -> RequestParts:
    """The request with its sandbox headers and cookies removed (the rest as it was)."""
    headers = sandbox_headers(settings)
    cookies = frozenset(settings.sandbox_cookies)
    kept: list[tuple[str, str]] = []
    changed = False
    for name, value in request.headers:
        lowered = name.lower()
        if lowered in headers:
            changed = True
            continue
        if cookies and lowered == "cookie":
            rest = _without_cookies(value, cookies)
            changed = changed or rest != value
            if rest:
                kept.append((name, rest))
            continue
        kept.append((name, value))
    return request.with_changes(headers=tuple(kept)) if changed else request


def stored_response_headers(
    headers: Iterable[Sequence[str]], settings: TapeSettings
) -> list[tuple[str, str]]:
    """Response headers as a recording keeps them: each sandbox header's value a marker."""
    names = sandbox_headers(settings)
    return [(name, MARKER if name.lower() in names else value) for name, value in headers]
