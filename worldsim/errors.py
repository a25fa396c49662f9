"""Typed world errors and their one mapping to RFC 9457 problem+json.

Bad input must get a precise, machine-readable answer and never a 500: the benchmark and the
proxy relay these bodies, and a traceback would leak host detail and break determinism. Every
error the world can raise is a subclass of `WorldError`, turned into bytes in one place.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from groundhog.protocol import problems
from groundhog.protocol.problems import MEDIA_TYPE as PROBLEM_MEDIA_TYPE

__all__ = ["PROBLEM_MEDIA_TYPE", "problem_document"]

TYPE_BASE = "urn:groundhog:worldsim:problem:"


def problem_document(
    status: int, kind: str, title: str, detail: str, **extras: object
) -> dict[str, object]:
    """An RFC 9457 problem with the world's own type URN: the one shape of every refusal."""
    return problems.problem_document(status, kind, title, detail, type_base=TYPE_BASE, **extras)


@dataclass
class WorldError(Exception):
    """A request the world refuses; `extras` become extra problem members."""

    detail: str
    extras: dict[str, object] = field(default_factory=dict)
    status = 400
    kind = "bad-request"
    title = "Bad request"

    def problem(self) -> dict[str, object]:
        return problem_document(self.status, self.kind, self.title, self.detail, **self.extras)


class UnknownEndpoint(WorldError):
    status = 404
    kind = "unknown-endpoint"
    title = "Unknown endpoint"


class InvalidRequest(WorldError):
    status = 422
    kind = "invalid-request"
    title = "Invalid request"


class ReadOnlyConflict(WorldError):
    status = 409
    kind = "read-only"
    title = "Document is read-only"


class BodyTooLarge(WorldError):
    status = 413
    kind = "body-too-large"
    title = "Request body too large"


class SandboxCapReached(WorldError):
    status = 429
    kind = "sandbox-cap"
    title = "Too many branch sandboxes"


class UnknownSession(WorldError):
    status = 401
    kind = "unknown-session"
    title = "Unknown session"


class UnknownServed(WorldError):
    status = 404
    kind = "unknown-served"
    title = "Unknown served read"
