"""JSON views of store rows for the admin API (shapes fixed in docs/internals.md).

One place renders a tape or a branch, so `POST /v1/tapes`, `GET /v1/tapes/{tape}`, seal and
import all answer the same shape.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from store.branches import child_paths
from store.models import Branch, Tape
from store.tapes import count_branches, count_exchanges
from store.versions import branch_versions


def tape_config(tape: Tape) -> dict[str, Any]:
    """The tape's defining fields, comparable with a `TapeConfig` dump: its identity and every
    setting (`TapeSettings`, defaults filled in for a tape stored before a setting existed)."""
    return {
        "name": tape.name,
        "world_seed": tape.world_seed,
        "mode": tape.mode,
        "online": tape.online,
        "dependency_model": tape.dependency_model,
        **tape.settings.stored_config(),
    }


def tape_view(tape: Tape, *, session: Session) -> dict[str, Any]:
    return {
        **tape_config(tape),
        "exchanges": count_exchanges(tape.id, session=session),
        "branches": count_branches(tape.id, session=session),
    }


def branch_view(branch: Branch, *, session: Session) -> dict[str, Any]:
    return {
        "path": branch.path,
        "parent": branch.parent_path,
        "children": child_paths(branch.tape_id, branch.path, session=session),
        "fork_point": branch.fork_point,
        "events": branch.event_count,
        "versions": branch_versions(branch.id, session=session),
        "shim_counters": branch.shim_counters or {},
    }
