"""The statement that opens each transaction of the lifecycle, fused or plain.

A resolve opens by taking its ask (tape and branch found, occurrence taken, versions read); a
record opens by taking its ticket's pending record and tape. On PostgreSQL each is one fused
statement (store/fused.py: one round trip, and a resolve's also reads the answer its first look
will most likely need); elsewhere, or when the tape is not as the last resolve found it, the
plain statements run in turn. This module alone makes that choice, so a new tape setting is
read in one place (`draft_ask`) whichever statement runs; without it the choice sat inside
engine/asks.py and resolver/recording.py, each importing the fused statements.
"""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

from engine.asks import (
    Ask,
    Draft,
    build_ask,
    classify_draft,
    draft_ask,
    finish_ask,
    looked_up_resources,
)
from engine.draft_memo import DraftMemo
from engine.policy import DependencyModel, Mode, lookup_fingerprint
from engine.refs import BranchRef, Hint, TapeRef
from engine.resolve_request import ResolveRequest
from engine.session_labels import uses_session
from resolver.ask_store import find_session_label, find_tools_hint, load_tape_and_branch
from resolver.schemas import check_branch_path, check_tape_name
from store.fused import (
    ReadAhead,
    pop_pending_and_tape,
    take_occurrence_and_versions,
    take_occurrence_as_guessed,
)
from store.hints import find_hint
from store.prepared import Executor

# A record opens with `pop_pending_and_tape`: the ticket's pending record taken with its tape,
# one statement on PostgreSQL, two elsewhere (it makes that choice itself).
__all__ = ["ReadAhead", "TakenAsk", "pop_pending_and_tape", "take_ask"]


class TakenAsk(NamedTuple):
    """What `take_ask` gives: the tape found (the next resolve's guess), the ask, and the
    answer the opening statement read at the ask's (tape, key, occurrence) and the fingerprint
    its address has if the branch wrote none of its resources (None when it read none:
    SQLite, no guess, or the tape was not as guessed)."""

    tape: TapeRef
    branch: BranchRef
    ask: Ask
    read_ahead: ReadAhead | None


def take_ask(
    session: Executor,
    wire: ResolveRequest,
    body: bytes,
    *,
    redaction_key: bytes,
    guess: TapeRef | None = None,
    drafts: DraftMemo | None = None,
) -> TakenAsk:
    """The tape and branch found and the ask taken at its occurrence: a write, so call it
    exactly once per ask (a poll reuses the ask it was given and never takes another).

    The occurrence is the one write made before deciding (the address needs it). `guess` is
    the tape as an earlier resolve found it: the draft, hint and classification are worked out
    from it first, so finding the tape and branch, taking the occurrence and reading the
    versions are one statement on PostgreSQL (`take_occurrence_as_guessed`), which takes the
    occurrence only if the tape is still the guessed one; if it is not, the ask is taken again
    from the tape found. Either way the commit is relaxed (`relax_commit` of
    `load_tape_and_branch`): this is the resolve path. `drafts` remembers drafts across
    branches (siblings ask alike: engine/draft_memo.py).
    """
    found = None
    # A tape naming resources by `{session}` classifies after finding the branch (its lineage
    # names the session), so it opens with the plain statements.
    if guess is not None and not uses_session(guess.settings):
        taken = _take_as_guessed(
            session, guess, wire, body, redaction_key=redaction_key, drafts=drafts
        )
        if isinstance(taken, TakenAsk):
            return taken
        found = taken
    tape, branch = found or load_tape_and_branch(session, wire.tape, wire.branch, relax_commit=True)
    lookups = StoreLookups(session)
    ask = build_ask(
        tape, branch, wire, body, redaction_key=redaction_key, lookups=lookups, drafts=drafts
    )
    return TakenAsk(tape, branch, ask, None)


class StoreLookups:
    """`AskLookups` in the resolve's transaction: the occurrence is taken as it is read."""

    def __init__(self, session: Executor) -> None:
        self.session = session

    def hint(self, tape_id: int, key_hash: str) -> Hint | None:
        return find_hint(tape_id, key_hash, session=self.session)

    def tools_hint(self, tape_id: int, draft: Draft) -> Hint | None:
        return find_tools_hint(self.session, tape_id, draft)

    def session_label(self, draft: Draft) -> str:
        return find_session_label(self.session, draft)

    def occurrence_and_versions(
        self, branch_id: int, key_hash: str, resources: frozenset[str], attempt: str | None
    ) -> tuple[int, dict[str, str]]:
        return take_occurrence_and_versions(
            branch_id, key_hash, resources, attempt=attempt, session=self.session
        )


def _take_as_guessed(
    session: Executor,
    guess: TapeRef,
    wire: ResolveRequest,
    body: bytes,
    *,
    redaction_key: bytes,
    drafts: DraftMemo | None,
) -> TakenAsk | tuple[TapeRef, BranchRef] | None:
    """`take_ask` in one statement from the guess; else the tape and branch it found (the
    tape is not the guessed one: nothing taken), or None when either is missing."""
    check_tape_name(wire.tape)
    check_branch_path(wire.branch)
    # The branch's id is not known yet; the draft does not depend on it.
    draft = (drafts or draft_ask)(
        guess, BranchRef(-1, wire.branch), wire, body, redaction_key=redaction_key
    )
    hint = None
    if draft.model is DependencyModel.HINTS:
        hint = find_hint(guess.id, draft.key.hash, session=session)
    classification = classify_draft(draft, hint, find_tools_hint(session, guess.id, draft))
    # The address's fingerprint if the branch has written none of the resources (a read of a
    # lineage that wrote nothing it reads: most reads), whose answer the statement reads too.
    unwritten = lookup_fingerprint(
        mode=Mode(guess.mode),
        is_write=classification.is_write,
        true_fingerprint="",
        branch=wire.branch,
    )
    taken = take_occurrence_as_guessed(
        wire.tape,
        wire.branch,
        guess,
        draft.key.hash,
        looked_up_resources(draft, classification),
        fingerprint_guess=unwritten,
        attempt=wire.attempt,
        session=session,
    )
    if taken is None:
        return None
    if taken.occurrence is None:
        return taken.tape, taken.branch
    draft = replace(draft, tape=taken.tape, branch=taken.branch)
    ask = finish_ask(
        draft,
        classification,
        occurrence=taken.occurrence,
        versions=taken.versions,
        attempt=wire.attempt,
    )
    return TakenAsk(taken.tape, taken.branch, ask, taken.read_ahead)
