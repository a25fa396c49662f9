"""What an export states about its own content: its digest, and a hash per field of each line.

An export travels (DESIGN §3): someone may edit it on the way — a status, an injected header,
reordered events, a deleted exchange, two bodies swapped. Import recomputes the digest from the
bytes (store/digest.py) and refuses a file that no longer matches what it states; the per-field
hashes let the refusal name the first exchange, event or branch that differs and which field,
so the person holding the file knows what was changed. The statement lives in two tables of the
export file beside the tape's own (not in the store's schema: a store never holds them). An
export from before this statement imports as before, with the bodies still checked.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from sqlalchemy import text
from sqlalchemy.orm import Session

from store.digest import DIGEST_VERSION, DigestLine, digest_lines, tape_digest

STATED = "gh_export_digest"
LINES = "gh_export_digest_lines"
BATCH = 2000


def write_manifest(tape_id: int, *, session: Session) -> str:
    """State the tape's digest and per-field hashes in the export `session` writes; its digest."""
    digest, _count = tape_digest(tape_id, session=session)
    session.execute(text(f"CREATE TABLE {STATED} (version TEXT NOT NULL, digest TEXT NOT NULL)"))
    session.execute(
        text(
            f"CREATE TABLE {LINES} (position INTEGER PRIMARY KEY, kind TEXT NOT NULL, "
            "identity TEXT NOT NULL, label TEXT NOT NULL, fields TEXT NOT NULL)"
        )
    )
    session.execute(
        text(f"INSERT INTO {STATED} VALUES (:version, :digest)"),
        {"version": DIGEST_VERSION, "digest": digest},
    )
    batch: list[dict[str, Any]] = []
    insert = text(f"INSERT INTO {LINES} VALUES (:position, :kind, :identity, :label, :fields)")
    for position, line in enumerate(digest_lines(tape_id, session=session)):
        batch.append(
            {
                "position": position,
                "kind": line.kind,
                "identity": json.dumps(list(line.identity)),
                "label": line.label,
                "fields": json.dumps(line.field_hashes(), sort_keys=True),
            }
        )
        if len(batch) >= BATCH:
            session.execute(insert, batch)
            batch = []
    if batch:
        session.execute(insert, batch)
    return digest


def stated_digest(session: Session) -> tuple[str, str] | None:
    """(version, digest) the export states, or None for an export from before statements."""
    tables = session.execute(
        text("SELECT name FROM sqlite_master WHERE type = 'table' AND name = :name"),
        {"name": STATED},
    ).first()
    if tables is None:
        return None
    row = session.execute(text(f"SELECT version, digest FROM {STATED}")).first()
    return None if row is None else (str(row[0]), str(row[1]))


def _stated_lines(session: Session) -> Iterator[tuple[str, tuple[Any, ...], str, dict[str, str]]]:
    rows = session.execute(
        text(f"SELECT kind, identity, label, fields FROM {LINES} ORDER BY position")
    )
    for kind, identity, label, fields in rows:
        yield kind, tuple(json.loads(identity)), label, json.loads(fields)


def first_difference(tape_id: int, *, session: Session) -> str | None:
    """What in the export differs from what it states, the first thing in digest order; None
    when it matches (or states nothing)."""
    stated = stated_digest(session)
    if stated is None:
        return None
    version, digest = stated
    if version != DIGEST_VERSION:
        return None  # another digest definition: only its bodies can be checked here
    actual, _count = tape_digest(tape_id, session=session)
    if actual == digest:
        return None
    expected = {
        (kind, identity): (label, fields)
        for kind, identity, label, fields in _stated_lines(session)
    }
    seen: set[tuple[str, tuple[Any, ...]]] = set()
    kind = ""
    for line in digest_lines(tape_id, session=session):
        if line.kind != kind:
            # Everything of the kind before stated but not found: a deleted exchange is named
            # as deleted, not as the events that no longer find it.
            missing = _first_missing(kind, expected, seen)
            if missing is not None:
                return missing
            kind = line.kind
        found = _line_difference(line, expected, seen)
        if found is not None:
            return found
    for stated_kind in ("branch", "exchange", "write-answer", "event"):
        missing = _first_missing(stated_kind, expected, seen)
        if missing is not None:
            return missing
    return f"the export states digest {digest}, its content hashes to {actual}"


def _first_missing(
    kind: str,
    expected: dict[tuple[str, tuple[Any, ...]], tuple[str, dict[str, str]]],
    seen: set[tuple[str, tuple[Any, ...]]],
) -> str | None:
    for key, (label, _fields) in expected.items():
        if key[0] == kind and key not in seen:
            return f"{label} is stated by the export but missing from it (deleted, or moved)"
    return None


def _line_difference(
    line: DigestLine,
    expected: dict[tuple[str, tuple[Any, ...]], tuple[str, dict[str, str]]],
    seen: set[tuple[str, tuple[Any, ...]]],
) -> str | None:
    key = (line.kind, tuple(json.loads(json.dumps(list(line.identity)))))
    seen.add(key)
    stated = expected.get(key)
    if stated is None:
        return f"{line.label} is not stated by the export (added, or its address changed)"
    _label, fields = stated
    for name, value in line.field_hashes().items():
        if fields.get(name) != value:
            return f"{line.label}: its {name} differs from what the export states"
    return None
