"""Sandbox identity: the values that select a branch's sandbox in the world (DESIGN §3).

`Mcp-Session-Id`, and the headers and cookies a tape names (`sandbox_headers`,
`sandbox_cookies`), say *whose* sandbox a request reaches, not what it asks. Were they keyed,
siblings with their own sessions would never share a read; were they credentials (keyed
placeholders, as the word `session` would make them), the same; were they stored in clear, a
tape would hand one branch's session to another, whose closing `DELETE` would then end it for
everyone. So they leave the request before it is redacted and keyed (the live call still
carries them: the proxy forwards the worker's own request), and a recorded answer keeps a
marker in their place, which the proxy replaces with the asker's own value (`own_sandbox_fields`,
applied by proxy/sandbox_answers.py and by the sealed replay, resolver/verify/replay.py).
Credentials stay credentials: this module never touches what engine/redaction.py redacts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from engine.request import RequestParts
from engine.tape_settings import TapeSettings
from groundhog.protocol.sandbox import minted_session

DEFAULT_HEADERS = frozenset({"mcp-session-id"})
# What a stored answer holds in place of a sandbox header's value (never a secret's form, so it
# joins no key and no redaction counts it).
MARKER = "[sandbox]"
MARKER_BYTES = MARKER.encode("latin-1")
# How engine/redaction.py stores a Set-Cookie value.
COOKIE_PLACEHOLDER = b"=[redacted:set-cookie:"
_SET_COOKIE = frozenset({b"set-cookie", b"set-cookie2"})


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


def _is_stored_cookie(name: bytes, value: bytes) -> bool:
    return name.lower() in _SET_COOKIE and COOKIE_PLACEHOLDER in value


def own_sandbox_fields(
    fields: Sequence[tuple[bytes, bytes]],
    asker_value: Callable[[str], str | None],
    tape: str,
    branch: str,
    *,
    occurrence: int | None = None,
    replayed_write: bool = False,
) -> tuple[tuple[bytes, bytes], ...] | None:
    """A served answer's header fields made the asker's own; None when none changes.

    Each header the tape stored as the marker takes the asker's own value (`asker_value` of its
    name; none: the id minted for the branch at this `occurrence`, groundhog/protocol/sandbox.py),
    and a stored `Set-Cookie` (its value a placeholder of the recording branch's cookie) is left
    out of a read: handed on, it would overwrite the asker's own cookie with one that names no
    sandbox. A `replayed_write` (sealed: the asker's own lineage's recorded write) keeps it, or
    a replayed login would leave the asker without the cookie its recorded requests carried."""
    drop_cookies = not replayed_write
    if not any(
        value == MARKER_BYTES or (drop_cookies and _is_stored_cookie(name, value))
        for name, value in fields
    ):
        return None
    restored = []
    for name, value in fields:
        if drop_cookies and _is_stored_cookie(name, value):
            continue
        if value == MARKER_BYTES:
            own = asker_value(name.decode("latin-1"))
            value = (own or minted_session(tape, branch, occurrence)).encode("latin-1")
        restored.append((name, value))
    return tuple(restored)
