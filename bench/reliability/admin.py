"""The few admin calls the reliability scenarios make (open a tape, fork it), with tokens.

Kept here rather than borrowed from the benchmark so a refactor there cannot break the
reliability run, and so a token can be sent when the resolver requires one.
"""

from __future__ import annotations

from typing import Any

import httpx


class AdminFailed(RuntimeError):
    """The resolver refused an admin call; the message carries its answer."""


def call(base_url: str, method: str, route: str, *, token: str | None = None, **kwargs: Any) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    response = httpx.request(
        method, base_url + route, headers=headers, timeout=60, trust_env=False, **kwargs
    )
    if response.status_code >= 400:
        raise AdminFailed(f"{method} {route} -> {response.status_code}: {response.text[:500]}")
    return response.json() if response.content else None


def open_forked_tape(
    base_url: str,
    name: str,
    children: int,
    *,
    token: str | None = None,
    dependency_model: str = "path",
    **config: Any,
) -> list[str]:
    """Open tape `name` (groundhog mode) and fork `children` branches off root."""
    body = {"name": name, "world_seed": 7, "mode": "groundhog", **config}
    body["dependency_model"] = dependency_model
    call(base_url, "POST", "/v1/tapes", token=token, json=body)
    fork = {"parent": "root", "children": children}
    answer = call(base_url, "POST", f"/v1/tapes/{name}/fork", token=token, json=fork)
    return list(answer["branches"])
