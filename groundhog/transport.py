"""HTTP to the resolver's admin API: base URL, bearer token, problem+json to typed errors.

Every client call goes through here so a refused connection always says how to start the
resolver, and every 4xx/5xx carries the server's own problem detail. Proxy variables in the
environment are ignored on purpose: a worker's HTTP_PROXY must not route admin calls through
the recording proxy.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from typing import Any

import httpx

from groundhog.errors import GroundhogError, ResolverUnreachable
from groundhog.shim.context import outside_branch

DEFAULT_RESOLVER_URL = "http://127.0.0.1:8070"
RESOLVER_URL_ENV = "GROUNDHOG_RESOLVER_URL"
ADMIN_TOKEN_ENV = "GROUNDHOG_ADMIN_TOKEN"


def resolver_url_from_env(url: str | None = None) -> str:
    return (url or os.environ.get(RESOLVER_URL_ENV) or DEFAULT_RESOLVER_URL).rstrip("/")


def raise_for_problem(response: httpx.Response) -> None:
    """Turn an error response into a GroundhogError carrying its problem detail."""
    if response.is_success:
        return
    response.read()
    try:
        document: Any = response.json()
    except ValueError:
        document = None
    raise GroundhogError.from_problem(response.status_code, document, response.text)


class AdminTransport:
    """A small wrapper over one `httpx.Client` bound to the resolver."""

    def __init__(
        self, url: str | None = None, *, token: str | None = None, timeout: float = 60.0
    ) -> None:
        self.url = resolver_url_from_env(url)
        token = token if token is not None else os.environ.get(ADMIN_TOKEN_ENV)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(
            base_url=self.url, headers=headers, timeout=timeout, trust_env=False
        )

    def close(self) -> None:
        self._http.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        content: bytes | Iterable[bytes] | None = None,
        headers: dict[str, str] | None = None,
        timeout: float | None = None,
    ) -> httpx.Response:
        """`timeout` (seconds) replaces the client's for a call known to take long."""
        try:
            with outside_branch():
                response = self._http.request(
                    method,
                    path,
                    json=json,
                    params=params,
                    content=content,
                    headers=headers,
                    timeout=httpx.USE_CLIENT_DEFAULT if timeout is None else timeout,
                )
        except httpx.TransportError as error:
            raise ResolverUnreachable(self.url, str(error) or type(error).__name__) from error
        raise_for_problem(response)
        return response

    def json(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self.request(method, path, **kwargs)
        if response.status_code == 204 or not response.content:
            return None
        try:
            return response.json()
        except ValueError as error:
            raise GroundhogError(
                response.status_code,
                "Unexpected response",
                f"{method} {path} answered non-JSON: {response.text[:200]!r}",
            ) from error

    @contextlib.contextmanager
    def stream(self, method: str, path: str, **kwargs: Any) -> Iterator[httpx.Response]:
        try:
            with outside_branch(), self._http.stream(method, path, **kwargs) as response:
                raise_for_problem(response)
                yield response
        except httpx.TransportError as error:
            raise ResolverUnreachable(self.url, str(error) or type(error).__name__) from error
