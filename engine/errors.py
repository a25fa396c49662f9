"""The engine's errors: one root, so "one of ours" is one `except` in either shell.

The engine decides and raises; it renders nothing. A shell maps what it catches to its own
answer (the resolver to problem+json, the proxy to an option error naming the fix), so no HTTP
or framework type is needed here; an error a client reads names its problem in the wire's
words (`ProblemError`), which the resolver renders as its own. Injected faults, which are
answers and never raised, are engine/faults.py's.
"""

from __future__ import annotations

from typing import Any


class EngineError(Exception):
    """Bad input to the engine, with a `detail` saying what to fix and `extras` naming where."""

    def __init__(self, detail: str, **extras: Any) -> None:
        super().__init__(detail)
        self.detail = detail
        self.extras = extras


class ProblemError(EngineError):
    """An error a shell answers with a problem of its own type, the wire's words in
    `status`, `slug` and `title` (groundhog/protocol/problems.py): the resolver renders it as
    it renders its own errors, so an ask refused here reads the same as before the ask path
    moved out of the resolver."""

    status = 400
    slug = "bad-request"
    title = "Bad request"


class InvalidSpec(EngineError):
    """A specification the engine parses (a failpoint list) is malformed."""
