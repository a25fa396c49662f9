"""Who may look at tapes through the viewer: the admin token as a bearer header, or a session.

With `GROUNDHOG_ADMIN_TOKEN` set the admin API is closed to anyone without it; the viewer shows
the same recorded content, so it must be closed too. A browser cannot send a bearer header by
itself, so `/ui/login` trades the token for a session cookie: signed (HMAC under a key derived
from the deployment key and the admin token, so changing the token ends every session),
expiring, HttpOnly, SameSite=Strict and Secure behind TLS. The raw token never sits in a
browser's cookie jar. Failed logins are throttled per client address.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections import deque
from urllib.parse import parse_qs

from fastapi import Request

from resolver.errors import ResolverError

COOKIE_NAME = "groundhog_session"
SESSION_SECONDS = 8 * 3600
# More failures than this from one address within the window answer 429 until it passes.
MAX_FAILED_LOGINS = 5
FAILED_LOGIN_WINDOW = 300.0


class LoginRequired(ResolverError):
    """The resolver has an admin token and this request carried none that matches."""


def _matches(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode(), expected.encode())


def admin_token(request: Request) -> str | None:
    return request.app.state.settings.admin_token or None


def _signing_key(request: Request, token: str) -> bytes:
    deployment = request.app.state.resolver.redaction_key
    return hmac.new(deployment, b"viewer-session\0" + token.encode(), hashlib.sha256).digest()


def _signature(key: bytes, payload: str) -> str:
    return hmac.new(key, payload.encode(), hashlib.sha256).hexdigest()


def new_session(request: Request, now: float | None = None) -> str:
    """A session cookie value: `expires.nonce.signature`."""
    token = admin_token(request) or ""
    expires = int((now if now is not None else time.time()) + SESSION_SECONDS)
    payload = f"{expires}.{secrets.token_hex(8)}"
    return f"{payload}.{_signature(_signing_key(request, token), payload)}"


def session_is_valid(request: Request, value: str, now: float | None = None) -> bool:
    token = admin_token(request)
    if token is None:
        return True
    expires, _, rest = value.partition(".")
    nonce, _, signature = rest.partition(".")
    if not (expires.isdigit() and nonce and signature):
        return False
    expected = _signature(_signing_key(request, token), f"{expires}.{nonce}")
    if not hmac.compare_digest(signature.encode(), expected.encode()):
        return False
    return int(expires) > (now if now is not None else time.time())


def require_viewer(request: Request) -> None:
    expected = admin_token(request)
    if expected is None:
        return
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and _matches(token, expected):
        return
    cookie = request.cookies.get(COOKIE_NAME, "")
    if cookie and session_is_valid(request, cookie):
        return
    raise LoginRequired("the viewer needs a login")


def behind_tls(request: Request) -> bool:
    forwarded = request.headers.get("x-forwarded-proto", "").split(",")[0].strip().lower()
    return request.url.scheme == "https" or forwarded == "https"


async def submitted_token(request: Request) -> str:
    """The `token` field of an urlencoded login form (no multipart parser needed)."""
    body = (await request.body())[:4096].decode("utf-8", errors="replace")
    return parse_qs(body).get("token", [""])[0]


def token_is_valid(request: Request, token: str) -> bool:
    expected = admin_token(request)
    return expected is None or (bool(token) and _matches(token, expected))


class LoginThrottle:
    """Failed logins per client address in a sliding window (memory of one resolver)."""

    def __init__(self, limit: int = MAX_FAILED_LOGINS, window: float = FAILED_LOGIN_WINDOW) -> None:
        self.limit = limit
        self.window = window
        self._failures: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def _recent(self, client: str, now: float) -> deque[float]:
        failures = self._failures.setdefault(client, deque())
        while failures and failures[0] <= now - self.window:
            failures.popleft()
        return failures

    def retry_after(self, client: str, now: float | None = None) -> int:
        """Seconds until `client` may try again; 0 when it may now."""
        now = time.monotonic() if now is None else now
        with self._lock:
            failures = self._recent(client, now)
            if len(failures) < self.limit:
                return 0
            return max(1, int(failures[0] + self.window - now) + 1)

    def failed(self, client: str, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        with self._lock:
            self._recent(client, now).append(now)
            if len(self._failures) > 10_000:  # forget idle addresses
                for stale in [c for c, f in self._failures.items() if not f]:
                    del self._failures[stale]
