"""Errors the client raises, carrying the resolver's RFC 9457 problem detail.

A caller (or the CLI) needs the server's own explanation — which tape, which field, which
valid values — not a bare HTTP status. Connection failures get their own type with the fix.
"""

from __future__ import annotations

from typing import Any


class ForkWarning(UserWarning):
    """A fork the resolver warned about (the fork answer's `warnings`): it was made."""


class GroundhogError(Exception):
    """A problem: the resolver's problem+json (`status`, `title`, `detail`, extras), or a local
    one found before any request (`status` None), such as a missing file or a bad URL."""

    def __init__(
        self,
        status: int | None,
        title: str,
        detail: str,
        *,
        type: str = "about:blank",
        extras: dict[str, Any] | None = None,
    ) -> None:
        self.status = status
        self.title = title
        self.detail = detail
        self.type = type
        self.extras = dict(extras or {})
        prefix = f"{status} {title}" if status else title
        super().__init__(f"{prefix}: {detail}" if detail else prefix)

    @classmethod
    def from_problem(cls, status: int, document: Any, fallback: str) -> GroundhogError:
        """Build from a problem+json body; any other body becomes the detail as text."""
        if not isinstance(document, dict):
            return cls(status, "HTTP error", fallback.strip()[:500] or f"HTTP {status}")
        known = {"type", "title", "status", "detail"}
        return cls(
            status,
            str(document.get("title") or f"HTTP {status}"),
            str(document.get("detail") or ""),
            type=str(document.get("type") or "about:blank"),
            extras={key: value for key, value in document.items() if key not in known},
        )


class ResolverUnreachable(GroundhogError):
    """No resolver answered at the configured URL."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(
            None,
            "Resolver unreachable",
            f"cannot reach the resolver at {url}: start it with `groundhog up` "
            f"or set GROUNDHOG_RESOLVER_URL ({reason})",
        )
        self.url = url


class LocalProblem(GroundhogError):
    """A problem found on this side, before or instead of a resolver answer (`status` None).

    The root of every other exception the package raises, so `except GroundhogError` catches
    all of them; each subclass keeps its builtin base (`RuntimeError`, `ValueError`, …) for
    callers that already catch that. Its message is its detail alone, as before the root.
    """

    title = "Local problem"

    def __init__(self, detail: str) -> None:
        super().__init__(None, self.title, detail)
        self.args = (detail,)  # what `str()` shows: the detail alone, without the title
