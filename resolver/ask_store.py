"""An ask's reads and writes of the store: the tape and branch found, the lineage's session
label and the endpoint's declared tools looked up, a write's versions bumped.

Apart from engine/asks.py, which drafts, classifies and finishes the ask as pure functions
and is what a lease-holding sidecar runs too (engine/leased_hits.py): it loads no store.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from engine.asks import Draft, needs_session_label, needs_tools_hint
from engine.fingerprint import bump_versions
from engine.mcp_tools import tools_key_hash
from engine.refs import BranchRef, Hint, TapeRef
from engine.session_labels import unknown_label
from resolver.errors import NotFound
from resolver.resolve_tx.units import Executor
from resolver.schemas import check_branch_path, check_tape_name
from store import refs
from store.hints import find_hint
from store.sandbox_sessions import lineage_session_label
from store.tapes import tape_exists
from store.versions import set_versions, versions_of


def find_tape_and_branch(
    session: Executor, tape_name: str, branch_path: str, *, relax_commit: bool = False
) -> tuple[TapeRef, BranchRef] | None:
    """Both in one round trip, or None if either is missing; malformed names are refused.

    `relax_commit`: see `store.refs.find_tape_and_branch` (for the resolve path only).
    """
    check_tape_name(tape_name)
    check_branch_path(branch_path)
    return refs.find_tape_and_branch(
        tape_name, branch_path, session=session, relax_commit=relax_commit
    )


def load_tape_and_branch(
    session: Executor, tape_name: str, branch_path: str, *, relax_commit: bool = False
) -> tuple[TapeRef, BranchRef]:
    found = find_tape_and_branch(session, tape_name, branch_path, relax_commit=relax_commit)
    if found is not None:
        return found
    if not tape_exists(tape_name, session=session):
        raise NotFound(f"tape {tape_name!r} does not exist", tape=tape_name)
    raise NotFound(
        f"branch {branch_path!r} does not exist on tape {tape_name!r}",
        tape=tape_name,
        branch=branch_path,
    )


def find_session_label(session: Executor, draft: Draft) -> str:
    """What the draft's `{session}` names: "" where the tape's rules name no session or the
    request carries none, else the label its lineage opened the session with (one lookup)."""
    if not needs_session_label(draft):
        return ""
    assert draft.session_hash is not None
    label = lineage_session_label(
        draft.tape.id, draft.branch.id, draft.session_hash, session=session
    )
    return label if label is not None else unknown_label(draft.session_hash)


def find_tools_hint(session: Executor, tape_id: int, draft: Draft) -> Hint | None:
    """The read-only tools of the draft's MCP endpoint, looked up only for a `tools/call` the
    tape does not classify itself (one lookup; every other ask reads nothing)."""
    if not needs_tools_hint(draft):
        return None
    return find_hint(tape_id, tools_key_hash(draft.request.url()), session=session)


def bump_branch(
    session: Session,
    branch_id: int,
    resources: frozenset[str] | set[str],
    key_hash: str,
    body_sha: str,
) -> None:
    current = versions_of(branch_id, resources, session=session)
    set_versions(branch_id, bump_versions(current, resources, key_hash, body_sha), session=session)
