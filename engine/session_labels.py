"""What a rule's `{session}` names: the session an ask runs in, by the ask that opened it.

A dependency rule can say that `write_note` writes `notes:{session}` and `read_notes` reads it,
so one session's write leaves another session's reads (of the same branch) shared. The session
id cannot be the name: siblings each hold their own, and a sealed replay holds one the proxy
minted (groundhog/protocol/sandbox.py), so a recording's reads after a write would never be
found again. A session is named instead by the address of the ask that opened it — its key and
occurrence, the same for siblings that each ran `initialize` first and for the sealed replay of
that conversation — and the resolver remembers, per branch, which session id was opened there
(store/sandbox_sessions.py, by the id's keyed hash: a session id is sandbox identity, never
stored in clear). These functions are the pure part: the label, the hash, the id a request
carries and the one a live answer opened. Without them `{session}` named nothing.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Sequence

from engine.request import RequestParts
from engine.sandbox_identity import MARKER, sandbox_headers
from engine.tape_settings import TapeSettings

PLACEHOLDER = "{session}"


def uses_session(settings: TapeSettings) -> bool:
    """Whether any of the tape's rules names a resource by `{session}`."""
    for rule in settings.rules:
        for template in [*rule.reads, *rule.writes]:
            if PLACEHOLDER in str(template):
                return True
    return False


def session_hash(session_id: str, key: bytes) -> str:
    """The keyed hash a session id is remembered by (the deployment's key: not reversible)."""
    return hmac.new(key, b"sandbox-session\0" + session_id.encode(), hashlib.sha256).hexdigest()


def opened_label(key_hash: str, occurrence: int) -> str:
    """The name of the session opened by the ask at this key and occurrence."""
    return "s-" + hashlib.sha256(f"{key_hash}\0{occurrence}".encode()).hexdigest()[:16]


def unknown_label(hashed: str) -> str:
    """The name of a session the lineage never saw opened (opened elsewhere, or before this
    resolver remembered sessions): its own, shared with nobody."""
    return "unknown-" + hashed[:16]


def carried_session(request: RequestParts, settings: TapeSettings) -> str | None:
    """The sandbox session id the request carries (its first sandbox header), or None."""
    names = sandbox_headers(settings)
    for name, value in request.headers:
        if name.lower() in names and value:
            return value
    return None


def opened_session(headers: Iterable[Sequence[str]], settings: TapeSettings) -> str | None:
    """The sandbox session id a live answer hands out (its first sandbox header), or None."""
    names = sandbox_headers(settings)
    for name, value in headers:
        if name.lower() in names and value and value != MARKER:
            return value
    return None


def names_marked_session(headers: Iterable[Sequence[str]]) -> bool:
    """Whether a stored answer hands out a session: a sandbox header kept as the marker (only
    sandbox headers are ever stored as it, engine/sandbox_identity.py)."""
    return any(value == MARKER for _name, value in headers)
