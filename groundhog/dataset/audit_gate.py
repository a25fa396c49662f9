"""The publish-time secrets gate: a tape is published only if the secrets audit finds nothing.

The audit itself (`GET /v1/tapes/{tape}/audit`, issue 31) lives on the resolver; this is the
one place publishing asks it. A resolver without the route cannot vouch for the tape, so that
counts as a refusal too, unless the publisher says `--allow-unscrubbed` and takes it on.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from groundhog.client import Groundhog
from groundhog.errors import GroundhogError, LocalProblem


class AuditRefused(LocalProblem):
    """The tape may hold secrets, or nobody could check: publishing stops."""

    title = "Audit refused"


@dataclass(frozen=True)
class AuditOutcome:
    clean: bool | None  # None: the resolver has no audit route
    findings: int
    summary: str  # for the dataset card


def audit_gate(client: Groundhog, tape: str, *, allow_unscrubbed: bool) -> AuditOutcome:
    """Ask the resolver's audit; refuse findings or a missing audit unless `allow_unscrubbed`."""
    route = f"/v1/tapes/{quote(tape, safe='')}/audit"
    try:
        document = client.transport.json("GET", route)
    except GroundhogError as error:
        # A missing tape is the tape's 404 (it names the tape); a missing route is the route's.
        if error.status != 404 or "tape" in error.extras:
            raise
        outcome = AuditOutcome(None, 0, "not run: the resolver has no secrets audit")
        if not allow_unscrubbed:
            raise AuditRefused(
                f"the resolver has no secrets audit (GET {route} is not there), so nothing "
                "vouches that the tape holds no credentials; upgrade the resolver, or publish "
                "anyway with --allow-unscrubbed"
            ) from error
        return outcome
    findings = list(document.get("findings") or [])
    clean = bool(document.get("clean")) and not findings
    if clean:
        return AuditOutcome(True, 0, "clean (no stored bytes look like secrets)")
    if not allow_unscrubbed:
        raise AuditRefused(
            f"the secrets audit found {len(findings)} stored value(s) that look like secrets; "
            f"see `groundhog tape audit {tape}`, scrub them, or publish with --allow-unscrubbed"
        )
    return AuditOutcome(False, len(findings), f"{len(findings)} finding(s), published unscrubbed")
