"""Typed errors and the one place they become RFC 9457 problem+json responses.

Routes raise these; the handler installed by `install_error_handlers` renders them, so every
bad input gets the same shape (type/title/status/detail plus extras) and no route formats its
own error. Foreign errors are translated at the edge with `raise … from e`.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from sqlalchemy.exc import OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from groundhog.protocol.problems import MEDIA_TYPE, TYPE_BASE, problem_bytes

logger = logging.getLogger(__name__)

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


def problem_response(
    status: int,
    slug: str,
    title: str,
    detail: str,
    headers: dict[str, str] | None = None,
    **extras: Any,
) -> Response:
    body = problem_body(status, slug, title, detail, **extras)
    return Response(body, status_code=status, media_type=PROBLEM_MEDIA_TYPE, headers=headers)


def _location(loc: tuple[Any, ...]) -> str:
    return ".".join(str(part) for part in loc if part != "body") or "body"


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ResolverError)
    async def _groundhog(_request: Request, error: ResolverError) -> Response:
        headers = {"WWW-Authenticate": "Bearer"} if isinstance(error, Unauthorized) else None
        if error.status == 503:
            headers = {"Retry-After": "1"}
        return problem_response(
            error.status, error.slug, error.title, error.detail, headers, **error.extras
        )

    @app.exception_handler(RequestValidationError)
    async def _validation(_request: Request, error: RequestValidationError) -> Response:
        issues = [
            {
                "field": _location(tuple(item.get("loc", ()))),
                # A validator's own message, without pydantic's "Value error, " label.
                "message": str(item.get("msg", "")).removeprefix("Value error, "),
            }
            for item in error.errors()
        ]
        detail = "; ".join(f"{issue['field']}: {issue['message']}" for issue in issues)
        return problem_response(422, "invalid-input", "Invalid input", detail, errors=issues)

    @app.exception_handler(OperationalError)
    async def _store_unavailable(_request: Request, error: OperationalError) -> Response:
        # A full disk, a read-only file, a lock held past busy_timeout or a lost PostgreSQL
        # connection: the transaction was rolled back, so the client may simply retry.
        logger.error("the store could not be written", exc_info=error)
        return problem_response(
            503,
            "store-unavailable",
            "Store unavailable",
            f"the store could not be written ({error.orig}); nothing was recorded or forwarded. "
            "Free disk space or make the store writable, then retry.",
            headers={"Retry-After": "1"},
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(_request: Request, error: StarletteHTTPException) -> Response:
        slug = "not-found" if error.status_code == 404 else "http-error"
        # Framework errors carry headers the status needs (Allow on a 405, WWW-Authenticate).
        return problem_response(
            error.status_code,
            slug,
            str(error.detail),
            str(error.detail),
            headers=getattr(error, "headers", None),
        )
