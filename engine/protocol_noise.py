"""Protocol noise: what a client library adds to a request that does not change the world's
answer, declared per protocol profile with the reason (DESIGN §3, docs/concepts.md).

A sealed tape is replayed by whatever client the rollout runs next month. If the request key
held the JSON-RPC `id`, the MCP SDK's `params._meta` or its `clientInfo`, or a `User-Agent`'s
version, upgrading the client would turn every replay into a miss although the world did not
change. These fields stay on the recorded request (the world saw them) and leave the key.

The table is data, not code: each entry names the profile, where the field is, which methods it
applies to and why, so a catalog of well-known APIs can add its own entries (`NOISE` is
extended, never special-cased). The JSON-RPC `id` is the profile's own noise (the asker's `id`
is written into the answer it is served), handled where the body is keyed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from engine.operations import Profile


@dataclass(frozen=True)
class NoiseField:
    """A field of a request body that leaves the key under `profile`."""

    profile: Profile
    path: tuple[str, ...]  # JSON object keys from a call's top level
    reason: str
    methods: frozenset[str] | None = None  # None: every method of the profile


NOISE: tuple[NoiseField, ...] = (
    NoiseField(
        Profile.JSONRPC,
        ("id",),
        "the client's own counter for matching answers to calls; the proxy writes the "
        "asker's id into the answer it serves",
    ),
    NoiseField(
        Profile.MCP,
        ("id",),
        "as for JSON-RPC: the client's counter, written back into the served answer",
    ),
    NoiseField(
        Profile.MCP,
        ("params", "_meta"),
        "request metadata the SDK adds (progress tokens, tracing, SDK-specific hints); MCP "
        "reserves it for the protocol, never for the tool's arguments",
    ),
    NoiseField(
        Profile.MCP,
        ("params", "clientInfo"),
        "the client library's name and version; the server's answer to `initialize` does not "
        "depend on which SDK version asked",
        frozenset({"initialize"}),
    ),
)

# `product/1.2.3 (comment)` → `product`: the version says which build, not what is asked.
_PRODUCT_VERSION = re.compile(r"/[^\s/]+")
_COMMENT = re.compile(r"\([^)]*\)")


def noise_for(profile: Profile, fields: Iterable[NoiseField] = NOISE) -> tuple[NoiseField, ...]:
    """The noise fields of `profile` (MCP is JSON-RPC too)."""
    profiles = {profile, Profile.JSONRPC} if profile is Profile.MCP else {profile}
    return tuple(field for field in fields if field.profile in profiles)


def without_noise(call: dict[str, Any], profile: Profile) -> dict[str, Any]:
    """`call` (one JSON-RPC message) without the profile's noise fields; the input is kept."""
    method = call.get("method")
    kept = dict(call)
    for field in noise_for(profile):
        if field.methods is not None and method not in field.methods:
            continue
        _drop(kept, field.path)
    return kept


def _drop(document: dict[str, Any], path: tuple[str, ...]) -> None:
    head, *rest = path
    if not rest:
        document.pop(head, None)
        return
    inner = document.get(head)
    if isinstance(inner, dict):
        copied = dict(inner)
        _drop(copied, tuple(rest))
        document[head] = copied


def user_agent_product(value: str) -> str:
    """A `User-Agent` without its versions and comments, for a tape that keys it
    (`match_headers`): `python-httpx/0.28.1` and `python-httpx/0.27.0` ask alike."""
    return " ".join(_PRODUCT_VERSION.sub("", _COMMENT.sub("", value)).split())
