"""Dependency ground truth: would this recorded read answer differently for a branch now?

Every read is a pure function of (corpus view, seed, request, occurrence), so the question has
an exact answer with no labels: render the read against the baseline corpus (the base world,
or another branch) and against the branch's current corpus, and compare status and bytes. The
benchmark scores dependency models (closure, path, rules, hints) against this; without it their
precision and recall could only be asserted. `judge_served` grades a read some asker was actually
served (by its X-Request-Id) against that asker's own state: the lie rate comes from it, never
from the resolver's own account of what it did.
"""

from __future__ import annotations

import hashlib
from typing import Annotated

import pydantic

from worldsim import render
from worldsim.dispatch import parse_branch, render_read
from worldsim.errors import InvalidRequest, UnknownServed, WorldError
from worldsim.world import Served, World

QueryPairs = list[Annotated[list[str], pydantic.Field(min_length=2, max_length=2)]]


class OracleQuery(pydantic.BaseModel):
    """One recorded read to judge for one branch."""

    model_config = pydantic.ConfigDict(extra="forbid")

    branch: str
    method: str = "GET"
    path: str
    query: QueryPairs | dict[str, str] = pydantic.Field(default_factory=list)
    occurrence: int = pydantic.Field(default=0, ge=0)
    seed: int | None = None
    baseline: str | None = None

    def pairs(self) -> tuple[tuple[str, str], ...]:
        if isinstance(self.query, dict):
            return tuple(self.query.items())
        return tuple((name, value) for name, value in self.query)


class OracleBatch(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    reads: list[OracleQuery] = pydantic.Field(max_length=10_000)


def _side(world: World, branch: str | None, query: OracleQuery, seed: int) -> dict[str, object]:
    try:
        rendered = render_read(
            world.view(branch),
            seed,
            query.path,
            query.pairs(),
            query.occurrence,
            call_weight=world.attention_call_weight,
        )
    except WorldError as error:
        rendered = render.Rendered(error.status, error.problem())
    body = render.encode(rendered.payload)
    return {
        "status": rendered.status,
        "sha256": hashlib.sha256(body).hexdigest(),
        "reads": list(rendered.reads),
    }


def judge(world: World, query: OracleQuery) -> dict[str, object]:
    """Compare one read rendered for `query.branch` against its baseline; touches no state."""
    if query.method.upper() != "GET":
        raise InvalidRequest(
            f"the oracle judges reads (GET); {query.method.upper()} is a write and always changes"
            " what it writes"
        )
    branch = parse_branch(query.branch)
    baseline = parse_branch(query.baseline) if query.baseline is not None else None
    seed = world.seed if query.seed is None else query.seed
    before = _side(world, baseline, query, seed)
    after = _side(world, branch, query, seed)
    differs = before["status"] != after["status"] or before["sha256"] != after["sha256"]
    return {
        "branch": branch,
        "baseline": baseline,
        "method": "GET",
        "path": query.path,
        "query": [list(pair) for pair in query.pairs()],
        "request_key": render.request_key("GET", query.path, query.pairs(), b""),
        "occurrence": query.occurrence,
        "seed": seed,
        "differs": differs,
        "base": before,
        "now": after,
    }


class ServedQuery(pydantic.BaseModel):
    """A read some asker was served (named by its X-Request-Id), judged for that asker's state."""

    model_config = pydantic.ConfigDict(extra="forbid")

    request_id: str = pydantic.Field(min_length=1, max_length=64)
    sandbox: str = pydantic.Field(min_length=1, max_length=256)


class ServedBatch(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    reads: list[ServedQuery] = pydantic.Field(max_length=10_000)


def _digest(world: World, sandbox: str | None, served: Served) -> str:
    try:
        rendered = world.read_as(
            world.sandbox(sandbox) if sandbox is not None else None,
            served.draw.seed,
            served.path,
            served.query,
            served.draw.occurrence,
            served.draw.epoch,
        )
    except WorldError as error:
        rendered = render.Rendered(error.status, error.problem())
    return hashlib.sha256(render.encode(rendered.payload)).hexdigest()


def judge_served(world: World, query: ServedQuery) -> dict[str, object]:
    """Was a served read true for this asker at the moment it was served, with its own noise?

    The answer is re-rendered with the exogenous draw it was served with (so sharing noise is
    never counted) against the asker's current sandbox: different bytes mean the asker was
    shown a state that is not its own (a stale read, a lie). ``changed`` says whether the
    asker's writes changed this read at all (the dependency ground truth). Judge right after
    serving, before the asker's next write.
    """
    served = world.served(query.request_id)
    if served is None:
        raise UnknownServed(
            f"the world has no served read {query.request_id!r} (unknown id, or forgotten)",
            {"request_id": query.request_id},
        )
    sandbox = query.sandbox if query.sandbox in world.branches() else None
    if sandbox is None:
        raise UnknownServed(
            f"no sandbox {query.sandbox[:80]!r} (never opened, or reset)",
            {"sandbox": query.sandbox},
        )
    now = _digest(world, sandbox, served)
    base = _digest(world, None, served)
    return {
        "request_id": query.request_id,
        "path": served.path,
        "stale": now != served.body_sha256,
        "changed": now != base,
    }
