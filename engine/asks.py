"""One ask, fully described: the redacted request, its key, classification, occurrence and
fingerprints, gathered from the tape config and the branch's state.

Both the first look at a request and every later single-flight poll work from this value, so
the key and fingerprint are computed exactly once per ask (recomputing would take a second
occurrence). Without it the resolve path would re-derive them in several places.

Building one is pure (`draft_ask`, `classify_draft`, `finish_ask`) except for the store steps
between them: finding the tape and branch, the occurrence it takes (a write) and the branch's
versions it reads. Which statements run them, fused into one or in turn, is the transaction's
opening (resolver/resolve_tx/opening.py `take_ask`), not this module's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from engine.catalog.matching import ToolMatch, match_request, view_for
from engine.dependencies import Classification, classify, origin_resource
from engine.faults import FaultRule, rules_of
from engine.fingerprint import UNKNOWN_PREFIX, fingerprint
from engine.forbidden_targets import refuse_metadata
from engine.keys import RequestKey, request_key
from engine.mcp_tools import names_of
from engine.operations import TOOLS_CALL, Operation
from engine.policy import DependencyModel, Mode, lookup_fingerprint
from engine.protocol_profiles import SESSION_HEADER, detect_operation, pinned_profile
from engine.redaction import policy_from_config, redact_request_cached
from engine.redaction_rules import Finding
from engine.refs import BranchRef, Hint, HintRow, TapeRef
from engine.request import RequestParts
from engine.resolve_request import ResolveRequest
from engine.sandbox_identity import without_sandbox_identity
from engine.session_labels import carried_session, session_hash, uses_session
from engine.toolchain_hosts import is_toolchain_download
from groundhog.protocol import headers as protocol_headers


@dataclass(frozen=True)
class Ask:
    """Everything about one ask that survives between the first look and a later poll."""

    tape_id: int
    tape_name: str
    mode: Mode
    online: bool
    model: DependencyModel
    world_seed: int
    cooperative: bool
    branch_id: int
    branch: str
    request: RequestParts
    key: RequestKey
    body_sha: str
    classification: Classification
    occurrence: int
    true_fingerprint: str
    fingerprint: str
    findings: tuple[Finding, ...] = ()
    # The raw secrets this request held and their placeholders, so an echo of them in the
    # response can be scrubbed. Memory only: never stored, logged or shown.
    secrets: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    # The tape's `faults` rules and simulator (engine/injection.py, engine/simulation.py).
    fault_rules: tuple[FaultRule, ...] = ()
    simulator_url: str | None = None
    simulate_writes: bool = False
    # The tape's `websocket_replay_client_messages`, told to the proxy with a passthrough.
    replay_client_messages: bool = False
    # A write: the branch's versions of its own resources when it was taken. Its record chains
    # the new versions from these, not from the unknown ones its intent left meanwhile.
    versions: tuple[tuple[str, str], ...] = ()
    # The proxy's attempt id: whatever answers the ask names it on the occurrence counter, so a
    # retry of an ask whose answer was lost gets that answer's occurrence (store/counters.py).
    attempt: str | None = None
    # The keyed hash of the sandbox session id the request carried, None outside a session: an
    # ask that opens a session is remembered as its opener (engine/session_labels.py).
    session_hash: str | None = None


# The dependency models the tool catalog applies under: `path` keys resources by path and
# `hints` trusts the world, each its own answer to what a POST reads.
CATALOG_MODELS = frozenset({DependencyModel.CLOSURE, DependencyModel.RULES})


def passes_through(tape: TapeRef, ask: Ask, body_too_large: bool) -> bool:
    """Whether the ask goes to the world unrecorded: a body over the limit, a host the tape's
    `passthrough_hosts` name, or a package index / toolchain download (unless the tape's
    `toolchain_passthrough` is off; a tape stored before it existed reads it off and keeps
    serving the package reads it recorded: engine/tape_settings.py)."""
    host = ask.request.normalised_host
    settings = tape.settings
    if body_too_large or host in settings.passthrough_host_set:
        return True
    return settings.toolchain_passthrough and is_toolchain_download(host, ask.request.path)


def cooperative_headers(ask: Ask) -> list[list[str]]:
    if not ask.cooperative:
        return []
    seed = ask.world_seed
    if ask.mode is Mode.NAIVE:
        salted = hashlib.sha256(f"{ask.world_seed}/{ask.branch}".encode()).digest()
        seed = int.from_bytes(salted[:4], "big")
    return [
        [protocol_headers.BRANCH, ask.branch],
        [protocol_headers.SEED, str(seed)],
        [protocol_headers.OCCURRENCE, str(ask.occurrence)],
    ]


@dataclass(frozen=True)
class Draft:
    """An ask before it is taken: the redacted, keyed request, which needs no branch state."""

    tape: TapeRef
    branch: BranchRef
    request: RequestParts
    key: RequestKey
    model: DependencyModel
    findings: tuple[Finding, ...]
    secrets: tuple[tuple[str, str], ...] = field(repr=False)
    operation: Operation | None = None
    # The keyed hash of the sandbox session id the request carries (engine/session_labels.py).
    session_hash: str | None = None
    # The catalog entry the request calls (engine/catalog), under `closure` and `rules`.
    tool: ToolMatch | None = None
    # This draft's classifications by what else classifying reads (the key's hint, the tools
    # its endpoint declared, the session's label): siblings ask with one remembered draft
    # (engine/draft_memo.py), so the first classifies and the rest look it up. `replace`
    # copies share it; a draft of another tape config is another draft, with its own.
    classified: dict[tuple[object, ...], Classification] = field(
        default_factory=dict, compare=False, repr=False
    )


def draft_ask(
    tape: TapeRef, branch: BranchRef, wire: ResolveRequest, body: bytes, *, redaction_key: bytes
) -> Draft:
    """Redact and key the request (pure: nothing is read or written).

    Sandbox identity leaves it first (engine/sandbox_identity.py); the protocol profile reads
    the redacted body, so an operation's keyed body never holds a secret.
    """
    settings = tape.settings
    refuse_metadata(wire.host, wire.port, settings)
    raw = RequestParts(
        method=wire.method.upper(),
        scheme=wire.scheme,
        host=wire.host,
        port=wire.port,
        path=wire.path or "/",
        query=tuple((name, value) for name, value in wire.query),
        headers=tuple((name, value) for name, value in wire.headers),
        body=body,
    )
    sandboxed = without_sandbox_identity(raw, settings)
    redacted = redact_request_cached(sandboxed, policy_from_config(settings), redaction_key)
    request = redacted.request
    carried = carried_session(raw, settings)
    operation = detect_operation(
        request,
        pinned_profile(settings, request.normalised_host),
        in_session=raw.header(SESSION_HEADER) is not None,
    )
    model = DependencyModel(tape.dependency_model)
    tool = None
    if operation is None and model in CATALOG_MODELS:
        tool = match_request(view_for(settings.catalog), request)
    key = request_key(
        request,
        ignore_params=settings.ignore_params,
        match_headers=settings.match_headers,
        ignore_headers=settings.ignore_headers,
        operation=operation,
        keyed_body=None if tool is None else tool.keyed_body,
    )
    return Draft(
        tape=tape,
        branch=branch,
        request=request,
        key=key,
        model=model,
        findings=redacted.findings,
        secrets=redacted.secrets,
        operation=operation,
        session_hash=None if carried is None else session_hash(carried, redaction_key),
        tool=tool,
    )


def classify_draft(
    draft: Draft,
    hint: HintRow | None,
    tools_hint: Hint | None = None,
    session_label: str = "",
) -> Classification:
    """What the request reads or writes (pure; `hint`: the key's recorded hint, `hints` model;
    `tools_hint`: the read-only tools its MCP endpoint declared, engine/mcp_tools.py;
    `session_label`: what `{session}` names, engine/session_labels.py)."""
    remembered = (
        None if hint is None else (hint.reads, hint.writes),
        None if tools_hint is None else tools_hint.reads,
        session_label,
    )
    found = draft.classified.get(remembered)
    if found is None:
        found = draft.classified[remembered] = _classify(draft, hint, tools_hint, session_label)
    return found


def _classify(
    draft: Draft, hint: HintRow | None, tools_hint: Hint | None, session_label: str
) -> Classification:
    settings = draft.tape.settings
    return classify(
        draft.request,
        draft.model,
        rules=settings.rule_mappings,
        hinted_reads=hint.reads if hint else None,
        hinted_writes=hint.writes if hint else None,
        operation=draft.operation,
        tool_kinds=settings.mcp_tools,
        read_only_tools=names_of(tools_hint.reads) if tools_hint else frozenset(),
        session_label=session_label,
        catalog_kind=None if draft.tool is None else draft.tool.kind,
    )


def needs_tools_hint(draft: Draft) -> bool:
    """Whether the draft is a `tools/call` the tape does not classify itself, whose read-only
    tools its MCP endpoint declared (engine/mcp_tools.py)."""
    operation = draft.operation
    if operation is None or operation.failed:
        return False
    pinned = draft.tape.settings.mcp_tools
    return any(c.method == TOOLS_CALL and c.tool not in pinned for c in operation.calls)


def needs_session_label(draft: Draft) -> bool:
    """Whether the draft's `{session}` must be looked up in its lineage."""
    return draft.session_hash is not None and uses_session(draft.tape.settings)


def fingerprinted_resources(classification: Classification) -> frozenset[str]:
    """The resources whose versions make the ask's true fingerprint."""
    return classification.own_resources if classification.is_write else classification.reads


def looked_up_resources(draft: Draft, classification: Classification) -> frozenset[str]:
    """The resources whose versions the ask reads: its fingerprinted ones and, for a read of
    the `hints` model, its origin's too. A write under `hints` can only mark its origin unknown
    before it goes live (what it writes is named in its answer), so a hinted read counts that
    resource while, and only while, it is unknown (`true_fingerprint_of`)."""
    own = fingerprinted_resources(classification)
    if draft.model is DependencyModel.HINTS and not classification.is_write:
        return own | {origin_resource(draft.request)}
    return own


def true_fingerprint_of(classification: Classification, versions: dict[str, str]) -> str:
    """The fingerprint over the ask's resources, and over any it read that a write in flight
    (or one whose record never landed) left unknown: such a read is never served the base."""
    unknown = {r for r, version in versions.items() if version.startswith(UNKNOWN_PREFIX)}
    return fingerprint(fingerprinted_resources(classification) | unknown, versions)


def finish_ask(
    draft: Draft,
    classification: Classification,
    *,
    occurrence: int,
    versions: dict[str, str],
    attempt: str | None = None,
) -> Ask:
    """The ask at its occurrence, with its fingerprints (pure)."""
    tape, branch, request = draft.tape, draft.branch, draft.request
    settings = tape.settings
    true_fingerprint = true_fingerprint_of(classification, versions)
    mode = Mode(tape.mode)
    address = lookup_fingerprint(
        mode=mode,
        is_write=classification.is_write,
        true_fingerprint=true_fingerprint,
        branch=branch.path,
    )
    cooperative = request.normalised_host in settings.cooperative_host_set
    return Ask(
        tape_id=tape.id,
        tape_name=tape.name,
        mode=mode,
        online=tape.online,
        model=draft.model,
        world_seed=tape.world_seed,
        cooperative=cooperative,
        branch_id=branch.id,
        branch=branch.path,
        request=request,
        key=draft.key,
        body_sha=hashlib.sha256(request.body).hexdigest(),
        classification=classification,
        occurrence=occurrence,
        true_fingerprint=true_fingerprint,
        fingerprint=address,
        findings=draft.findings,
        secrets=draft.secrets,
        fault_rules=tuple(rules_of(settings)),
        simulator_url=settings.simulator_url,
        simulate_writes=settings.simulate_writes,
        replay_client_messages=settings.websocket_replay_client_messages,
        versions=tuple(sorted(versions.items())) if classification.is_write else (),
        attempt=attempt,
        session_hash=draft.session_hash,
    )


class AskLookups(Protocol):
    """Where an ask's branch state comes from: the store (a resolve's transaction,
    resolver/resolve_tx/opening.py) or a lease holder's copy of it (engine/leased_hits.py).
    `build_ask` is the same either way."""

    def hint(self, tape_id: int, key_hash: str) -> HintRow | None: ...

    def tools_hint(self, tape_id: int, draft: Draft) -> Hint | None: ...

    def session_label(self, draft: Draft) -> str: ...

    def occurrence_and_versions(
        self, branch_id: int, key_hash: str, resources: frozenset[str], attempt: str | None
    ) -> tuple[int, dict[str, str]]: ...


def build_ask(
    tape: TapeRef,
    branch: BranchRef,
    wire: ResolveRequest,
    body: bytes,
    *,
    redaction_key: bytes,
    lookups: AskLookups,
    drafts: Callable[..., Draft] | None = None,
) -> Ask:
    """Draft, classify and take the ask at its occurrence, reading the branch through
    `lookups` (taking the occurrence is a write in the store; a holder's copy counts later).

    `drafts`: `draft_ask` itself, or a memo of it (engine/draft_memo.DraftMemo)."""
    draft = (drafts or draft_ask)(tape, branch, wire, body, redaction_key=redaction_key)
    hint = None
    if draft.model is DependencyModel.HINTS:
        hint = lookups.hint(tape.id, draft.key.hash)
    classification = classify_draft(
        draft, hint, lookups.tools_hint(tape.id, draft), lookups.session_label(draft)
    )
    occurrence, versions = lookups.occurrence_and_versions(
        branch.id,
        draft.key.hash,
        frozenset(looked_up_resources(draft, classification)),
        wire.attempt,
    )
    return finish_ask(
        draft, classification, occurrence=occurrence, versions=versions, attempt=wire.attempt
    )
