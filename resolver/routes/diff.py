"""`GET /v1/tapes/{tape}/diff?a=&b=`: where two branches diverged and what they share.

The comparison itself is `resolver.branch_diff` (pure); this route reads from the store only
the parts of the two lineages that differ, so the CLI (`groundhog tape diff`) and the viewer's
whole-timeline page see the same answer.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from sqlalchemy.orm import Session

from resolver.auth import require_admin
from resolver.branch_diff import diff_branches, lineage_split
from resolver.errors import NotFound
from resolver.routes.leases import settle_before
from resolver.routes.tapes import find_tape, store_of
from resolver.schemas import check_branch_path
from store import inspect
from store.branches import list_branches
from store.db import transaction
from store.models import Tape

router = APIRouter(prefix="/v1/tapes", tags=["inspect"], dependencies=[Depends(require_admin)])

# Per side: a diff is read whole into memory, so a runaway branch is cut here, and says so.
MAX_DIFF_EVENTS = 20_000


def tape_diff(tape: Tape, a: str, b: str, *, session: Session) -> dict[str, Any]:
    """The diff of branches `a` and `b` of `tape` (404 naming a branch that does not exist)."""
    fork_points = {}
    for branch in list_branches(tape.id, session=session):
        fork_points[branch.path] = branch.fork_point
    for path in (a, b):
        check_branch_path(path)
        if path not in fork_points:
            raise NotFound(
                f"branch {path!r} does not exist on tape {tape.name!r}",
                tape=tape.name,
                branch=path,
            )
    split = lineage_split(a, b, fork_points)
    limit = MAX_DIFF_EVENTS + 1
    tail_a = inspect.segment_events(tape.id, split.a, limit=limit, session=session)
    tail_b = inspect.segment_events(tape.id, split.b, limit=limit, session=session)
    truncated = max(len(tail_a), len(tail_b)) > MAX_DIFF_EVENTS
    return diff_branches(
        a,
        b,
        split,
        tail_a[:MAX_DIFF_EVENTS],
        tail_b[:MAX_DIFF_EVENTS],
        truncated=truncated,
    )


@router.get("/{tape}/diff")
def diff(
    tape: str,
    request: Request,
    a: str = Query(description="a branch path, e.g. root/b0"),
    b: str = Query(description="another branch path, e.g. root/b1"),
) -> dict[str, Any]:
    """The first divergent request of two branches, then the reads they share and why not."""
    settle_before(request, tape)
    with transaction(store_of(request).read) as session:
        return tape_diff(find_tape(tape, session=session), a, b, session=session)
