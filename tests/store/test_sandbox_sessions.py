"""store/sandbox_sessions.py: a session's label is found in the lineage, nearest branch first."""

from __future__ import annotations

from store.branches import fork_branch, get_branch
from store.db import Store, transaction
from store.sandbox_sessions import lineage_session_label, remember_session_later
from store.unit import unit_of_work
from tests.store.test_tapes import make_tape


def _tree(store: Store, name: str = "sessions") -> tuple[int, dict[str, int]]:
    tape_id = make_tape(store, name)
    with transaction(store.write) as session:
        root = get_branch(tape_id, "root", session=session)
        a = fork_branch(root, "root/a", {}, session=session)
        x = fork_branch(a, "root/a/x", {}, session=session)
        b = fork_branch(root, "root/b", {}, session=session)
        return tape_id, {"root": root.id, "a": a.id, "x": x.id, "b": b.id}


def _label(store: Store, tape_id: int, branch_id: int, hashed: str) -> str | None:
    with transaction(store.read) as session:
        return lineage_session_label(tape_id, branch_id, hashed, session=session.connection())


def _remember(store: Store, branch_id: int, hashed: str, label: str) -> None:
    with unit_of_work(store) as unit:
        remember_session_later(branch_id, hashed, label, unit=unit)


def test_a_fork_goes_on_with_its_parents_session_and_a_sibling_does_not(store: Store) -> None:
    tape_id, ids = _tree(store)
    _remember(store, ids["a"], "h-a", "s-opened-by-a")
    assert _label(store, tape_id, ids["a"], "h-a") == "s-opened-by-a"
    assert _label(store, tape_id, ids["x"], "h-a") == "s-opened-by-a"
    assert _label(store, tape_id, ids["b"], "h-a") is None
    assert _label(store, tape_id, ids["root"], "h-a") is None
    assert _label(store, tape_id, ids["a"], "h-other") is None


def test_the_nearest_branch_wins_and_reopening_takes_the_last_label(store: Store) -> None:
    tape_id, ids = _tree(store)
    _remember(store, ids["a"], "h", "s-parent")
    _remember(store, ids["x"], "h", "s-child")
    assert _label(store, tape_id, ids["x"], "h") == "s-child"
    assert _label(store, tape_id, ids["a"], "h") == "s-parent"
    _remember(store, ids["a"], "h", "s-again")
    assert _label(store, tape_id, ids["a"], "h") == "s-again"


def test_another_tapes_lineage_is_not_searched(store: Store) -> None:
    tape_id, ids = _tree(store)
    other_tape, other = _tree(store, "other")
    _remember(store, other["a"], "h", "s-other-tape")
    assert _label(store, tape_id, ids["a"], "h") is None
    assert _label(store, other_tape, other["x"], "h") == "s-other-tape"
