"""Refuse to hand out a live call when the store's disk could not take its answer.

A read that went live but could not be recorded must be answered 503 (its bytes are not on the
tape), so the live call was wasted and, for a write, the tape misses it. Checking free space
under the store before every forward keeps a reserve for the records already in flight; when the
reserve is short the resolver answers 503 and nothing goes upstream. Only a SQLite file's
directory can be measured from here; a PostgreSQL store reports its own full disk as an error.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sqlalchemy.engine import make_url

from resolver.errors import StoreFull


def store_directory(database_url: str) -> Path | None:
    """The directory holding a SQLite store's file; None for other databases or in-memory."""
    url = make_url(database_url)
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        return None
    return Path(url.database).expanduser().resolve().parent


class DiskReserve:
    """`check()` raises `StoreFull` when the store's disk has less free space than `reserve`."""

    def __init__(self, database_url: str, reserve_bytes: int) -> None:
        self.directory = store_directory(database_url)
        self.reserve_bytes = reserve_bytes

    def free_bytes(self) -> int | None:
        if self.directory is None:
            return None
        try:
            return shutil.disk_usage(self.directory).free
        except OSError:
            return None  # cannot measure: the store's own errors still answer 503

    def check(self) -> None:
        if self.reserve_bytes <= 0:
            return
        free = self.free_bytes()
        if free is not None and free < self.reserve_bytes:
            raise StoreFull(
                f"only {free} bytes are free under the store ({self.directory}), below the "
                f"reserve of {self.reserve_bytes} (GROUNDHOG_DISK_RESERVE_BYTES); nothing was "
                "sent upstream. Free disk space, then retry.",
                free_bytes=free,
                reserve_bytes=self.reserve_bytes,
                directory=str(self.directory or ""),
            )
