"""Which tape setting makes the world's session credentials interchangeable, if any is needed.

Each rollout names its sandbox by a session token in `Authorization: Bearer`. Under default-deny
redaction the resolver keys a keyed placeholder of that credential, so siblings (each with its
own token) would never share a read unless the tape declares the world host's credentials
interchangeable; a resolver whose redaction only drops credentials keys none, and siblings share
either way. The setting's name is read from the resolver's own OpenAPI description (the public
interface), so the benchmark follows the resolver without importing it. Sharing across tokens
is sound here because a session's state differs from the base world only by the branch's own
writes, which the fingerprint tracks.
"""

from __future__ import annotations

import logging
from typing import Any

import httpx

logger = logging.getLogger(__name__)


def _tape_schema(document: dict[str, Any]) -> dict[str, Any]:
    schemas = document.get("components", {}).get("schemas", {})
    return schemas.get("TapeConfig") or next(
        (schema for name, schema in schemas.items() if name.startswith("TapeConfig")), {}
    )


def interchangeable_settings(openapi: dict[str, Any], host: str) -> dict[str, Any]:
    """The tape settings declaring ``host``'s credentials interchangeable (empty if none exist)."""
    properties = _tape_schema(openapi).get("properties", {})
    for name, schema in properties.items():
        if "interchangeable" not in name.lower():
            continue
        kinds = {schema.get("type")} | {item.get("type") for item in schema.get("anyOf", [])}
        if "boolean" in kinds:
            return {name: True}
        return {name: [host]}
    return {}


def detect(resolver_url: str, host: str, *, timeout: float = 10.0) -> dict[str, Any]:
    """Ask the resolver's OpenAPI document; an unreachable document means no setting."""
    try:
        response = httpx.get(f"{resolver_url}/openapi.json", timeout=timeout, trust_env=False)
        response.raise_for_status()
        settings = interchangeable_settings(response.json(), host)
    except (httpx.HTTPError, ValueError) as error:
        logger.warning("could not read the resolver's OpenAPI document: %s", error)
        return {}
    logger.info("credential settings for %s: %s", host, settings or "none needed")
    return settings
