"""The one digest of a branch capability both sides compare (resolver/capabilities.py makes
capabilities; a lease grant carries this digest of one so the holder, proxy/held_branches.py,
can check each hit without ever holding the capability itself)."""

from __future__ import annotations

import hashlib
import hmac


def capability_digest(capability: str) -> str:
    """SHA-256 (hex) of a capability as presented."""
    return hashlib.sha256(capability.encode("utf-8", "surrogatepass")).hexdigest()


def matches_digest(digest: str | None, capability: str | None) -> bool:
    """Whether `capability` is the one `digest` was taken of (None: nothing is required)."""
    if digest is None:
        return True
    if not capability:
        return False
    return hmac.compare_digest(capability_digest(capability), digest)
