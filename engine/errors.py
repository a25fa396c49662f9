"""The engine's errors: one root, so "one of ours" is one `except` in either shell.

The engine decides and raises; it renders nothing. A shell maps what it catches to its own
answer (the resolver to problem+json, the proxy to an option error naming the fix), so no HTTP
or framework type is needed here.
"""

from __future__ import annotations

from typing import Any


class EngineError(Exception):
    """Bad input to the engine, with a `detail` saying what to fix and `extras` naming where."""

    def __init__(self, detail: str, **extras: Any) -> None:
        super().__init__(detail)
        self.detail = detail
        self.extras = extras


class InvalidSpec(EngineError):
    """A specification the engine parses (a failpoint list) is malformed."""
