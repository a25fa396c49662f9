"""Viewer routes answer errors as HTML pages, not problem+json, and ask for the token to log in.

The resolver's handlers render problem+json for API clients; a person following a stale link
in a browser needs a readable page instead. `HtmlRoute` catches the typed errors of one route
and renders them, so each page handler can raise `NotFound` like the API routes do.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute

from engine.errors import ProblemError
from resolver.errors import ResolverError
from resolver.ui.access import LoginRequired
from resolver.ui.layout import UI_ROOT, error_page, page
from resolver.ui.markup import tag, void


def login_page(status_code: int = 401, failed: bool = False, throttled: int = 0) -> Response:
    form = tag(
        "form",
        tag("label", "Admin token ", void("input", type="password", name="token", required=True)),
        " ",
        tag("button", "Open the viewer", type="submit"),
        method="post",
        action=f"{UI_ROOT}/login",
        class_="login",
    )
    message = (
        "That token does not match GROUNDHOG_ADMIN_TOKEN."
        if failed
        else "This resolver has an admin token (GROUNDHOG_ADMIN_TOKEN); enter it to view tapes."
    )
    if throttled:
        message = f"Too many failed logins from this address; try again in {throttled} s."
    return page(
        "Log in",
        tag("p", message, class_="error" if failed or throttled else "note"),
        form,
        status_code=status_code,
    )


class HtmlRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def render_errors(request: Request) -> Response:
            try:
                return await handler(request)
            except LoginRequired:
                return login_page()
            except (ResolverError, ProblemError) as error:
                return error_page(error.status, error.title, error.detail)
            except RequestValidationError as error:
                detail = "; ".join(
                    f"{'.'.join(str(part) for part in item.get('loc', ()))}: {item.get('msg')}"
                    for item in error.errors()
                )
                return error_page(422, "Invalid input", detail)

        return render_errors
