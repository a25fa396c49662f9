"""Wake single-flight waiters on every resolver replica with PostgreSQL `LISTEN/NOTIFY`.

In-process wake-ups (resolver/wakeups.py) reach only waiters of the replica that committed the
record; a sibling waiting on another replica would otherwise notice by a store poll. A record
transaction announces its address with `pg_notify` (delivered only if it commits), and each
replica listens on one dedicated connection and wakes its own waiters. SQLite stores are one
process's (or share a host), so they use the in-process event and the poll alone.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import psycopg
from sqlalchemy import Engine

from engine.cache import Address
from resolver.resolve_tx.units import Executor, Unit
from store import settled_notices
from store.settled_notices import CHANNEL

logger = logging.getLogger(__name__)

RECONNECT_SECONDS = 1.0


def payload(address: Address) -> str:
    tape_id, key_hash, occurrence, fingerprint = address
    return f"{tape_id}:{occurrence}:{key_hash}:{fingerprint}"  # the fingerprint may hold ':'


def parse(text_: str) -> Address | None:
    parts = text_.split(":", 3)
    if len(parts) != 4 or not parts[0].isdigit() or not parts[1].isdigit():
        return None
    return (int(parts[0]), parts[2], int(parts[1]), parts[3])


def announce(session: Executor, address: Address) -> None:
    """Queue a notification of `address`, sent when (and if) the session's transaction commits."""
    settled_notices.announce(payload(address), session=session)


def announce_later(address: Address, *, unit: Unit) -> None:
    """`announce` with the unit's commit (in its round trip); nothing on SQLite."""
    settled_notices.announce_later(payload(address), unit=unit)


class Listener:
    """A thread holding one `LISTEN` connection; calls `on_address` for every notification."""

    def __init__(self, engine: Engine, on_address: Callable[[Address], object]) -> None:
        url = engine.url.set(drivername="postgresql")
        self._dsn = url.render_as_string(hide_password=False)
        self._on_address = on_address
        self._stop = threading.Event()
        self.listening = threading.Event()
        self._thread = threading.Thread(target=self._run, name="groundhog-listen", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._listen()
            except psycopg.Error as error:  # a lost connection: waiters still have the poll
                self.listening.clear()
                logger.warning("LISTEN %s failed (%s); retrying", CHANNEL, error)
                self._stop.wait(RECONNECT_SECONDS)

    def _listen(self) -> None:
        with psycopg.connect(self._dsn, autocommit=True) as connection:
            connection.execute(f"LISTEN {CHANNEL}")
            self.listening.set()
            while not self._stop.is_set():
                for notice in connection.notifies(timeout=RECONNECT_SECONDS):
                    address = parse(notice.payload)
                    if address is not None:
                        self._on_address(address)
