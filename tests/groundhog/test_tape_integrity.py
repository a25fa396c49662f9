"""End to end: one body byte flipped in an exported file is refused by `groundhog tape import`,
naming the exchange, and the file's digest is no longer the tape's."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from typer.testing import CliRunner

from groundhog.cli import app
from groundhog.client import Groundhog
from store.db import open_store, transaction
from store.digest import tape_digest
from store.tapes import list_tapes
from tests.groundhog.test_tape_verify import record_a_group
from tests.groundhog.upstream import Upstream
from tests.store.test_blob_integrity import flip_first_byte
from tests.support.servers import ServerProcess


def file_digest(file: Path) -> str:
    store = open_store(f"sqlite:///{file}")
    try:
        with transaction(store.read) as session:
            (tape,) = list_tapes(session=session)
            return tape_digest(tape.id, session=session)[0]
    finally:
        store.dispose()


def test_a_flipped_body_byte_is_refused_naming_the_exchange(
    gh_proxied: Groundhog, resolver: ServerProcess, tape_name: str, http_upstream: Upstream,
    tmp_path: Path,
) -> None:  # fmt: skip
    record_a_group(gh_proxied, tape_name, http_upstream)
    env = {"GROUNDHOG_RESOLVER_URL": resolver.url, "COLUMNS": "200"}
    file = tmp_path / "tape.sqlite3"
    exported = CliRunner().invoke(app, ["tape", "export", tape_name, str(file)], env=env)
    assert exported.exit_code == 0, exported.output
    original = gh_proxied.digest(tape_name).digest
    assert file_digest(file) == original
    with sqlite3.connect(file) as connection:
        (exchange_id, url, sha) = connection.execute(
            "select id, request_url, response_body_sha from gh_exchanges "
            "where request_url like '%/own/%' order by id limit 1"
        ).fetchone()
    connection.close()
    flip_first_byte(file, sha)
    assert file_digest(file) != original

    before = [tape.name for tape in gh_proxied.list_tapes()]
    imported = CliRunner().invoke(
        app, ["tape", "import", str(file), "--name", f"{tape_name}-copy"], env=env
    )
    assert imported.exit_code == 1
    output = " ".join(imported.output.split())  # the problem is wrapped to the terminal
    assert "damaged" in output and f"exchange {exchange_id}" in output and url in output
    assert [tape.name for tape in gh_proxied.list_tapes()] == before
    assert gh_proxied.digest(tape_name).digest == original
