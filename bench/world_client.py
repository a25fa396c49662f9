"""The world's control routes as the benchmark uses them: call counts, sandbox reset, oracle.

Live calls are counted where they land (the world's /_stats), not where Groundhog believes it
sent them, so the cost row cannot flatter the system under test. Sandboxes are dropped after
each group because the world keys them by branch and caps their number. The oracle is the
ground truth the dependency models are scored against. These calls go straight to the world,
never through the proxy.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from bench import http_clients

ATTEMPTS = 3
logger = logging.getLogger(__name__)


class WorldControlError(RuntimeError):
    """A control call to the world failed; the message names the route and the detail."""


class WorldControl:
    """Synchronous client of worldsim's underscore routes."""

    def __init__(self, base_url: str, *, timeout: float = 60.0) -> None:
        # Kept-alive connections (bench/http_clients.py) that expire before the server's
        # keep-alive (uvicorn: 5 s) would close them.
        self._client = http_clients.client(base_url=base_url, timeout=timeout)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> WorldControl:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        # Every control route is idempotent (counts, resets, the pure oracle): a request lost
        # to a connection the server closed is sent again, a bounded number of times.
        for attempt in range(ATTEMPTS):
            try:
                response = self._client.request(method, path, **kwargs)
                break
            except (httpx.RemoteProtocolError, httpx.ConnectError) as error:
                if attempt == ATTEMPTS - 1:
                    raise WorldControlError(f"{method} {path} failed: {error}") from error
                logger.warning("%s %s: %s; retrying", method, path, error)
        if response.status_code >= 400:
            raise WorldControlError(f"{method} {path} -> {response.status_code}: {response.text}")
        return response.json()

    def total_calls(self) -> int:
        """Requests the world has served on its own endpoints since it started (or was reset)."""
        return int(self._call("GET", "/_stats")["total"])

    def calls_by_branch(self) -> dict[str, int]:
        branches = self._call("GET", "/_stats")["branches"]
        return {name: int(counts["total"]) for name, counts in branches.items()}

    def drop_sandboxes(self, branches: Sequence[str]) -> None:
        """Drop the named branches' sandboxes (the world's stand-in for a rollback), in one call."""
        if branches:  # no name at all would drop every sandbox
            self._call("POST", "/_reset", params=[("branch", branch) for branch in branches])

    def judge(self, reads: Sequence[Mapping[str, Any]]) -> list[bool]:
        """For each read, whether the branch's writes change its answer (the oracle)."""
        if not reads:
            return []
        results = self._call("POST", "/_oracle/batch", json={"reads": list(reads)})["results"]
        return [bool(result["differs"]) for result in results]

    def grade(self, reads: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The oracle on served reads: ``stale`` (a lie to this asker) and ``changed``."""
        if not reads:
            return []
        return list(self._call("POST", "/_oracle/served", json={"reads": list(reads)})["results"])
