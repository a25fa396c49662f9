"""The Parquet tables of a dataset folder, read from the tape's standalone SQLite export.

RL researchers load data with pandas and Hugging Face `datasets`, not SQLite clients; these
tables put a tape in their hands: exchanges (readable keys, the decision that recorded each,
sizes, body hashes), bodies (by hash, apart, so the exchange table stays small), events (what
each branch was served, in order) and branches (the tree). Read with the standard library's
sqlite3 so publishing needs no service packages; written with pyarrow (the `datasets` extra).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from groundhog.dataset.folder import table_file

BODY_BATCH = 256

EXCHANGES = pa.schema(
    [
        ("exchange_id", pa.int64()), ("key", pa.string()), ("key_hash", pa.string()),
        ("occurrence", pa.int64()), ("fingerprint", pa.string()), ("decision", pa.string()),
        ("served", pa.int64()), ("method", pa.string()), ("host", pa.string()),
        ("url", pa.string()), ("request_headers", pa.string()),
        ("request_body_sha256", pa.string()), ("request_body_size", pa.int64()),
        ("response_status", pa.int64()), ("response_headers", pa.string()),
        ("response_body_sha256", pa.string()), ("response_body_size", pa.int64()),
        ("error_kind", pa.string()), ("error_message", pa.string()),
    ]
)  # fmt: skip
BODIES = pa.schema([("sha256", pa.string()), ("size", pa.int64()), ("data", pa.binary())])
EVENTS = pa.schema(
    [
        ("branch", pa.string()), ("seq", pa.int64()), ("method", pa.string()),
        ("url", pa.string()), ("key_hash", pa.string()), ("occurrence", pa.int64()),
        ("fingerprint", pa.string()), ("decision", pa.string()), ("is_read", pa.bool_()),
        ("exchange_id", pa.int64()),
    ]
)  # fmt: skip
BRANCHES = pa.schema(
    [
        ("branch", pa.string()), ("parent", pa.string()), ("fork_point", pa.int64()),
        ("events", pa.int64()), ("shim_counters", pa.string()),
    ]
)  # fmt: skip

EXCHANGE_QUERY = """
SELECT e.id, e.key_readable, e.key_hash, e.occurrence, e.fingerprint,
       (SELECT v.decision FROM gh_events v WHERE v.exchange_id = e.id ORDER BY v.id LIMIT 1),
       (SELECT count(*) FROM gh_events v WHERE v.exchange_id = e.id),
       e.request_method, e.request_host, e.request_url, e.request_headers,
       e.request_body_sha,
       (SELECT length(data) FROM gh_blobs b WHERE b.sha256 = e.request_body_sha),
       e.response_status, e.response_headers, e.response_body_sha,
       (SELECT length(data) FROM gh_blobs b WHERE b.sha256 = e.response_body_sha),
       e.error_kind, e.error_message
FROM gh_exchanges e ORDER BY e.id
"""
EVENT_QUERY = """
SELECT b.path, v.seq, v.method, v.url, v.key_hash, v.occurrence, v.fingerprint, v.decision,
       v.is_read, v.exchange_id
FROM gh_events v JOIN gh_branches b ON b.id = v.branch_id ORDER BY b.path, v.seq
"""
BRANCH_QUERY = """
SELECT path, parent_path, fork_point, event_count, shim_counters FROM gh_branches ORDER BY path
"""


@dataclass(frozen=True)
class TableCounts:
    exchanges: int
    bodies: int
    body_bytes: int
    events: int
    branches: int


def _write(path: Path, schema: pa.Schema, rows: list[tuple[Any, ...]]) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    columns: list[Any] = list(zip(*rows, strict=True)) if rows else [[] for _ in schema]
    table = pa.Table.from_arrays(
        [pa.array(column, type=field.type) for column, field in zip(columns, schema, strict=True)],
        schema=schema,
    )
    pq.write_table(table, path)
    return len(rows)


def _bodies(connection: sqlite3.Connection) -> Iterator[list[tuple[str, int, bytes]]]:
    cursor = connection.execute("SELECT sha256, length(data), data FROM gh_blobs ORDER BY sha256")
    while batch := cursor.fetchmany(BODY_BATCH):
        yield [(sha, size, bytes(data)) for sha, size, data in batch]


def _write_bodies(connection: sqlite3.Connection, path: Path) -> tuple[int, int]:
    """Bodies a batch at a time, so a tape larger than memory still publishes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    count = size = 0
    with pq.ParquetWriter(path, BODIES) as writer:
        for batch in _bodies(connection):
            columns = list(zip(*batch, strict=True))
            arrays = [pa.array(c, type=f.type) for c, f in zip(columns, BODIES, strict=True)]
            writer.write_table(pa.Table.from_arrays(arrays, schema=BODIES))
            count += len(batch)
            size += sum(row[1] for row in batch)
    return count, size


def small_table_rows(connection: sqlite3.Connection) -> dict[str, list[tuple[Any, ...]]]:
    """The rows of the exchanges, events and branches tables, as the SQLite export holds them
    (the writer writes these, the folder check compares the Parquet files with them)."""
    return {
        "exchanges": connection.execute(EXCHANGE_QUERY).fetchall(),
        "events": [(*row[:8], bool(row[8]), row[9]) for row in connection.execute(EVENT_QUERY)],
        "branches": [
            (path, parent, fork, count, json.dumps(json.loads(counters or "{}"), sort_keys=True))
            for path, parent, fork, count, counters in connection.execute(BRANCH_QUERY)
        ],
    }


def body_rows(connection: sqlite3.Connection) -> Iterator[list[tuple[str, int, bytes]]]:
    """The bodies table's rows, a batch at a time."""
    return _bodies(connection)


SCHEMAS = {"exchanges": EXCHANGES, "events": EVENTS, "branches": BRANCHES, "bodies": BODIES}


def write_tables(export: Path, folder: Path) -> TableCounts:
    """Write the four tables of the tape in `export` under `folder`; what they hold."""
    connection = sqlite3.connect(f"file:{export}?mode=ro", uri=True)
    try:
        rows = small_table_rows(connection)
        written = {
            table: _write(table_file(folder, table), SCHEMAS[table], rows[table])
            for table in ("exchanges", "events", "branches")
        }
        bodies, body_bytes = _write_bodies(connection, table_file(folder, "bodies"))
    finally:
        connection.close()
    return TableCounts(
        written["exchanges"], bodies, body_bytes, written["events"], written["branches"]
    )
