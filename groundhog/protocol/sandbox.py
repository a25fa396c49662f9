"""The session id a sealed replay hands a branch, agreed by the proxy and the resolver.

When a replayed answer names a sandbox session (`Mcp-Session-Id` stored as a marker) and the
asker holds none — a sealed replay of `initialize` — the proxy gives it an id minted from the
tape, the branch and the occurrence of the ask that opened it, and the resolver remembers the
same id as that session (store/sandbox_sessions.py), so the branch's later asks carrying it are
named as the recording's were. Both sides must mint the same id; without one definition they
would drift and every replayed session's `{session}` reads would miss.
"""

from __future__ import annotations

import hashlib


def minted_session(tape: str, branch: str, occurrence: int | None) -> str:
    """A session id for a branch whose sealed replay never met a live server (deterministic)."""
    seed = f"{tape}\0{branch}\0{occurrence if occurrence is not None else ''}"
    return "groundhog-" + hashlib.sha256(seed.encode()).hexdigest()[:32]
