"""Typed world errors and their one mapping to RFC 9457 problem+json.

Bad input must get a precise, machine-readable answer and never a 500: the benchmark and the
proxy relay these bodies, and a traceback would leak host detail and break determinism. Every
error the world can raise is a subclass of `WorldError`, turned into bytes in one place.
"""

from __future__ import annotations

from dataclasses import dataclass, field

PROBLEM_MEDIA_TYPE = "application/problem+json"


@dataclass
class WorldError(Exception):
    """A request the world refuses; `extras` become extra problem members."""

    detail: str
    extras: dict[str, object] = field(default_factory=dict)
    status = 400
    kind = "bad-request"
    title = "Bad request"

    def problem(self) -> dict[str, object]:
        return {
            **self.extras,
            "type": f"urn:groundhog:worldsim:problem:{self.kind}",
            "title": self.title,
            "status": self.status,
            "detail": self.detail,
        }


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
