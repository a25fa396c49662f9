"""The resolver's exception root (`ResolverError`) and its typed errors, each with the RFC 9457
problem (status, type slug, title) it is answered as.

Routes raise these; the handler installed by `resolver.problem_handlers.install_error_handlers`
renders them, so every bad input gets the same shape (type/title/status/detail plus extras) and
no route formats its own error. Foreign errors are translated at the edge with `raise … from e`.
The resolver has no faults module: injected faults are decided by engine/faults.py.
"""

from __future__ import annotations

from typing import Any

from groundhog.protocol.problems import MEDIA_TYPE, TYPE_BASE, problem_bytes

PROBLEM_TYPE_BASE = TYPE_BASE
PROBLEM_MEDIA_TYPE = MEDIA_TYPE


class ResolverError(Exception):
    status = 400
    slug = "bad-request"
    title = "Bad request"

    def __init__(self, detail: str, **extras: Any) -> None:
        super().__init__(detail)
        self.detail = detail
        self.extras = extras


class NotFound(ResolverError):
    status, slug, title = 404, "not-found", "Not found"


class Conflict(ResolverError):
    status, slug, title = 409, "conflict", "Conflict"


class InvalidInput(ResolverError):
    status, slug, title = 422, "invalid-input", "Invalid input"


class BodyTooLarge(ResolverError):
    status, slug, title = 413, "body-too-large", "Body too large"


class Unauthorized(ResolverError):
    status, slug, title = 401, "unauthorized", "Unauthorized"


class StoreFull(ResolverError):
    """The store's disk is below its reserve: no live call may start."""

    status, slug, title = 503, "store-full", "Store full"


class StoreUnavailable(ResolverError):
    """The store could not take a record; the proxy must not serve the live answer as taped."""

    status, slug, title = 503, "store-unavailable", "Store unavailable"


class BranchLeased(ResolverError):
    """Another sidecar proxy holds the branch's lease (store/branch_leases.py): it has been
    asked to ship what it served and release; the ask is retried once it has."""

    status, slug, title = 503, "branch-leased", "Branch leased to another proxy"


class ResolveTimeout(ResolverError):
    status, slug, title = 504, "resolve-timeout", "Timed out waiting for another asker"


def problem_body(status: int, slug: str, title: str, detail: str, **extras: Any) -> bytes:
    """Deterministic problem+json bytes (sorted keys), so identical problems are identical bytes."""
    return problem_bytes(status, slug, title, detail, **extras)
