"""The world's FastAPI application factory and its single error mapping.

`create_app(config)` builds one independent world (its own sandboxes and counters) per call,
so tests and the `groundhog worldsim` command can run several without shared globals. Every
error leaves as RFC 9457 problem+json from the handlers here: typed world errors, FastAPI's own
validation and routing errors, and, as a last resort, anything unexpected (logged, never a
traceback in the body).
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from worldsim import admin, render, routes
from worldsim.config import WorldConfig, load_config
from worldsim.errors import PROBLEM_MEDIA_TYPE, WorldError, problem_document
from worldsim.world import World

logger = logging.getLogger(__name__)


class CanonicalJSONResponse(JSONResponse):
    """JSON with sorted keys and no whitespace, so equal answers are equal bytes."""

    def render(self, content: object) -> bytes:
        return render.encode(content)


def problem_response(problem: dict[str, object]) -> Response:
    return Response(
        content=render.encode(problem),
        status_code=int(problem["status"]),  # type: ignore[call-overload]
        media_type=PROBLEM_MEDIA_TYPE,
    )


def _problem(status: int, kind: str, title: str, detail: str, **extras: object) -> Response:
    return problem_response(problem_document(status, kind, title, detail, **extras))


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(WorldError)
    async def world_error(_: Request, error: WorldError) -> Response:
        return problem_response(error.problem())

    @app.exception_handler(RequestValidationError)
    async def validation_error(_: Request, error: RequestValidationError) -> Response:
        errors = [
            {"loc": [str(part) for part in item.get("loc", ())], "msg": str(item.get("msg", ""))}
            for item in error.errors()
        ]
        where = "; ".join(f"{'.'.join(e['loc'])}: {e['msg']}" for e in errors)
        return _problem(422, "invalid-request", "Invalid request", where, errors=errors)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException) -> Response:
        if error.status_code == 404:
            detail = f"the world has no endpoint {request.method} {request.url.path}"
            return _problem(404, "unknown-endpoint", "Unknown endpoint", detail)
        return _problem(
            error.status_code,
            "http-error",
            str(error.detail),
            f"{request.method} {request.url.path}",
        )

    @app.exception_handler(Exception)
    async def unexpected(request: Request, error: Exception) -> Response:
        logger.exception("unexpected error answering %s %s", request.method, request.url.path)
        return _problem(500, "internal", "Internal error", f"{type(error).__name__} in worldsim")


def create_app(config: WorldConfig | None = None) -> FastAPI:
    """A world server; `config` defaults to `load_config()` (environment and defaults)."""
    config = config or load_config()
    app = FastAPI(
        title="worldsim",
        summary="A seeded mock research world for Groundhog's benchmark",
        default_response_class=CanonicalJSONResponse,
    )
    app.state.config = config
    app.state.world = World(
        config.seed,
        sandbox_cap=config.sandbox_cap,
        hints=config.hints,
        cooperative=config.cooperative,
        kind=config.world,
        max_body_bytes=config.max_body_bytes,
        attention_call_weight=config.attention_call_weight,
        write_noise_sd=config.write_noise_sd,
        clock_scale=config.clock_scale,
    )
    app.include_router(admin.health_router)
    app.include_router(routes.router)
    app.include_router(admin.router)
    install_error_handlers(app)
    return app
