"""Branch routes: fork a branch into children at its current state, list and show branches,
and keep each branch's shim counters (so any process that runs as a branch resumes its sequence).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request

from groundhog.protocol.admin import BranchInfo, BranchList, ForkResult
from resolver.auth import require_admin
from resolver.errors import Conflict, InvalidInput, NotFound
from resolver.routes.leases import settle_before
from resolver.routes.tapes import find_tape, store_of
from resolver.schemas import ForkRequest, ShimCounters, check_branch_path
from resolver.shim_counters import CountersMismatch, merge_counters
from resolver.tape_signals import branch_signal_views, signed_report
from resolver.views import branch_view
from store.branches import child_paths, fork_branch, get_branch
from store.branches import list_branches as list_stored_branches
from store.db import transaction

router = APIRouter(prefix="/v1/tapes", tags=["branches"], dependencies=[Depends(require_admin)])


def _next_free_names(taken: set[str], count: int) -> list[str]:
    names: list[str] = []
    index = 0
    while len(names) < count:
        if f"b{index}" not in taken:
            names.append(f"b{index}")
        index += 1
    return names


def fork_warnings(earlier_children: list[str]) -> list[str]:
    """What a user must hear when forking a branch that was forked before.

    The same words for every re-fork of one branch (no counts), so a client that warns once per
    message (Python's default filter) says it once, not at every group of a training run."""
    if not earlier_children:
        return []
    parent = earlier_children[0].rsplit("/", 1)[0]
    return [
        f"branch {parent!r} was forked before and already has children: the new "
        "children start from the same point, so where they ask what those asked they are served "
        "those recordings, not a new draw of the world. For an independent draw open a new tape "
        "(or fork from a later point); to add siblings to that group on purpose, ignore this."
    ]


@router.post("/{tape}/fork", status_code=201, response_model=ForkResult)
def fork(tape: str, body: ForkRequest, request: Request) -> dict[str, Any]:
    parent_path = check_branch_path(body.parent)
    settle_before(request, tape, parent_path)  # the parent's counters, with its sidecar's hits
    with transaction(store_of(request).write) as session:
        found = find_tape(tape, session=session)
        parent = get_branch(found.id, parent_path, session=session)
        if parent is None:
            raise NotFound(
                f"parent branch {parent_path!r} does not exist on tape {tape!r}",
                tape=tape,
                branch=parent_path,
            )
        earlier = child_paths(found.id, parent_path, session=session)
        existing = {path.rsplit("/", 1)[-1] for path in earlier}
        if isinstance(body.children, int):
            names = _next_free_names(existing, body.children)
        else:
            names = list(body.children)
            clashing = sorted(existing.intersection(names))
            if clashing:
                raise Conflict(
                    f"branch {parent_path!r} already has children named {', '.join(clashing)}",
                    tape=tape,
                    branches=[f"{parent_path}/{name}" for name in clashing],
                )
        paths = [f"{parent_path}/{name}" for name in names]
        # Counters sent with the fork win (an in-process parent knows exactly where it stands);
        # otherwise the parent's stored counters, so a CLI fork continues a CLI-run parent.
        counters = (
            body.shim_counters if body.shim_counters is not None else parent.shim_counters or {}
        )
        for path in paths:
            fork_branch(parent, path, counters, session=session)
        capabilities = request.app.state.resolver.capabilities
        return {
            "parent": parent_path,
            "branches": paths,
            "warnings": fork_warnings(earlier),
            "capabilities": {path: capabilities.of(found.id, path) for path in paths},
        }


@router.get("/{tape}/branches", response_model=BranchList)
def list_branches(tape: str, request: Request) -> dict[str, Any]:
    with transaction(store_of(request).read) as session:
        found = find_tape(tape, session=session)
        branches = list_stored_branches(found.id, session=session)
        signals = branch_signal_views(signed_report(found, session=session))
        return {
            "branches": [
                {**branch_view(branch, session=session), **signals.get(branch.path, {})}
                for branch in branches
            ]
        }


@router.put("/{tape}/branches/{branch:path}/shim-counters", response_model=BranchInfo)
def report_shim_counters(
    tape: str, branch: str, body: ShimCounters, request: Request
) -> dict[str, Any]:
    """A worker's counters, merged so the stored sequence never goes back (see shim_counters)."""
    check_branch_path(branch)
    reported = body.model_dump(mode="json")
    with transaction(store_of(request).write) as session:
        found = find_tape(tape, session=session)
        if body.world_seed is not None and body.world_seed != found.world_seed:
            raise InvalidInput(
                f"shim counters were taken in world {body.world_seed}, but tape {tape!r} has "
                f"world_seed {found.world_seed}",
                field="world_seed",
            )
        row = get_branch(found.id, branch, session=session)
        if row is None:
            raise NotFound(
                f"branch {branch!r} does not exist on tape {tape!r}", tape=tape, branch=branch
            )
        try:
            row.shim_counters = merge_counters(row.shim_counters or {}, reported)
        except CountersMismatch as error:
            raise Conflict(str(error), tape=tape, branch=branch) from error
        return branch_view(row, session=session)


@router.get("/{tape}/branches/{branch:path}", response_model=BranchInfo)
def show_branch(tape: str, branch: str, request: Request) -> dict[str, Any]:
    check_branch_path(branch)
    settle_before(request, tape, branch)
    with transaction(store_of(request).read) as session:
        found = find_tape(tape, session=session)
        row = get_branch(found.id, branch, session=session)
        if row is None:
            raise NotFound(
                f"branch {branch!r} does not exist on tape {tape!r}", tape=tape, branch=branch
            )
        report = signed_report(found, session=session, around=row.path)
        signals = branch_signal_views(report)
        capability = request.app.state.resolver.capabilities.of(found.id, row.path)
        return {
            **branch_view(row, session=session),
            **signals.get(row.path, {}),
            "capability": capability,
        }
