"""RFC 9457 problem+json documents, built one way by the resolver, the proxy and worldsim.

Each used to assemble its own dict; now one function gives the members and one gives the
deterministic bytes (sorted keys, compact), so identical problems are identical bytes wherever
they are produced, and a client reads them with one parser.
"""

from __future__ import annotations

import json
from typing import Any, Final

MEDIA_TYPE: Final = "application/problem+json"
TYPE_BASE: Final = "https://groundhog.dev/problems/"


def problem_document(
    status: int, slug: str, title: str, detail: str, *, type_base: str = TYPE_BASE, **extras: Any
) -> dict[str, Any]:
    """The problem's members; `extras` cannot override the four standard ones."""
    return {
        **extras,
        "type": type_base + slug,
        "title": title,
        "status": status,
        "detail": detail,
    }


def problem_bytes(status: int, slug: str, title: str, detail: str, **extras: Any) -> bytes:
    """Deterministic problem+json bytes."""
    document = problem_document(status, slug, title, detail, **extras)
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
