"""Branch capabilities (DESIGN §3 "Capability"): a worker acts only on the branch it was given.

Rollout workers run untrusted agent code, and the proxy takes the tape and branch a request
names at its word: without a capability a policy that names a sibling's branch is served the
sibling's recordings (its writes' answers included) and can record onto it, and naming another
tape (a held-out evaluation tape) works the same — a reward-hacking channel. So each
(tape, branch) has a capability, an HMAC under the deployment key (resolver/deployment_key.py)
of the tape's id and the branch path: unguessable without the key, stable across restarts and
replicas that share the key, different for every branch, every tape and every deployment. The
admin API hands it out (the fork answer, the branch view); a worker presents it in its proxy
URL's credentials (`http://TAPE:BRANCH:CAPABILITY@proxy`) or the `X-Groundhog-Capability`
header; the proxy forwards it in the resolve ask; the resolve checks it here before the ask
takes anything. A tape's `branch_capabilities` says whether it is `required` or `optional`;
a tape that does not say takes the deployment's default (`required` unless the resolver
listens on loopback only: python -m resolver decides).

The check is on every resolve, hits included, so the derived value is kept per (tape id,
branch): a dictionary lookup and a constant-time comparison of 32 characters.
"""

from __future__ import annotations

import hashlib
import hmac

from engine.tape_settings import BranchCapabilities, TapeSettings
from groundhog.protocol.capabilities import capability_digest
from resolver.errors import ResolverError

__all__ = [
    "BranchCapabilities",
    "Capabilities",
    "CapabilityRefused",
    "capability_digest",
    "default_for",
]

# The key of capabilities is the deployment key's, under a label of its own: a capability is
# never a redaction placeholder (engine/redaction.py keys those under the same deployment key).
_LABEL = b"groundhog branch capability v1"
# 128 bits, as lowercase hex: safe unencoded in a URL's userinfo and in a header.
CAPABILITY_BYTES = 16
CAPABILITY_LENGTH = 2 * CAPABILITY_BYTES
# Derived values kept (a few per branch of the running groups); more only clears them.
REMEMBERED = 65_536


def default_for(*, loopback_only: bool) -> BranchCapabilities:
    """The deployment's default: `optional` where only this machine can reach the resolver (the
    quickstart's `curl -H` stays simple), `required` wherever a network can."""
    return BranchCapabilities.OPTIONAL if loopback_only else BranchCapabilities.REQUIRED


class CapabilityRefused(ResolverError):
    """A request names a tape and branch without that branch's capability (tape `required`)."""

    status, slug, title = 403, "capability-refused", "Capability refused"


class Capabilities:
    """The deployment's capabilities: derive one, say which a tape requires, check an ask."""

    def __init__(
        self, deployment_key: bytes, *, default: BranchCapabilities = BranchCapabilities.OPTIONAL
    ) -> None:
        self._key = hmac.new(deployment_key, _LABEL, hashlib.sha256).digest()
        self.default = default
        self._derived: dict[tuple[int, str], str] = {}

    def of(self, tape_id: int, branch: str) -> str:
        """The capability of branch `branch` of the tape whose id is `tape_id`."""
        known = self._derived.get((tape_id, branch))
        if known is not None:
            return known
        message = b"%d\x00%s" % (tape_id, branch.encode("utf-8"))
        derived = hmac.new(self._key, message, hashlib.sha256).digest()[:CAPABILITY_BYTES].hex()
        if len(self._derived) >= REMEMBERED:
            self._derived.clear()
        self._derived[(tape_id, branch)] = derived
        return derived

    def policy(self, settings: TapeSettings) -> BranchCapabilities:
        """The tape's `branch_capabilities`, else the deployment's default."""
        return settings.branch_capabilities or self.default

    def opens(self, tape_id: int, branch: str, presented: str | None) -> bool:
        """Whether `presented` is the capability of exactly this branch of this tape."""
        if not presented:
            return False
        expected = self.of(tape_id, branch)
        return hmac.compare_digest(
            presented.encode("utf-8", "surrogatepass"), expected.encode("ascii")
        )

    def check(
        self,
        *,
        tape_id: int,
        tape: str,
        settings: TapeSettings,
        branch: str,
        presented: str | None,
    ) -> None:
        """Raise `CapabilityRefused` unless the ask may act on the branch. An `optional` tape
        checks nothing (what is presented is not looked at: it opens every branch anyway)."""
        if self.policy(settings) is BranchCapabilities.OPTIONAL:
            return
        if self.opens(tape_id, branch, presented):
            return
        if presented:
            reason = "the capability presented is not this branch's (one opens exactly one branch)"
        else:
            reason = f"tape {tape!r} requires branch capabilities and the request presented none"
        raise CapabilityRefused(
            f"{reason}: nothing was asked or forwarded for branch {branch!r} of tape {tape!r}. "
            "A worker presents its branch's capability in the proxy URL's credentials "
            "(http://TAPE:BRANCH:CAPABILITY@proxy:port, the branch URL-encoded) or the "
            "X-Groundhog-Capability header; `groundhog env --tape T --branch B` prints the "
            "exports, and the fork answer and the branch's admin view carry it",
            tape=tape,
            branch=branch,
            decision="refused",
        )
