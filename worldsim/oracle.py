"""Dependency ground truth: would this recorded read answer differently for a branch now?

Every read is a pure function of (corpus view, seed, request, occurrence), so the question has
an exact answer with no labels: render the read against the baseline corpus (the base world,
or another branch) and against the branch's current corpus, and compare status and bytes. The
benchmark scores dependency models (closure, path, rules, hints) against this; without it their
precision and recall could only be asserted.
"""

from __future__ import annotations

import hashlib
from typing import Annotated

import pydantic

from worldsim import render
from worldsim.dispatch import parse_branch, render_read
from worldsim.errors import InvalidRequest, WorldError
from worldsim.world import World

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
            world.view(branch), seed, query.path, query.pairs(), query.occurrence
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
