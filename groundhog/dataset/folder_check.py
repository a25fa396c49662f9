"""A published dataset folder checked as a whole before anyone trusts it (`tape import DIR`,
`tape verify DIR`).

A folder travels as files: its SQLite export, four Parquet tables and a card. Anyone on the way
can edit any of them, and readers use each on its own (pandas reads the Parquet, Groundhog
imports the SQLite). So the folder is one statement: the SQLite file states its digest
(store/digest_manifest.py), which must be the digest the card states, and every Parquet table
must hold exactly the rows the SQLite file gives (groundhog/dataset/tables.py derives both). The
import then recomputes the SQLite file's content against its statement (the resolver), so a
change anywhere is refused, naming the table, row and column, or the digests that disagree.
The SQLite file is read immutable: checking leaves no `-wal` or `-shm` beside it.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

from groundhog.dataset.folder import CARD_NAME, SQLITE_NAME, FolderError, checked_export, table_file

DATASETS_HINT = "checking a dataset folder reads Parquet: pip install 'groundhog-rl[datasets]'"
_CARD_DIGEST = re.compile(r"^\| digest \| `([0-9a-f]{64})` \|$", re.MULTILINE)


def card_digest(folder: Path) -> str:
    card = folder / CARD_NAME
    found = _CARD_DIGEST.search(card.read_text(errors="replace")) if card.is_file() else None
    if found is None:
        raise FolderError(f"{card} states no digest: the folder cannot be checked")
    return found.group(1)


def _read_only(export: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{export}?mode=ro&immutable=1", uri=True)


def file_digest(connection: sqlite3.Connection, export: Path) -> str:
    try:
        row = connection.execute("SELECT digest FROM gh_export_digest").fetchone()
    except sqlite3.DatabaseError as error:
        raise FolderError(f"{export} states no digest ({error}): publish it again") from None
    if row is None:
        raise FolderError(f"{export} states no digest: publish it again")
    return str(row[0])


def _differing_column(expected: dict[str, Any], found: dict[str, Any]) -> str | None:
    return next((name for name in expected if expected[name] != found.get(name)), None)


def _compare(table: str, expected_rows: Any, parquet: Path, names: list[str]) -> None:
    import pyarrow.parquet as pq

    expected_iter = iter(expected_rows)
    index = 0
    for batch in pq.ParquetFile(parquet).iter_batches():
        for found in batch.to_pylist():
            expected = next(expected_iter, None)
            if expected is None:
                raise FolderError(
                    f"{table}.parquet row {index} is not in {SQLITE_NAME} (a row was added)"
                )
            column = _differing_column(dict(zip(names, expected, strict=True)), found)
            if column is not None:
                raise FolderError(
                    f"{table}.parquet row {index} column {column!r} differs from {SQLITE_NAME}: "
                    f"the folder was changed after publishing"
                )
            index += 1
    if next(expected_iter, None) is not None:
        raise FolderError(f"{table}.parquet lacks row {index} of {SQLITE_NAME} (a row was removed)")


def check_folder(folder: Path) -> Path:
    """The folder's SQLite export, once the card, the SQLite file and every Parquet table agree."""
    export = checked_export(folder)
    leftovers = [p.name for p in (folder / f"{SQLITE_NAME}-wal", folder / f"{SQLITE_NAME}-shm")]
    leftovers = [name for name in leftovers if (folder / name).exists()]
    if leftovers:
        raise FolderError(
            f"{folder} holds {', '.join(leftovers)}: the SQLite file is not checkpointed "
            "(publish it again)"
        )
    try:
        from itertools import chain

        from groundhog.dataset.tables import SCHEMAS, body_rows, small_table_rows
    except ImportError as error:
        raise FolderError(f"{DATASETS_HINT} ({error})") from None
    stated = card_digest(folder)
    connection = _read_only(export)
    try:
        held = file_digest(connection, export)
        if held != stated:
            raise FolderError(
                f"{SQLITE_NAME} states digest {held}, the card states {stated}: "
                "the folder was changed after publishing"
            )
        rows = small_table_rows(connection)
        for table in ("exchanges", "events", "branches"):
            names = SCHEMAS[table].names
            _compare(table, rows[table], table_file(folder, table), names)
        bodies = chain.from_iterable(body_rows(connection))
        _compare("bodies", bodies, table_file(folder, "bodies"), SCHEMAS["bodies"].names)
    finally:
        connection.close()
    return export
