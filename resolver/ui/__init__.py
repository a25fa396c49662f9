"""The tape viewer: server-rendered HTML pages under `/ui` on the resolver.

Mount with `app.include_router(resolver.ui.router)` in `create_app`. Pages read the store the
same way the admin routes do, escape everything recorded, load nothing from the network and
need no build step; with an admin token set they require it (bearer header or login cookie).
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import HTMLResponse

from resolver.ui import branch_pages, compare_page, diff_page, miss_page, tape_pages
from resolver.ui.access import (
    COOKIE_NAME,
    SESSION_SECONDS,
    LoginThrottle,
    behind_tls,
    new_session,
    submitted_token,
    token_is_valid,
)
from resolver.ui.access import require_viewer as _require_viewer
from resolver.ui.assets import STYLESHEET
from resolver.ui.layout import UI_ROOT
from resolver.ui.routing import HtmlRoute, login_page

__all__ = ["router"]

router = APIRouter(prefix=UI_ROOT, route_class=HtmlRoute, include_in_schema=False)
_pages = APIRouter(route_class=HtmlRoute, dependencies=[Depends(_require_viewer)])
for _module in (tape_pages, branch_pages, compare_page, diff_page, miss_page):
    _module.register(_pages)


@router.get("/style.css")
def stylesheet() -> Response:
    return Response(STYLESHEET, media_type="text/css", headers={"Cache-Control": "max-age=300"})


@router.get("/login")
def login_form() -> Response:
    return login_page(status_code=200)


def _throttle(request: Request) -> LoginThrottle:
    state = request.app.state
    if getattr(state, "login_throttle", None) is None:
        state.login_throttle = LoginThrottle()
    return state.login_throttle


@router.post("/login")
async def login(request: Request) -> Response:
    throttle = _throttle(request)
    client = request.client.host if request.client else "unknown"
    wait = throttle.retry_after(client)
    if wait:
        response = login_page(status_code=429, throttled=wait)
        response.headers["Retry-After"] = str(wait)
        return response
    token = await submitted_token(request)
    if not token_is_valid(request, token):
        throttle.failed(client)
        return login_page(failed=True)
    response = Response(status_code=303, headers={"Location": UI_ROOT})
    response.set_cookie(
        COOKIE_NAME,
        new_session(request),
        max_age=SESSION_SECONDS,
        httponly=True,
        samesite="strict",
        secure=behind_tls(request),
        path=UI_ROOT,
    )
    return response


router.include_router(_pages)
# `/ui` itself (no trailing slash) cannot live on the prefix-less page router.
router.add_api_route(
    "",
    tape_pages.list_tapes,
    methods=["GET"],
    response_class=HTMLResponse,
    dependencies=[Depends(_require_viewer)],
)
