"""store/write_answers.py: a branch's own write answer is found by its lineage, nearest first,
survives an export and import, and counts in the digest and the body check."""

from __future__ import annotations

from pathlib import Path

from store import exchanges
from store.blob_integrity import actual_hashes, first_damaged_body
from store.branches import fork_branch, get_branch
from store.db import Store, transaction
from store.digest import tape_digest
from store.models import Blob, SandboxSession, WriteAnswer
from store.sandbox_sessions import remember_session_later
from store.tapes import delete_tape, get_tape
from store.transfer import export_tape, import_tape
from store.unit import unit_of_work
from store.write_answers import keep_write_answer_later, lineage_write_answer
from tests.store.test_exchanges import content
from tests.store.test_tapes import make_tape

ADDRESS = ("login-key", 0, "fp")


def _tape_with_tree(store: Store, name: str = "writes") -> tuple[int, dict[str, int]]:
    """root → a → a/x, root → b, and the address's exchange (the first recording, a's)."""
    tape_id = make_tape(store, name)
    with transaction(store.write) as session:
        root = get_branch(tape_id, "root", session=session)
        a = fork_branch(root, "root/a", {}, session=session)
        b = fork_branch(root, "root/b", {}, session=session)
        x = fork_branch(a, "root/a/x", {}, session=session)
        sha = exchanges.put_blob(b"a's session", session=session)
        exchanges.insert_new_exchange(tape_id, *ADDRESS, content(sha), session=session)
        ids = {"root": root.id, "a": a.id, "b": b.id, "x": x.id}
    return tape_id, ids


def _keep(store: Store, branch_id: int, body: bytes, address: tuple[str, int, str] = ADDRESS):
    with unit_of_work(store) as unit:
        sha = exchanges.put_blob_later(body, unit=unit)
        keep_write_answer_later(
            branch_id,
            *address,
            status=200,
            headers=[["set-cookie", f"sid=[redacted:set-cookie:{branch_id}]"]],
            body_sha=sha,
            unit=unit,
        )


def _lineage_body(store: Store, tape_id: int, branch_id: int) -> bytes | None:
    with transaction(store.read) as session:
        found = lineage_write_answer(tape_id, branch_id, *ADDRESS, session=session.connection())
    return None if found is None else found.body


def test_each_lineage_finds_its_nearest_writer(store: Store) -> None:
    tape_id, ids = _tape_with_tree(store)
    _keep(store, ids["a"], b"a's session")
    _keep(store, ids["b"], b"b's session")
    assert _lineage_body(store, tape_id, ids["a"]) == b"a's session"
    assert _lineage_body(store, tape_id, ids["b"]) == b"b's session"
    assert _lineage_body(store, tape_id, ids["x"]) == b"a's session"  # its parent's
    assert _lineage_body(store, tape_id, ids["root"]) is None  # nobody above root wrote
    _keep(store, ids["x"], b"x's own session")
    assert _lineage_body(store, tape_id, ids["x"]) == b"x's own session"  # itself first


def test_the_answer_names_the_addresss_exchange_and_its_own_headers(store: Store) -> None:
    tape_id, ids = _tape_with_tree(store)
    _keep(store, ids["b"], b"b's session")
    with transaction(store.read) as session:
        exchange = exchanges.find_exchange(tape_id, *ADDRESS, session=session)
        found = lineage_write_answer(tape_id, ids["b"], *ADDRESS, session=session.connection())
    assert exchange is not None and found is not None
    assert found.exchange_id == exchange.id
    assert found.status == 200 and found.error_kind is None
    assert found.headers == [["set-cookie", f"sid=[redacted:set-cookie:{ids['b']}]"]]


def test_another_address_or_another_tape_is_not_found(store: Store) -> None:
    tape_id, ids = _tape_with_tree(store)
    other_tape, other_ids = _tape_with_tree(store, "other")
    _keep(store, ids["a"], b"a's session")
    with transaction(store.read) as session:
        connection = session.connection()
        assert (
            lineage_write_answer(tape_id, ids["a"], "login-key", 1, "fp", session=connection)
            is None
        )
        assert (
            lineage_write_answer(tape_id, ids["a"], "login-key", 0, "", session=connection) is None
        )
    assert _lineage_body(store, other_tape, other_ids["a"]) is None


def test_a_retried_write_keeps_the_answer_given_last(store: Store) -> None:
    tape_id, ids = _tape_with_tree(store)
    _keep(store, ids["a"], b"first try")
    _keep(store, ids["a"], b"second try")
    assert _lineage_body(store, tape_id, ids["a"]) == b"second try"


def test_export_and_import_keep_write_answers_and_the_digest_counts_them(
    store: Store, tmp_path: Path
) -> None:
    tape_id, ids = _tape_with_tree(store)
    with transaction(store.read) as session:
        before = tape_digest(tape_id, session=session)
    _keep(store, ids["b"], b"b's session")
    with transaction(store.read) as session:
        after = tape_digest(tape_id, session=session)
        export_tape(get_tape("writes", session=session), tmp_path / "e.sqlite3", session=session)
    assert after != before  # a different answer of one branch is different content
    with transaction(store.write) as session:
        copy = import_tape(tmp_path / "e.sqlite3", "copy", session=session)
    with transaction(store.read) as session:
        assert tape_digest(copy.id, session=session) == after
        copy_b = get_branch(copy.id, "root/b", session=session)
        found = lineage_write_answer(copy.id, copy_b.id, *ADDRESS, session=session.connection())
    assert found is not None and found.body == b"b's session"


def test_a_damaged_write_answer_body_is_named(store: Store) -> None:
    tape_id, ids = _tape_with_tree(store)
    _keep(store, ids["b"], b"b's session")
    with transaction(store.write) as session:
        (sha,) = session.query(WriteAnswer.response_body_sha).all()[0:1][0]
        session.query(Blob).filter(Blob.sha256 == sha).update({"data": b"changed"})
    with transaction(store.read) as session:
        damaged = first_damaged_body(
            tape_id, actual_hashes(tape_id, session=session), session=session
        )
    assert damaged is not None
    assert "the body of its write answer of branch 'root/b'" in damaged.describe()


def test_deleting_the_tape_deletes_its_write_answers_and_sessions(store: Store) -> None:
    _, ids = _tape_with_tree(store)
    _keep(store, ids["b"], b"b's session")
    with unit_of_work(store) as unit:
        remember_session_later(ids["b"], "h", "s-1", unit=unit)
    with transaction(store.write) as session:
        delete_tape(get_tape("writes", session=session), session=session)
    with transaction(store.read) as session:
        assert session.query(WriteAnswer).count() == 0
        assert session.query(SandboxSession).count() == 0
