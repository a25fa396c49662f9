"""Control endpoints the benchmark uses: health, sandbox reset, call statistics, the oracle.

These stand outside the world (underscore paths, never counted as live calls): resetting
sandboxes stands in for an environment's rollback, `/_stats` counts live calls at the server
(the API-reduction metric), and `/_oracle` is the dependency ground truth. Without them the
benchmark could not reset between worlds, count calls it did not make itself, or score
dependency models.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from worldsim import oracle
from worldsim.dispatch import parse_branch
from worldsim.routes import WorldDependency

health_router = APIRouter(tags=["health"])
router = APIRouter(tags=["control"])

BranchQuery = Annotated[str | None, Query(max_length=256)]


@health_router.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.post("/_reset", summary="Drop every branch sandbox, or those named by ?branch= (repeated)")
async def reset(
    world: WorldDependency,
    branch: Annotated[list[str] | None, Query()] = None,
) -> dict[str, object]:
    # One call drops a whole group's sandboxes: a call per branch was a tenth of the
    # benchmark driver's time. A malformed or too long name is a 422 before anything is dropped.
    dropped = world.reset(*(parse_branch(name) for name in branch or ()))
    return {"dropped": dropped, "sandboxes": len(world.branches())}


@router.get("/_stats", summary="Live calls counted at the server, per endpoint and branch")
async def stats(world: WorldDependency) -> dict[str, object]:
    return world.stats()


@router.post("/_stats/reset", summary="Zero the call counts (all, or one ?branch=)")
async def reset_stats(world: WorldDependency, branch: BranchQuery = None) -> dict[str, object]:
    world.reset_stats(parse_branch(branch) if branch is not None else None)
    return world.stats()


@router.get("/_branches", summary="The branches that have a sandbox")
async def branches(world: WorldDependency) -> dict[str, object]:
    return {"branches": world.branches()}


@router.post("/_oracle", summary="Would this read answer differently for the branch now?")
async def judge(world: WorldDependency, query: oracle.OracleQuery) -> dict[str, object]:
    return oracle.judge(world, query)


@router.post("/_oracle/batch", summary="The oracle for many reads at once")
async def judge_batch(world: WorldDependency, batch: oracle.OracleBatch) -> dict[str, object]:
    return {"results": [oracle.judge(world, query) for query in batch.reads]}


@router.post("/_oracle/served", summary="Grade served reads (by X-Request-Id) for their askers")
async def judge_served(world: WorldDependency, batch: oracle.ServedBatch) -> dict[str, object]:
    return {"results": [oracle.judge_served(world, query) for query in batch.reads]}
