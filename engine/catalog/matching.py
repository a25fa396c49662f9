"""The tool catalog applied to requests: a tape's view of it, and the entry a request calls.

Lookup runs on every drafted ask (engine/asks.py), so a tape's view is built once per distinct
`catalog` setting and a request of a host the catalog does not name costs one dict lookup; only
a request of a catalog route has its JSON body read (for its query and noise fields).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from engine.catalog import ANY_HOST, Endpoint, shipped
from engine.content_coding import decode_content
from engine.operations import Kind
from engine.request import RequestParts
from engine.tape_settings import CatalogSetting

OFF = "off"

Routes = dict[tuple[str, str], Endpoint]


@dataclass(frozen=True)
class CatalogView:
    """The catalog as one tape applies it: host -> (method, path) -> entry."""

    by_host: Mapping[str, Routes]
    # OpenAI-compatible routes for any host named in `world_model_hosts`.
    world_routes: Routes
    world_hosts: frozenset[str]

    def lookup(self, host: str, method: str, path: str) -> Endpoint | None:
        routes = self.by_host.get(host)
        if routes is None:
            if host not in self.world_hosts:
                return None
            routes = self.world_routes
        return routes.get((method, path))


def _build_view(
    enabled: bool, overrides: tuple[tuple[str, str], ...], world: tuple[str, ...]
) -> CatalogView:
    if not enabled:
        return CatalogView({}, {}, frozenset())
    pinned = dict(overrides)
    world_hosts = frozenset(world)
    by_host: dict[str, Routes] = {}
    world_routes: Routes = {}
    for entry in shipped():
        choice = pinned.get(entry.id)
        if choice == OFF:
            continue
        if choice is not None:
            entry = replace(entry, kind=Kind(choice))
        for host in entry.hosts:
            if entry.world_model and host != ANY_HOST and host not in world_hosts:
                continue
            routes = world_routes if host == ANY_HOST else by_host.setdefault(host, {})
            for path in entry.paths:
                routes.setdefault((entry.method, path), entry)
    return CatalogView(by_host, world_routes, world_hosts)


@lru_cache(maxsize=64)
def _view(setting_json: str) -> CatalogView:
    setting = json.loads(setting_json)
    return _build_view(
        bool(setting.get("enabled", True)),
        tuple(sorted((setting.get("entries") or {}).items())),
        tuple(sorted(host.lower().rstrip(".") for host in setting.get("world_model_hosts") or ())),
    )


# What a tape opened with no `catalog` setting stores: compared first, so the common tape pays
# one dict comparison per draft rather than a JSON encoding.
_DEFAULT_SETTING = CatalogSetting()


def view_for(setting: CatalogSetting) -> CatalogView:
    """The catalog as the tape's `catalog` setting applies it (built once per setting)."""
    if setting == _DEFAULT_SETTING:
        return _view("{}")
    return _view(setting.model_dump_json())


@dataclass(frozen=True)
class ToolMatch:
    """A request a catalog entry applies to: its kind, and its body keyed without noise
    (None when no noise field was present, so the key is the body's as ever)."""

    endpoint: Endpoint
    kind: Kind
    keyed_body: str | None = None


def _json_object(request: RequestParts) -> dict[str, Any] | None:
    decoded = decode_content(request.body, request.header("content-encoding"))
    if not decoded or decoded.lstrip()[:1] != b"{":
        return None
    try:
        document = json.loads(decoded)
    except (ValueError, RecursionError):
        return None
    return document if isinstance(document, dict) else None


def match_request(view: CatalogView, request: RequestParts) -> ToolMatch | None:
    """The entry `request` is a call of, or None. A body entry applies only to a JSON object
    that holds one of its query fields: another shape at the same path stays a write."""
    endpoint = view.lookup(request.normalised_host, request.method.upper(), request.path)
    if endpoint is None:
        return None
    if request.method.upper() in ("GET", "HEAD"):
        return ToolMatch(endpoint, endpoint.kind)
    document = _json_object(request)
    if document is None or not any(name in document for name in endpoint.query):
        return None
    noisy = [name for name in endpoint.noise if name in document]
    if not noisy:
        return ToolMatch(endpoint, endpoint.kind)
    kept = {name: value for name, value in document.items() if name not in noisy}
    keyed = json.dumps(kept, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return ToolMatch(endpoint, endpoint.kind, keyed)
