"""One ask as the proxy sends it (`POST /v1/resolve`) and a lease holder drafts it: validated
once, so the resolver and the sidecar's held branch build the same ask from the same value.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

# An attempt id: what `secrets.token_urlsafe` makes (the proxy's), in a column of 64.
ATTEMPT_PATTERN = r"^[A-Za-z0-9_-]+$"
# A presented capability is kept to a length well past any the resolver hands out.
MAX_CAPABILITY_TEXT = 128


class ResolveRequest(BaseModel):
    tape: str
    branch: str
    method: str = Field(min_length=1, max_length=20)
    scheme: Literal["http", "https"] = "http"
    host: str = Field(min_length=1, max_length=300)
    port: int = Field(ge=1, le=65535)
    path: str = "/"
    query: list[tuple[str, str]] = []
    headers: list[tuple[str, str]] = []
    body: str = ""
    body_too_large: bool = False
    # The proxy's id for this ask, sent again when it retries an ask it got no answer to: the
    # retry is given the occurrence its first try took (store/counters.py).
    attempt: str | None = Field(default=None, min_length=1, max_length=64, pattern=ATTEMPT_PATTERN)
    # The asking proxy's lease holder id (proxy/held_branches.py), when it takes leases: a
    # branch leased to another holder is refused to it (`branch-leased`) until released.
    lease_holder: str | None = Field(
        default=None, min_length=1, max_length=64, pattern=ATTEMPT_PATTERN
    )
    # The branch capability the worker presented (resolver/capabilities.py), as it gave it: a
    # wrong one is refused by the check (403), not by validation (422), whatever its shape.
    capability: str | None = Field(default=None, max_length=MAX_CAPABILITY_TEXT)
