"""The request as the resolver sees it: a small immutable value shared by the pure modules.

Keys, redaction, dependencies and policy all need the same fields; one type keeps them from
each re-parsing the wire shape (and disagreeing about header case or default ports).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from urllib.parse import quote, urlencode

DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class RequestParts:
    method: str
    scheme: str
    host: str
    port: int
    path: str
    query: tuple[tuple[str, str], ...] = ()
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""

    def header(self, name: str) -> str | None:
        """The first value of header `name` (case-insensitive), or None."""
        wanted = name.lower()
        for key, value in self.headers:
            if key.lower() == wanted:
                return value
        return None

    @property
    def normalised_host(self) -> str:
        return self.host.lower().rstrip(".")

    @property
    def authority(self) -> str:
        host = self.normalised_host
        if DEFAULT_PORTS.get(self.scheme.lower()) == self.port:
            return host
        return f"{host}:{self.port}"

    def url(self) -> str:
        """The URL for people (events, exchanges), query in the order received."""
        return self._url

    @cached_property
    def _url(self) -> str:
        # Once per value: a lease holder's remembered drafts share one (engine/leased_hits.py).
        query = f"?{urlencode(list(self.query), quote_via=quote)}" if self.query else ""
        return f"{self.scheme.lower()}://{self.authority}{self.path}{query}"

    def with_changes(self, **changes: object) -> RequestParts:
        return replace(self, **changes)  # type: ignore[arg-type]
