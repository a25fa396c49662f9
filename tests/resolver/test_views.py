"""Unit tests of resolver/views.py: the admin API's JSON shapes of a tape and a branch."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.orm import Session

from engine.tape_settings import stored_settings
from resolver.views import branch_view, tape_config, tape_view
from store.branches import fork_branch, get_branch
from store.db import Store, open_store, transaction
from store.models import Tape
from store.tapes import create_tape
from store.versions import set_versions


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path / 'views.sqlite3'}")
    yield opened
    opened.dispose()


def _tape(session: Session, config: dict[str, Any] | None = None) -> Tape:
    return create_tape(
        session=session,
        name="shown",
        world_seed=9,
        mode="replay",
        online=False,
        dependency_model="path",
        config=config if config is not None else {"ignore_params": ["ts"]},
    )


def test_tape_config_flattens_the_stored_config(store: Store) -> None:
    with transaction(store.write) as session:
        tape = _tape(session)
        assert tape_config(tape) == {
            "name": "shown",
            "world_seed": 9,
            "mode": "replay",
            "online": False,
            "dependency_model": "path",
            # Every setting, the ones the config does not name at their defaults.
            # (a tape stored before a setting existed: engine/tape_settings.py).
            **stored_settings({"ignore_params": ["ts"]}).stored_config(),
        }


def test_tape_view_counts_branches_and_exchanges(store: Store) -> None:
    with transaction(store.write) as session:
        tape = _tape(session, config={})
        root = get_branch(tape.id, "root", session=session)
        assert root is not None
        fork_branch(root, "root/a", {}, session=session)
        fork_branch(root, "root/b", {}, session=session)
        view = tape_view(tape, session=session)
    assert view["branches"] == 3
    assert view["exchanges"] == 0
    # A config stored without a setting shows it at its default (every setting is shown).
    assert view["name"] == "shown" and view["ignore_params"] == []


def test_branch_view_shows_lineage_versions_and_counters(store: Store) -> None:
    with transaction(store.write) as session:
        tape = _tape(session)
        root = get_branch(tape.id, "root", session=session)
        assert root is not None
        set_versions(root.id, {"host:x": "v1"}, session=session)
        child = fork_branch(root, "root/a", {"random": 3}, session=session)
        fork_branch(child, "root/a/z", {}, session=session)
        root_view = branch_view(root, session=session)
        child_view = branch_view(child, session=session)
    assert root_view == {
        "path": "root",
        "parent": None,
        "children": ["root/a"],
        "fork_point": root.fork_point,
        "events": 0,
        "versions": {"host:x": "v1"},
        "shim_counters": {},
    }
    assert child_view["parent"] == "root"
    assert child_view["children"] == ["root/a/z"]
    assert child_view["versions"] == {"host:x": "v1"}  # copied at the fork
    assert child_view["shim_counters"] == {"random": 3}


def test_missing_shim_counters_render_as_an_empty_object(store: Store) -> None:
    with transaction(store.write) as session:
        tape = _tape(session)
        root = get_branch(tape.id, "root", session=session)
        assert root is not None
        root.shim_counters = None  # type: ignore[assignment]
        assert branch_view(root, session=session)["shim_counters"] == {}
