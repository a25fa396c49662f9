"""The worlds' reads as tool calls: `POST /tools/<read path>` with the query as a JSON object.

The web search, retrieval and scraping APIs agents call are reached by POST (a search API's
`POST /retrieve`, SkyRL-Gym's own search environment), so under every default each of their
calls is a live write. This lets the benchmark's research and shop worlds be driven that way
(issue 56): every read the agent makes (`GET /search?q=x`) can be sent as the tool call
`POST /tools/search {"q": "x"}`, and the world answers it exactly as the GET — the same
request key, occurrence, noise and served log, so the oracle grades it unchanged. Writes stay
what they were. Nothing tells Groundhog the tool calls read: that is the advisor's to find.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from worldsim.errors import InvalidRequest

if TYPE_CHECKING:
    from worldsim.agent import Reply, Transport
    from worldsim.world import WorldRequest

TOOLS_PREFIX = "/tools"


def is_tool_call(method: str, path: str) -> bool:
    """A read sent as a tool call (a POST under /tools/)."""
    return method.upper() == "POST" and path.startswith(TOOLS_PREFIX + "/")


def as_read(request: WorldRequest) -> WorldRequest:
    """The GET a tool call stands for: its path less the prefix, its JSON object as the query."""
    try:
        document: Any = json.loads(request.body or b"{}")
    except ValueError as error:
        raise InvalidRequest(f"a tool call's body must be a JSON object: {error}") from error
    if not isinstance(document, dict):
        raise InvalidRequest("a tool call's body must be a JSON object")
    query = tuple((str(name), str(value)) for name, value in document.items())
    return replace(
        request, method="GET", path=request.path.removeprefix(TOOLS_PREFIX), query=query, body=b""
    )


class PostTools:
    """An agent transport that sends each read as its tool call and everything else as is."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner

    def send(
        self,
        method: str,
        path: str,
        params: Sequence[tuple[str, str]],
        body: bytes | None,
        headers: Mapping[str, str] | None = None,
    ) -> Reply:
        if method.upper() != "GET":
            return self.inner.send(method, path, params, body, headers)
        payload = json.dumps(dict(params), sort_keys=True, separators=(",", ":")).encode()
        return self.inner.send("POST", TOOLS_PREFIX + path, (), payload, headers)
