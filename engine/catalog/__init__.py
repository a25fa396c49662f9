"""The shipped catalog of well-known tool endpoints (issue 56; DESIGN §6, `groundhog catalog`).

The web search, retrieval, scraping, embedding and reranking APIs agents call are reached by
POST, so by default every call is a live write and nothing is shared until a user writes rules.
The catalog (tools.toml beside this module, one entry per endpoint with the vendor documentation
it was written from) says which of them read. Under the `closure` and `rules` models a request
that matches a read entry is a read of its origin, and its `noise` body fields leave its key.
A tape switches entries off or overrides them (`catalog` setting); chat-completion entries apply
only to hosts the tape names as world models.

This package's root loads the entries with the standard library only (`groundhog catalog` runs
on a worker-side install); engine/catalog/matching.py applies them to requests.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from engine.errors import ProblemError
from engine.operations import Kind

ANY_HOST = "*"


@dataclass(frozen=True)
class Endpoint:
    """One catalog entry, as tools.toml writes it."""

    id: str
    hosts: tuple[str, ...]
    method: str
    paths: tuple[str, ...]
    kind: Kind
    query: tuple[str, ...]
    noise: tuple[str, ...]
    credential: str
    docs: str
    world_model: bool = False

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "hosts": list(self.hosts),
            "method": self.method,
            "paths": list(self.paths),
            "kind": str(self.kind),
            "query": list(self.query),
            "noise": list(self.noise),
            "credential": self.credential,
            "docs": self.docs,
            "world_model": self.world_model,
        }


class CatalogError(ProblemError, ValueError):
    """tools.toml does not hold a usable catalog (a packaging or editing mistake)."""


def _endpoint(raw: Mapping[str, Any]) -> Endpoint:
    try:
        kind = Kind(raw["kind"])
        if kind not in (Kind.READ, Kind.WRITE):
            raise ValueError(f"kind {kind} is neither read nor write")
        return Endpoint(
            id=str(raw["id"]),
            hosts=tuple(str(host).lower() for host in raw["hosts"]),
            method=str(raw["method"]).upper(),
            paths=tuple(str(path) for path in raw["paths"]),
            kind=kind,
            query=tuple(str(name) for name in raw["query"]),
            noise=tuple(str(name) for name in raw.get("noise", ())),
            credential=str(raw["credential"]),
            docs=str(raw["docs"]),
            world_model=bool(raw.get("world_model", False)),
        )
    except (KeyError, TypeError, ValueError) as error:
        raise CatalogError(f"catalog entry {raw.get('id')!r}: {error}") from error


@cache
def shipped() -> tuple[Endpoint, ...]:
    """Every entry of the shipped catalog, in file order."""
    text = resources.files(__package__).joinpath("tools.toml").read_text(encoding="utf-8")
    entries = tuple(_endpoint(raw) for raw in tomllib.loads(text).get("endpoint", []))
    ids = [entry.id for entry in entries]
    if len(set(ids)) != len(ids):
        raise CatalogError(f"catalog ids repeat: {sorted(i for i in ids if ids.count(i) > 1)}")
    return entries


def entry_ids() -> frozenset[str]:
    return frozenset(entry.id for entry in shipped())
