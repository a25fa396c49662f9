"""The report with its trainer signals, gathered from the store in one place.

The report route, the branch routes, the viewer and `/metrics` all need the same numbers (per
branch counts and exogenous digest, per fork rates); computing them here keeps the four in
agreement. The arithmetic is `resolver/signals.py`; this module only reads the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.orm import Session

from engine.fingerprint import UNKNOWN_PREFIX, unknown_version
from engine.policy import RECORDING_DECISIONS, Decision
from groundhog.protocol.report_notes import NOTES
from resolver.contamination import contamination_view, suspects
from resolver.costs import cost_report
from resolver.report import build_report
from resolver.signals import EMPTY_DIGEST, branch_signals, exogenous_digests, fork_signals
from store import contamination, costs, inspect, signals
from store.branches import list_branches
from store.models import Branch, Tape

UNRECORDED_LISTED = 100  # the report counts them all and lists the first this many


def counted_report(
    tape: Tape, *, session: Session, branches: Sequence[Branch] | None = None
) -> dict[str, Any]:
    """`build_report`: the decision counts per branch and in total, and the unrecorded list
    with what each unrecorded write invalidated. The cheap part of the report (the `counts`
    view); `signed_report` adds what needs every answer of the tape. `branches`: the tape's,
    when the caller has listed them already."""
    if branches is None:
        branches = list_branches(tape.id, session=session)
    tallies = inspect.decision_tallies(tape.id, session=session)
    unrecorded = inspect.unrecorded_events(
        tape.id, sorted(RECORDING_DECISIONS), limit=UNRECORDED_LISTED, session=session
    )
    unknown = inspect.unknown_versions(tape.id, UNKNOWN_PREFIX, session=session)
    ids = {b.path: b.id for b in branches}
    invalidated = {
        row.id: sorted(
            resource
            for resource, version in unknown.get(row.branch, {}).items()
            if version == unknown_version(ids[row.branch], row.key_hash, row.occurrence, resource)
        )
        for row in unrecorded
    }
    paths = [b.path for b in branches]
    return build_report(tape.name, tape.mode, paths, tallies, unrecorded, invalidated)


def signed_report(tape: Tape, *, session: Session, around: str | None = None) -> dict[str, Any]:
    """`counted_report` plus, per branch, its signals and digest, and per fork the group's.

    With `around`, digests are folded only for that branch and its children (what its branch
    view shows), so showing one branch does not read every answer of a large tape.
    """
    branches = list_branches(tape.id, session=session)
    report = counted_report(tape, session=session, branches=branches)
    wanted = None
    if around is not None:
        wanted = {around} | {b.path for b in branches if b.parent_path == around}
    digests = exogenous_digests(signals.consumed_answers(tape.id, session=session, branches=wanted))
    for path, counts in report["branches"].items():
        found = digests.get(path, {})
        counts.update(
            {
                key: value
                for key, value in branch_signals(counts).items()
                if key in ("share_rate", "refetch_rate", "refetched")
            }
        )
        counts["exogenous_digest"] = found.get("digest", EMPTY_DIGEST)
        counts["exogenous_answers"] = found.get("answers", 0)
    parents = {b.path: b.parent_path for b in branches}
    report["forks"] = fork_signals(report["branches"], parents, digests)
    _add_contamination(report, tape, {b.path: b.fork_point for b in branches}, session=session)
    return report


def _add_contamination(
    report: dict[str, Any], tape: Tape, fork_points: dict[str, int], *, session: Session
) -> None:
    """`possibly_contaminated` per branch and in total, and the suspect recordings listed."""
    writes = contamination.live_writes(tape.id, Decision.WRITE, session=session)
    found = []
    if writes:
        recordings = contamination.read_recordings_after(
            tape.id, writes[0].id, [Decision.RECORDED, Decision.REFETCHED], session=session
        )
        found = suspects(writes, recordings, fork_points)
    served = contamination.reads_served(
        tape.id,
        [s.recording.exchange_id for s in found if s.recording.exchange_id],
        session=session,
    )
    per_branch, listing = contamination_view(found, served, listed=UNRECORDED_LISTED)
    for path, counts in report["branches"].items():
        counts["possibly_contaminated"] = per_branch.get(path, 0)
    report["totals"]["possibly_contaminated"] = sum(per_branch.values())
    report["possibly_contaminated"] = listing
    report["notes"] = dict(NOTES)


def branch_signal_views(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Branch path -> the fields the branch routes add: its signals, and its fork's if forked."""
    views: dict[str, dict[str, Any]] = {}
    for path, counts in report["branches"].items():
        view: dict[str, Any] = {
            "exogenous_digest": counts["exogenous_digest"],
            "exogenous_answers": counts["exogenous_answers"],
            "signals": branch_signals(counts),
        }
        if path in report["forks"]:
            view["fork"] = report["forks"][path]
        views[path] = view
    return views


def cost_section(tape: Tape, *, session: Session) -> dict[str, Any]:
    """The cost report (`resolver/costs.py`) of a tape, priced by its config's `prices`."""
    parents = {b.path: b.parent_path for b in list_branches(tape.id, session=session)}
    tallies = costs.host_tallies(tape.id, session=session)
    return cost_report(tape.settings.prices, tallies, parents)
