"""resolver/tape_signals.py read straight from a real resolver's store: the counted report is
the signed report's counts (one path, the cheap part), and a caller's branch list changes
nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from resolver.tape_signals import counted_report, signed_report
from store.branches import list_branches
from store.db import Store, open_store, transaction
from store.tapes import get_tape
from tests.resolver.proxy_double import ProxyDouble
from tests.support.servers import ServerProcess


@pytest.fixture
def resolver_store(resolver_server: ServerProcess) -> Iterator[Store]:
    """The running resolver's own SQLite file, opened beside it (WAL: readers do not block)."""
    data = Path(resolver_server.command[resolver_server.command.index("--data") + 1])
    store = open_store(f"sqlite:///{data / 'groundhog.sqlite3'}", migrate_schema=False)
    yield store
    store.dispose()


def test_the_counted_report_is_the_signed_reports_counts(
    proxy: ProxyDouble, tape_name: str, resolver_store: Store
) -> None:
    proxy.open(tape_name)
    a, b = proxy.fork(tape_name, children=2)
    for branch in (a, b):
        proxy.ask(tape_name, branch, path="/search")
    proxy.ask(tape_name, b, "POST", "/docs/1", body=b"b wrote")
    proxy.ask(tape_name, b, path="/docs/1")

    with transaction(resolver_store.read) as session:
        tape = get_tape(tape_name, session=session)
        assert tape is not None
        counted = counted_report(tape, session=session)
        listed = counted_report(
            tape, session=session, branches=list_branches(tape.id, session=session)
        )
        signed = signed_report(tape, session=session)

    assert listed == counted
    decisions = {"recorded": 1, "refetched": 1, "shared": 1, "write": 1}
    assert counted["totals"]["decisions"] == decisions  # b's read after its write: refetched
    assert set(signed) > set(counted) and "forks" in signed
    assert signed["unrecorded"] == counted["unrecorded"] == []
    assert signed["totals"] == {**counted["totals"], "possibly_contaminated": 0}
    for path, counts in counted["branches"].items():
        assert {key: signed["branches"][path][key] for key in counts} == counts
        assert "exogenous_digest" in signed["branches"][path]
