"""Typed SQLAlchemy models: the tables a tape is made of, plus the coordination tables.

Tape content (tapes, branches, counters, versions, exchanges, write answers, events, hints,
blobs) holds no wall-clock time or host entropy, so recording the same world twice gives the
same digest.
Claims and pending records coordinate live calls between resolver replicas; they are not tape
content, may use time, and are never exported. Sandbox sessions are keyed by the deployment's
key, so they are not exported either.
"""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Integer,
    LargeBinary,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from engine.tape_settings import TapeSettings, stored_settings

# SQLite only auto-increments INTEGER PRIMARY KEY; PostgreSQL gets a BIGINT identity.
IdType = BigInteger().with_variant(Integer(), "sqlite")


class Base(DeclarativeBase):
    # SQLAlchemy types `__table__` as any FromClause (a class may be mapped to a join or a
    # subquery); every model here is mapped to a Table, and saying so lets the Core statements
    # built on `Model.__table__` (insert, update, delete) type-check. The way SQLAlchemy's
    # maintainers suggest (sqlalchemy/sqlalchemy#9130).
    __table__: ClassVar[Table]


class Tape(Base):
    __tablename__ = "gh_tapes"
    # Tape ids are never reused (SQLite AUTOINCREMENT; PostgreSQL identities never reuse), so
    # anything cached by tape id dies with its tape.
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(IdType, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    world_seed: Mapped[int] = mapped_column(BigInteger)
    mode: Mapped[str] = mapped_column(String(20))
    online: Mapped[bool] = mapped_column(Boolean)
    dependency_model: Mapped[str] = mapped_column(String(20))
    config: Mapped[dict[str, Any]] = mapped_column(JSON)

    @property
    def settings(self) -> TapeSettings:
        """The config column, typed (engine/tape_settings.py; parsed once per distinct one)."""
        return stored_settings(self.config or {})


class Branch(Base):
    __tablename__ = "gh_branches"
    __table_args__ = (UniqueConstraint("tape_id", "path"),)

    id: Mapped[int] = mapped_column(IdType, primary_key=True, autoincrement=True)
    tape_id: Mapped[int] = mapped_column(ForeignKey("gh_tapes.id", ondelete="CASCADE"), index=True)
    path: Mapped[str] = mapped_column(String(1000))
    parent_path: Mapped[str | None] = mapped_column(String(1000), nullable=True)
    fork_point: Mapped[int] = mapped_column(Integer, default=0)
    event_count: Mapped[int] = mapped_column(Integer, default=0)
    shim_counters: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class BranchLease(Base):
    """The sidecar proxy that answers a branch's hits itself (store/branch_leases.py).

    `epoch` is raised by every grant to a new holder and kept when the lease is released, so a
    stale holder's events are refused by it; `revoke` asks the holder to flush and release
    (someone needs the branch's state)."""

    __tablename__ = "gh_branch_leases"

    branch_id: Mapped[int] = mapped_column(
        ForeignKey("gh_branches.id", ondelete="CASCADE"), primary_key=True
    )
    holder: Mapped[str | None] = mapped_column(String(64), nullable=True)
    epoch: Mapped[int] = mapped_column(Integer)
    expires: Mapped[float] = mapped_column(Float)
    revoke: Mapped[bool] = mapped_column(Boolean)
    # The serial of the last event applied at this epoch: a batch shipped again is applied once.
    shipped: Mapped[int] = mapped_column(Integer)


class StoreIdentity(Base):
    """One row naming this store, made with it (migration 0009; store/identity.py).

    Row ids are unique within one store only: a fresh database numbers its tapes from 1 again.
    What a sidecar keeps by tape id beyond its own process (its answers on disk,
    proxy/answer_disk.py) is filed under this token, so a new store is never served another's
    recordings. Not tape content: never exported."""

    __tablename__ = "gh_store"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    token: Mapped[str] = mapped_column(String(64))


class OccurrenceCounter(Base):
    """How many times a branch's lineage asked a key; a fork copies the parent's rows."""

    __tablename__ = "gh_occurrences"
    # One copy of each row, in key order (SQLite): see migration 0003.
    __table_args__ = {"sqlite_with_rowid": False}

    branch_id: Mapped[int] = mapped_column(
        ForeignKey("gh_branches.id", ondelete="CASCADE"), primary_key=True
    )
    key_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    count: Mapped[int] = mapped_column(Integer)
    # The attempt id of the ask that advanced `count` last and kept it (store/counters.py): its
    # retry is given the same occurrence. NULL once an ask gave its occurrence back.
    attempt: Mapped[str | None] = mapped_column(String(64), nullable=True)


class ResourceVersion(Base):
    """A branch's version of a resource it (or its lineage) wrote; a fork copies these rows."""

    __tablename__ = "gh_versions"

    branch_id: Mapped[int] = mapped_column(
        ForeignKey("gh_branches.id", ondelete="CASCADE"), primary_key=True
    )
    resource: Mapped[str] = mapped_column(String(1000), primary_key=True)
    version: Mapped[str] = mapped_column(String(64))


class Blob(Base):
    """A body, stored once per content hash."""

    __tablename__ = "gh_blobs"

    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    data: Mapped[bytes] = mapped_column(LargeBinary)


class Exchange(Base):
    """The world's answer at one address (tape, request key, occurrence, fingerprint)."""

    __tablename__ = "gh_exchanges"
    __table_args__ = (UniqueConstraint("tape_id", "key_hash", "occurrence", "fingerprint"),)

    id: Mapped[int] = mapped_column(IdType, primary_key=True, autoincrement=True)
    tape_id: Mapped[int] = mapped_column(ForeignKey("gh_tapes.id", ondelete="CASCADE"), index=True)
    key_hash: Mapped[str] = mapped_column(String(64))
    occurrence: Mapped[int] = mapped_column(Integer)
    fingerprint: Mapped[str] = mapped_column(String(100))
    key_readable: Mapped[str] = mapped_column(Text)
    request_method: Mapped[str] = mapped_column(String(20))
    request_host: Mapped[str] = mapped_column(String(300))
    request_url: Mapped[str] = mapped_column(Text)
    request_headers: Mapped[list[list[str]]] = mapped_column(JSON)
    request_body_sha: Mapped[str] = mapped_column(String(64))
    response_status: Mapped[int | None] = mapped_column(Integer, nullable=True)
    response_headers: Mapped[list[list[str]] | None] = mapped_column(JSON, nullable=True)
    response_body_sha: Mapped[str | None] = mapped_column(String(64), nullable=True)
    error_kind: Mapped[str | None] = mapped_column(String(20), nullable=True)
    error_message: Mapped[str | None] = mapped_column(Text, nullable=True)


class WriteAnswer(Base):
    """One branch's own answer to a write it sent live (the world's answer, as stored).

    The address's exchange keeps the first recording; each branch's sandbox answered its own
    write differently (a fresh session id, an order number), and a sealed tape serves a branch
    its own lineage's answer (resolver/resolution.py). Tape content: exported, in the digest.
    """

    __tablename__ = "gh_write_answers"

    branch_id: Mapped[int] = mapped_column(
        ForeignKey("gh_branches.id", ondelete="CASCADE"), primary_key=True
    )
    key_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    occurrence: Mapped[int] = mapped_column(Integer, primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(100), primary_key=True)
    response_status: Mapped[int] = mapped_column(Integer)
    response_headers: Mapped[list[list[str]]] = mapped_column(JSON)
    response_body_sha: Mapped[str | None] = mapped_column(String(64), nullable=True)


class SandboxSession(Base):
    """Which of its lineage's sessions a sandbox session id stands for (engine/session_labels.py).

    A rule's `{session}` must name the same resource when the conversation is recorded (the
    world's session id) and when it is replayed sealed (an id the proxy mints), and the same for
    siblings that each opened their own: so it is the label of the ask that opened the session
    (its key and occurrence), looked up by the id's keyed hash — never the id in clear. Looked
    up by lineage, not copied on fork; not exported (the hash is keyed by the deployment).
    """

    __tablename__ = "gh_sandbox_sessions"

    branch_id: Mapped[int] = mapped_column(
        ForeignKey("gh_branches.id", ondelete="CASCADE"), primary_key=True
    )
    session_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    label: Mapped[str] = mapped_column(String(100))


class Event(Base):
    """What one branch was served for one ask, in the branch's own order."""

    __tablename__ = "gh_events"
    __table_args__ = (UniqueConstraint("branch_id", "seq"),)

    id: Mapped[int] = mapped_column(IdType, primary_key=True, autoincrement=True)
    # The (branch_id, seq) unique index serves lookups by branch (migration 0003).
    branch_id: Mapped[int] = mapped_column(ForeignKey("gh_branches.id", ondelete="CASCADE"))
    seq: Mapped[int] = mapped_column(Integer)
    method: Mapped[str] = mapped_column(String(20))
    url: Mapped[str] = mapped_column(Text)
    key_hash: Mapped[str] = mapped_column(String(64))
    occurrence: Mapped[int] = mapped_column(Integer)
    fingerprint: Mapped[str] = mapped_column(String(100))
    decision: Mapped[str] = mapped_column(String(20))
    is_read: Mapped[bool] = mapped_column(Boolean)
    true_fingerprint_nonempty: Mapped[bool] = mapped_column(Boolean, default=False)
    # Indexed: deleting an exchange makes the database find the events pointing at it
    # (ON DELETE SET NULL); without the index that is a scan of every event per exchange.
    exchange_id: Mapped[int | None] = mapped_column(
        ForeignKey("gh_exchanges.id", ondelete="SET NULL"), nullable=True, index=True
    )


class KeyHint(Base):
    """Resources a cooperative world named for a key (X-Groundhog-Reads / -Writes)."""

    __tablename__ = "gh_key_hints"

    tape_id: Mapped[int] = mapped_column(
        ForeignKey("gh_tapes.id", ondelete="CASCADE"), primary_key=True
    )
    key_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    # None: the world never named this key's reads; "": it said the key reads nothing.
    reads: Mapped[str | None] = mapped_column(Text, nullable=True)
    writes: Mapped[str] = mapped_column(Text, default="")


class Claim(Base):
    """Single flight: the one asker fetching an address holds this row until its claim lapses
    (`claim_expires`, renewed by its holder; not a branch lease, which is `BranchLease`)."""

    __tablename__ = "gh_claims"
    __table_args__ = (UniqueConstraint("tape_id", "key_hash", "occurrence", "fingerprint"),)

    id: Mapped[int] = mapped_column(IdType, primary_key=True, autoincrement=True)
    tape_id: Mapped[int] = mapped_column(ForeignKey("gh_tapes.id", ondelete="CASCADE"))
    key_hash: Mapped[str] = mapped_column(String(64))
    occurrence: Mapped[int] = mapped_column(Integer)
    fingerprint: Mapped[str] = mapped_column(String(100))
    ticket: Mapped[str] = mapped_column(String(64), index=True)
    # The column keeps the name it had before claims were told apart from branch leases, so
    # no migration renames it under running replicas; code reads it as `claim_expires`.
    claim_expires: Mapped[float] = mapped_column("lease_expires", Float, key="claim_expires")
    # The holder's live call failed before the world answered: `{"kind", "message"}` as JSON,
    # served to that attempt's waiters; the claim is lapsed, so the next ask takes it over.
    failure: Mapped[str | None] = mapped_column(Text, nullable=True)


class PendingRecord(Base):
    """A forward the resolver is waiting to hear back about (the ticket's state)."""

    __tablename__ = "gh_pending"
    __table_args__ = {"sqlite_with_rowid": False}  # as gh_occurrences (migration 0003)

    ticket: Mapped[str] = mapped_column(String(64), primary_key=True)
    tape_id: Mapped[int] = mapped_column(ForeignKey("gh_tapes.id", ondelete="CASCADE"))
    branch_id: Mapped[int] = mapped_column(ForeignKey("gh_branches.id", ondelete="CASCADE"))
    event_id: Mapped[int] = mapped_column(ForeignKey("gh_events.id", ondelete="CASCADE"))
    key_hash: Mapped[str] = mapped_column(String(64))
    occurrence: Mapped[int] = mapped_column(Integer)
    fingerprint: Mapped[str] = mapped_column(String(100))
    decision: Mapped[str] = mapped_column(String(20))
    is_write: Mapped[bool] = mapped_column(Boolean)
    request: Mapped[dict[str, Any]] = mapped_column(JSON)
    created: Mapped[float] = mapped_column(Float)
