"""The benchmark's rollout client: a lean HTTP/1.1 client with httpx's shape, over kept-alive
connections.

Every rollout of a run (each branch through the proxy, each live reference run) sends a few
requests; a full run sends hundreds of thousands. Through `httpx.Client` each cost about
0.4 ms of the benchmark driver's CPU beyond the bytes (request building, URL parsing, cookie
extraction, response decoding), most of the driver's share of a run that is held to 45 minutes
on two cores (issue 33 item 9). This client does what a rollout needs and no more: default
headers, query parameters, event hooks and the answer's status, headers and body, on
`bench.http_clients.exchange` (connections kept alive until the client closes, http.client's
parser).

It keeps the names the rollout code uses (`request`, `get`, `status_code`, `headers`,
`content`, `json()`, `read()`, `request.url.path`), so the agents' `HttpTransport` and the
graders take it as they take an `httpx.Client`; errors are httpx's transport errors. Plain
HTTP only: a rollout against an HTTPS world uses `bench.http_clients.client` instead.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from bench import http_clients

DEFAULT_HEADERS = (("Accept", "*/*"), ("Accept-Encoding", "identity"), ("User-Agent", "gh-bench"))
"""What every request carries (no compression: the worlds and the proxy send none)."""

type Params = Mapping[str, Any] | Sequence[tuple[str, Any]] | None


class URL(str):
    """A request's absolute URL, with the parts the hooks read."""

    @property
    def path(self) -> str:
        return urlsplit(self).path


class Request:
    """What a request hook sees."""

    __slots__ = ("headers", "method", "url")

    def __init__(self, method: str, url: URL, headers: dict[str, str]) -> None:
        self.method = method
        self.url = url
        self.headers = headers


class Headers(dict[str, str]):
    """An answer's headers by lower-cased name (a repeated header keeps its last value)."""

    def get(self, name: str, default: Any = None) -> Any:
        return super().get(name.lower(), default)

    def __getitem__(self, name: str) -> str:
        return super().__getitem__(name.lower())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and super().__contains__(name.lower())


class Response:
    """A whole answer: status, headers (case-insensitive), body."""

    __slots__ = ("content", "headers", "reason_phrase", "request", "status_code")

    def __init__(self, answer: http_clients.Answer, request: Request) -> None:
        self.status_code = answer.status
        self.reason_phrase = answer.reason
        self.headers = Headers((name.lower(), value) for name, value in answer.headers)
        self.content = answer.content
        self.request = request

    def read(self) -> bytes:
        return self.content

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.content)


type RequestHook = Callable[[Request], None]
type ResponseHook = Callable[[Response], None]


class RolloutClient:
    """One rollout's client: default headers and hooks, through ``proxy`` or straight; its
    connections in a pool of its own, or in ``pool``, shared with the other rollouts of a
    benchmark cell (`bench.groups.RunContext.connections`)."""

    def __init__(
        self,
        *,
        proxy: str | None = None,
        timeout: float | None = None,
        headers: Mapping[str, str] | None = None,
        event_hooks: Mapping[str, Sequence[Callable[[Any], None]]] | None = None,
        pool: http_clients.ConnectionPool | None = None,
    ) -> None:
        self.route = http_clients.Route(proxy)
        # A pool given is shared with other clients and outlives this one; its own is closed.
        self._owns_pool = pool is None
        self.pool = http_clients.ConnectionPool() if pool is None else pool
        self.timeout = timeout
        self.headers = dict(headers or {})
        hooks = event_hooks or {}
        self.request_hooks: list[RequestHook] = list(hooks.get("request", ()))
        self.response_hooks: list[ResponseHook] = list(hooks.get("response", ()))

    def request(
        self,
        method: str,
        url: str,
        *,
        params: Params = None,
        headers: Mapping[str, str] | None = None,
        content: bytes | None = None,
    ) -> Response:
        parts = urlsplit(url)
        if parts.scheme != "http" or parts.hostname is None:
            raise ValueError(f"{url!r}: the rollout client sends plain-HTTP absolute URLs only")
        query = parts.query
        if params:
            encoded = urlencode(list(params.items()) if isinstance(params, Mapping) else params)
            query = f"{query}&{encoded}" if query else encoded
        path = quote(parts.path or "/", safe="/%:@!$&'()*+,;=-._~")
        origin_form = f"{path}?{query}" if query else path
        absolute = URL(f"http://{parts.netloc}{origin_form}")
        merged = {**self.headers, **(headers or {})}
        request = Request(method.upper(), absolute, merged)
        for before in self.request_hooks:
            before(request)
        lines: list[tuple[bytes | str, bytes | str]] = [("Host", parts.netloc), *DEFAULT_HEADERS]
        lines += merged.items()
        if content is not None:
            lines.append(("Content-Length", str(len(content))))
        answer = http_clients.exchange(
            self.route,
            request.method,
            (absolute, parts.hostname, parts.port or 80, origin_form),
            lines,
            content,
            self.timeout,
            self.pool,
        )
        response = Response(answer, request)
        for after in self.response_hooks:
            after(response)
        return response

    def get(
        self, url: str, *, params: Params = None, headers: Mapping[str, str] | None = None
    ) -> Response:
        return self.request("GET", url, params=params, headers=headers)

    def close(self) -> None:
        if self._owns_pool:
            self.pool.close()

    def __enter__(self) -> RolloutClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
