"""A lease holder's hit: the resolver's own decision, computed at the sidecar from its copy.

A sidecar proxy holding a branch's lease (proxy/held_branches.py) has the branch's counters and
versions as the resolver handed them over (resolver/lease_service.py `take`) and the recorded
answers it has seen. For each request it builds the ask with the resolver's own `build_ask`,
reading the branch from that copy instead of the store (`CopyLookups`), and runs the one
decision path, `decision.decide_step`, with a lookup in its answer cache. Only a plain hit is
answered here: whatever else the decision asks for (a claim, a live call, an injected fault, a
refusal, a replayed write) or whatever the copy cannot tell (a recorded hint, a lineage's
session, a secret keyed by the deployment's key) makes it `None`, and the resolver decides as
always. Without this module the sidecar would need its own copy of the resolve path, which
would drift from the resolver's.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field

from engine import injection
from engine.asks import (
    Ask,
    Draft,
    build_ask,
    needs_session_label,
    needs_tools_hint,
    passes_through,
)
from engine.cache import Address, Recorded
from engine.decision import Step, decide_step
from engine.draft_memo import DraftMemo
from engine.errors import EngineError
from engine.facts import address_of, facts_of, recorded_facts
from engine.policy import Decision
from engine.refs import BranchRef, Hint, TapeRef
from engine.resolve_request import ResolveRequest
from groundhog.protocol.wire import LeaseGrant

# The copy keys no secret: an ask whose request held one is the resolver's (its placeholder is
# keyed by the deployment's key), so any key serves for the rest.
_UNUSED_KEY = secrets.token_bytes(32)


class NotLocal(EngineError):
    """The copy cannot tell what the store would: the resolver decides this ask (never leaves
    this module: `local_hit` answers None)."""


@dataclass
class BranchCopy:
    """What a holder serves a branch from: the tape and branch as the resolver sees them, the
    branch's occurrence counts by key (advanced by each answer) and its resource versions."""

    tape: TapeRef
    branch: BranchRef
    counts: dict[str, int] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    # False when the grant held back some counts (a branch with more keys than a grant
    # carries): a key missing from `counts` is then unknown, not never asked.
    complete: bool = True

    @classmethod
    def from_grant(cls, grant: LeaseGrant) -> BranchCopy:
        tape = grant["tape"]
        return cls(
            tape=TapeRef(
                tape["id"],
                tape["name"],
                tape["world_seed"],
                tape["mode"],
                bool(tape["online"]),
                tape["dependency_model"],
                tape["config"] or {},
            ),
            branch=BranchRef(grant["branch"]["id"], grant["branch"]["path"]),
            counts={key: int(count) for key, count in grant["counts"].items()},
            versions=dict(grant["versions"]),
            complete=bool(grant.get("counts_complete", True)),
        )


class CopyLookups:
    """`asks.AskLookups` over a `BranchCopy`: the occurrence is read, not taken (the holder
    counts it once the hit is served)."""

    def __init__(self, copy: BranchCopy) -> None:
        self.copy = copy

    def hint(self, tape_id: int, key_hash: str) -> Hint | None:
        raise NotLocal("the tape's `hints` model reads recorded hints")

    def tools_hint(self, tape_id: int, draft: Draft) -> Hint | None:
        if needs_tools_hint(draft):
            raise NotLocal("a tools/call reads its endpoint's declared tools")
        return None

    def session_label(self, draft: Draft) -> str:
        if needs_session_label(draft):
            raise NotLocal("`{session}` reads the lineage's sessions")
        return ""

    def occurrence_and_versions(
        self, branch_id: int, key_hash: str, resources: frozenset[str], attempt: str | None
    ) -> tuple[int, dict[str, str]]:
        versions, counts = self.copy.versions, self.copy.counts
        if key_hash not in counts and not self.copy.complete:
            raise NotLocal("the grant held this key's count back (the branch has too many)")
        return counts.get(key_hash, 0), {
            resource: versions[resource] for resource in resources if resource in versions
        }


@dataclass(frozen=True)
class LocalHit:
    ask: Ask
    recorded: Recorded
    # A latency fault's delay (engine/injection.py), as the resolver adds it to a served hit.
    delay_ms: int = 0


def local_hit(
    copy: BranchCopy,
    wire: ResolveRequest,
    body: bytes,
    find: Callable[[Address], Recorded | None],
    drafts: DraftMemo | None = None,
) -> LocalHit | None:
    """The hit the resolver would serve this request from the copy, or None (ask the resolver).

    `find` looks an address up in the holder's answer cache; `drafts` remembers drafts across
    the holder's branches."""
    try:
        ask = build_ask(
            copy.tape,
            copy.branch,
            wire,
            body,
            redaction_key=_UNUSED_KEY,
            lookups=CopyLookups(copy),
            drafts=drafts,
        )
    except EngineError:  # NotLocal among them
        return None  # the resolver says the same, or what the copy cannot
    if ask.findings:
        return None
    facts = facts_of(ask, passthrough=passes_through(copy.tape, ask, wire.body_too_large))
    plan = decide_step(facts)
    if plan.step is not Step.LOOK_UP:
        return None
    found = find(address_of(ask))
    if found is None:
        return None
    plan = decide_step(facts.updated(**recorded_facts(found)))
    if plan.step is not Step.SERVE or plan.decision is not Decision.SHARED:
        return None
    fault = injection.fault_for(ask)
    return LocalHit(ask, found, delay_ms=0 if fault is None else fault.delay_ms)
