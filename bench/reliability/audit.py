"""Audit a store against the tap's ledger: nothing acknowledged lost, no address answered twice.

After a crash the only honest question is "is everything the resolver said it had still there,
with the same bytes?". This reads the SQLite store file directly (read-only, beside a running
resolver: WAL allows it) and compares it with the ledger of acknowledgements.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Address = tuple[str, int, str]


@dataclass
class StoredExchange:
    id: int
    address: Address
    body_sha: str | None
    error_kind: str | None


@dataclass
class AuditResult:
    acknowledged_records: int = 0
    served_answers: int = 0
    lost_records: list[dict[str, Any]] = field(default_factory=list)
    mismatched_records: list[dict[str, Any]] = field(default_factory=list)
    served_mismatches: list[dict[str, Any]] = field(default_factory=list)
    addresses_with_two_answers: int = 0
    duplicate_addresses_in_store: int = 0
    exchanges_without_body: int = 0
    integrity: str = ""

    @property
    def records_lost(self) -> int:
        return len(self.lost_records)

    @property
    def clean(self) -> bool:
        return (
            not self.lost_records
            and not self.mismatched_records
            and not self.served_mismatches
            and self.addresses_with_two_answers == 0
            and self.duplicate_addresses_in_store == 0
            and self.exchanges_without_body == 0
            and self.integrity == "ok"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "acknowledged_records": self.acknowledged_records,
            "served_answers": self.served_answers,
            "records_lost": self.records_lost,
            "mismatched_records": len(self.mismatched_records),
            "served_mismatches": len(self.served_mismatches),
            "addresses_with_two_answers": self.addresses_with_two_answers,
            "duplicate_addresses_in_store": self.duplicate_addresses_in_store,
            "exchanges_without_body": self.exchanges_without_body,
            "integrity": self.integrity,
            "examples": (self.lost_records + self.mismatched_records + self.served_mismatches)[:5],
            "clean": self.clean,
        }


def open_read_only(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)


def stored_exchanges(path: Path, tape: str) -> dict[int, StoredExchange]:
    with contextlib.closing(open_read_only(path)) as connection:
        rows = connection.execute(
            "SELECT e.id, e.key_hash, e.occurrence, e.fingerprint, e.response_body_sha, "
            "e.error_kind FROM gh_exchanges e JOIN gh_tapes t ON t.id = e.tape_id "
            "WHERE t.name = ?",
            (tape,),
        ).fetchall()
    return {
        row[0]: StoredExchange(row[0], (row[1], row[2], row[3]), row[4], row[5]) for row in rows
    }


def store_health(path: Path) -> tuple[str, int, int]:
    """(integrity_check, duplicate addresses, exchanges whose response body blob is missing)."""
    with contextlib.closing(open_read_only(path)) as connection:
        integrity = connection.execute("PRAGMA integrity_check").fetchone()[0]
        duplicates = connection.execute(
            "SELECT COUNT(*) FROM (SELECT 1 FROM gh_exchanges GROUP BY tape_id, key_hash, "
            "occurrence, fingerprint HAVING COUNT(*) > 1)"
        ).fetchone()[0]
        orphans = connection.execute(
            "SELECT COUNT(*) FROM gh_exchanges e LEFT JOIN gh_blobs b "
            "ON b.sha256 = e.response_body_sha WHERE e.response_body_sha IS NOT NULL "
            "AND b.sha256 IS NULL"
        ).fetchone()[0]
    return str(integrity), int(duplicates), int(orphans)


def audit(store_path: Path, tape: str, ledger: list[dict[str, Any]]) -> AuditResult:
    result = AuditResult()
    stored = stored_exchanges(store_path, tape)
    by_address = {exchange.address: exchange for exchange in stored.values()}
    tickets: dict[str, Address] = {}
    writes: set[str] = set()
    answers: dict[Address, set[str]] = defaultdict(set)
    for entry in ledger:
        if entry["route"] != "resolve" or entry.get("tape") != tape:
            continue
        address = (entry["request_key"], entry["occurrence"], entry["fingerprint"])
        if entry["action"] == "forward" and entry.get("ticket"):
            tickets[entry["ticket"]] = address
            if entry["decision"] == "write":
                # Writes go live for every branch by design; the address keeps the first.
                writes.add(entry["ticket"])
        elif entry["action"] == "serve" and entry["decision"] != "refused":
            result.served_answers += 1
            found = by_address.get(address)
            if found is None:
                result.served_mismatches.append({"served_but_absent": address})
            elif found.error_kind is None:
                answers[address].add(entry["body_sha"])
                if found.body_sha != entry["body_sha"]:
                    result.served_mismatches.append({"address": address, "exchange": found.id})
    for entry in ledger:
        if entry["route"] != "record" or entry.get("ticket") not in tickets:
            continue
        if entry["kind"] == "passthrough":
            continue
        result.acknowledged_records += 1
        address = tickets[entry["ticket"]]
        found = stored.get(entry["exchange_id"])
        if found is None:
            result.lost_records.append({"lost_exchange_id": entry["exchange_id"]})
            continue
        if found.address != address:
            result.mismatched_records.append({"exchange": found.id, "wrong_address": True})
        if entry["kind"] == "response" and entry["ticket"] not in writes:
            answers[address].add(entry["body_sha"])
            if found.body_sha != entry["body_sha"]:
                result.mismatched_records.append({"exchange": found.id, "body_differs": True})
        elif found.error_kind != entry["error_kind"]:
            result.mismatched_records.append({"exchange": found.id, "error_differs": True})
    result.addresses_with_two_answers = sum(1 for shas in answers.values() if len(shas) > 1)
    result.integrity, result.duplicate_addresses_in_store, result.exchanges_without_body = (
        store_health(store_path)
    )
    return result
