"""A branch's resource versions: what its lineage wrote, which makes a read's true fingerprint.

A read's answer depends on the versions of the resources it reads; a write bumps the versions of
what it writes, on that branch only (a fork copies the parent's rows, store/branches.py). Without
this module a branch could not tell a read of its own writes from a read of the shared world.
The resolve path reads a handful of named resources with a statement compiled once per count of
names; the admin views read all of a branch's. Every function takes `session=` and never commits.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import BindParameter, bindparam, select
from sqlalchemy.orm import Session

from store.models import ResourceVersion
from store.prepared import Executor, Prepared
from store.unit import Unit
from store.upsert import insert_for_dialect

_versions = ResourceVersion.__table__


def branch_versions(branch_id: int, *, session: Session) -> dict[str, str]:
    query = select(ResourceVersion.resource, ResourceVersion.version).where(
        ResourceVersion.branch_id == branch_id
    )
    return {resource: version for resource, version in session.execute(query)}


def _versions_of_statement(count: int) -> Prepared:
    """The lookup of `count` resources (a resolve names a handful; sizes up to 64 are kept)."""
    names: list[BindParameter[str]] = [bindparam(f"r{index}") for index in range(count)]
    return Prepared(
        lambda _dialect: select(_versions.c.resource, _versions.c.version).where(
            _versions.c.branch_id == bindparam("branch_id"), _versions.c.resource.in_(names)
        )
    )


_VERSIONS_OF = [_versions_of_statement(count) for count in range(65)]


def versions_of(
    branch_id: int, resources: set[str] | frozenset[str], *, session: Executor
) -> dict[str, str]:
    """The branch's versions of those of `resources` its lineage wrote."""
    if not resources:
        return {}
    ordered = sorted(resources)
    parameters: dict[str, Any] = {f"r{index}": name for index, name in enumerate(ordered)}
    parameters["branch_id"] = branch_id
    count = len(ordered)
    statement = _VERSIONS_OF[count] if count < len(_VERSIONS_OF) else _versions_of_statement(count)
    return dict(statement.rows(parameters, session=session))


def _set_many_statement(count: int) -> Prepared:
    """`count` versions of one branch set in one statement (a multi-row upsert)."""

    def build(dialect: str) -> Any:
        rows: list[dict[str, Any]] = [
            {
                "branch_id": bindparam("branch_id"),
                "resource": bindparam(f"r{index}"),
                "version": bindparam(f"v{index}"),
            }
            for index in range(count)
        ]
        statement = insert_for_dialect(dialect, _versions).values(rows)
        return statement.on_conflict_do_update(
            index_elements=["branch_id", "resource"], set_={"version": statement.excluded.version}
        )

    return Prepared(build)


_SET_MANY = [_set_many_statement(count) for count in range(1, 17)]


def _set_many(branch_id: int, versions: dict[str, str]) -> tuple[Prepared, dict[str, Any]]:
    """The one upsert that sets `versions` (non-empty) of a branch, and its parameters."""
    ordered = sorted(versions.items())
    parameters: dict[str, Any] = {"branch_id": branch_id}
    for index, (resource, version) in enumerate(ordered):
        parameters[f"r{index}"], parameters[f"v{index}"] = resource, version
    count = len(ordered)
    statement = _SET_MANY[count - 1] if count <= len(_SET_MANY) else _set_many_statement(count)
    return statement, parameters


def set_versions_later(branch_id: int, versions: dict[str, str], *, unit: Unit) -> None:
    """`set_versions` as one statement, with the unit's commit (PostgreSQL: in its round
    trip): a write's intent costs its transaction one statement and no round trip."""
    if versions:
        unit.write_later(*_set_many(branch_id, versions))


def set_versions(branch_id: int, versions: dict[str, str], *, session: Executor) -> None:
    """Set the branch's `versions` now, in one prepared statement: built per call through the
    session, the upserts of a record's version bump were a tenth of a benchmark resolver's CPU."""
    if versions:
        statement, parameters = _set_many(branch_id, versions)
        statement.rows(parameters, session=session)
