"""`tape publish`: a verified, audited tape written as a dataset folder, or nothing at all.

Publishing is the moment a recording leaves its owner, so it checks before it writes: the tape
must pass the secrets audit (or the publisher says `--allow-unscrubbed`) and replay with the
world closed (`tape verify`). The folder is written beside its destination and
moved into place only when complete, so a failed publish leaves no half dataset to be loaded.
"""

from __future__ import annotations

import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groundhog.client import Groundhog
from groundhog.dataset.audit_gate import AuditOutcome, audit_gate
from groundhog.dataset.card import dataset_card
from groundhog.dataset.folder import CARD_NAME, SQLITE_NAME
from groundhog.dataset.tables import TableCounts, write_tables
from groundhog.errors import LocalProblem


class NotVerified(LocalProblem):
    """The tape does not replay as recorded; `verification` says where."""

    title = "Tape not verified"

    def __init__(self, tape: str, verification: dict[str, Any]) -> None:
        super().__init__(f"tape {tape} does not replay as recorded: publish refuses it")
        self.verification = verification


@dataclass(frozen=True)
class Published:
    folder: Path
    digest: str
    counts: TableCounts
    audit: AuditOutcome
    verification: dict[str, Any]


def single_file(export: Path) -> None:
    """Leave `export` one checkpointed file in rollback-journal mode: read afterwards (the
    tables, pandas, a folder check) it grows no `-wal`/`-shm` beside it in the folder."""
    connection = sqlite3.connect(export)
    try:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        connection.execute("PRAGMA journal_mode=DELETE")
    finally:
        connection.close()


def _refuse_existing(folder: Path) -> None:
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise FileExistsError(f"{folder} exists and is not an empty directory: choose a new one")


def publish(
    client: Groundhog,
    tape: str,
    folder: Path,
    *,
    allow_unscrubbed: bool = False,
) -> Published:
    """Verify, audit, then write the dataset folder of `tape` at `folder`."""
    _refuse_existing(folder)
    audit = audit_gate(client, tape, allow_unscrubbed=allow_unscrubbed)  # cheap: ask it first
    verification = client.verify(tape)
    if not verification.get("ok"):
        raise NotVerified(tape, verification)
    info = client.get_tape(tape)
    digest = client.digest(tape).digest
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        export = client.export_tape(tape, partial / SQLITE_NAME)
        single_file(export)
        counts = write_tables(export, partial)
        branches = [
            {"branch": b.path, "parent": b.parent, "fork_point": b.fork_point, "events": b.events}
            for b in client.list_branches(tape)
        ]
        card = dataset_card(info, digest, counts, branches, verification, audit.summary)
        (partial / CARD_NAME).write_text(card)
        if folder.exists():
            folder.rmdir()  # empty, checked above
        partial.replace(folder)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return Published(folder, digest, counts, audit, verification)
