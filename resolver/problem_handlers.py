"""The one place typed errors (resolver/errors.py) and foreign ones become problem+json answers.

Apart from the error types so that a module raising them (the decision path, which a lease
holding sidecar runs too) loads no web framework and no database driver.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from sqlalchemy.exc import OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from engine.errors import ProblemError
from resolver.errors import PROBLEM_MEDIA_TYPE, ResolverError, Unauthorized, problem_body

logger = logging.getLogger(__name__)


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
    @app.exception_handler(ProblemError)  # the engine's, raised by the ask path it runs here
    async def _groundhog(_request: Request, error: ResolverError | ProblemError) -> Response:
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
