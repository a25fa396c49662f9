"""Who may look at tapes through the viewer: the admin token, as a bearer header or a cookie.

With `GROUNDHOG_ADMIN_TOKEN` set the admin API is closed to anyone without it; the viewer shows
the same recorded content, so it must be closed too. A browser cannot send a bearer header by
itself, so `/ui/login` trades the token for an HttpOnly, SameSite=Strict cookie.
"""

from __future__ import annotations

import hmac
from urllib.parse import parse_qs

from fastapi import Request

COOKIE_NAME = "groundhog_admin"


class LoginRequired(Exception):
    """The resolver has an admin token and this request carried none that matches."""


def _matches(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode(), expected.encode())


def admin_token(request: Request) -> str | None:
    return request.app.state.settings.admin_token or None


def require_viewer(request: Request) -> None:
    expected = admin_token(request)
    if expected is None:
        return
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and _matches(token, expected):
        return
    cookie = request.cookies.get(COOKIE_NAME, "")
    if cookie and _matches(cookie, expected):
        return
    raise LoginRequired


async def submitted_token(request: Request) -> str:
    """The `token` field of an urlencoded login form (no multipart parser needed)."""
    body = (await request.body())[:4096].decode("utf-8", errors="replace")
    return parse_qs(body).get("token", [""])[0]


def token_is_valid(request: Request, token: str) -> bool:
    expected = admin_token(request)
    return expected is None or (bool(token) and _matches(token, expected))
