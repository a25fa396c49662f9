"""Reading what each branch asked from an export, and the clean start its replay begins from."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlalchemy import func, select

from resolver.verify.conversation import fresh_start, read_conversation
from store.branches import get_branch
from store.counters import take_occurrence
from store.db import open_store, transaction
from store.exchanges import add_next_event, put_blob
from store.models import Exchange
from store.tapes import get_tape
from store.transfer import export_tape
from store.versions import set_versions
from tests.store.test_digest import ADDRESSES, fill


def _event(branch_id: int, exchange_id: int | None, decision: str) -> dict[str, object]:
    return dict(
        branch_id=branch_id, method="GET", url="https://a/x", key_hash="a", occurrence=0,
        fingerprint="", decision=decision, is_read=True, true_fingerprint_nonempty=False,
        exchange_id=exchange_id,
    )  # fmt: skip


def test_branches_asks_in_order_and_a_clean_start(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'store.sqlite3'}")
    tape_id = fill(store, "t", ADDRESSES, body=b"answer")
    with transaction(store.write) as session:
        root = get_branch(tape_id, "root", session=session)
        child = get_branch(tape_id, "root/b0", session=session)
        exchange_id = session.scalar(select(func.min(Exchange.id)))
        put_blob(b"answer", session=session)
        add_next_event(session=session, **_event(root.id, exchange_id, "recorded"))
        add_next_event(session=session, **_event(root.id, None, "refused"))
        add_next_event(session=session, **_event(child.id, exchange_id, "shared"))
        take_occurrence(root.id, "a", session=session)
        set_versions(root.id, {"host:a": "v"}, session=session)
    export = tmp_path / "export.sqlite3"
    with transaction(store.read) as session:
        export_tape(get_tape("t", session=session), export, session=session)
    store.dispose()

    conversation = read_conversation(export)
    assert conversation.tape == "t" and set(conversation.branches) == {"root", "root/b0"}
    root_asks = conversation.branches["root"].asks
    assert [ask.seq for ask in root_asks] == [1, 2]
    assert root_asks[0].replayable and root_asks[0].url == "https://a/x"
    assert root_asks[0].body == b"answer" and root_asks[0].status == 200
    assert not root_asks[1].replayable and root_asks[1].decision == "refused"
    assert [b.path for b in conversation.children("root")] == ["root/b0"]
    assert conversation.branches["root/b0"].shim_counters == {"n": 1}

    clean = tmp_path / "clean.sqlite3"
    fresh_start(export, clean)
    with sqlite3.connect(clean) as connection:
        count = {
            table: connection.execute(f"select count(*) from {table}").fetchone()[0]
            for table in ("gh_events", "gh_occurrences", "gh_versions", "gh_branches")
        }
        (online,) = connection.execute("select online from gh_tapes").fetchone()
        (exchanges,) = connection.execute("select count(*) from gh_exchanges").fetchone()
    connection.close()
    assert count == {"gh_events": 0, "gh_occurrences": 0, "gh_versions": 0, "gh_branches": 1}
    assert online == 0 and exchanges == len(ADDRESSES)
