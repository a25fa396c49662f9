"""Regular expressions an admin supplies run on RE2, a linear-time engine, or are refused.

A tape's `redact_patterns` run over every request and answer of the tape. Python's `re`
backtracks: `(a+)+b` took about 10 s on one request of 27 `a`s and stalled the resolver's
other tapes meanwhile (issue 53). RE2 matches in time linear in the text for any pattern; what
it cannot express (lookarounds, backreferences) is refused when the tape is configured, with a
422 naming the pattern and what to drop.
"""

from __future__ import annotations

from typing import Any

import re2  # type: ignore[import-untyped]  # google-re2 ships no type hints

from engine.errors import InvalidSpec

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # the refusal says why; RE2's own stderr line would only repeat it


def compile_admin_regex(pattern: str, *, field: str = "redact_patterns") -> Any:
    """`pattern` compiled by RE2 (a `re`-like object: finditer, search, match objects)."""
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as error:
        reason = error.args[0] if error.args else error
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise InvalidSpec(
            f"pattern {pattern!r} cannot run on a linear-time regex engine (RE2: {reason}); "
            "lookarounds, backreferences and possessive quantifiers are not supported, so "
            "rewrite it without them",
            field=field,
        ) from error
