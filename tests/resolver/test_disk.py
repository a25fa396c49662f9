"""Unit tests of resolver/disk.py: the reserve is measured under a SQLite store's directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from resolver.disk import DiskReserve, store_directory
from resolver.errors import StoreFull


def test_only_a_sqlite_file_has_a_directory(tmp_path: Path) -> None:
    assert store_directory(f"sqlite:///{tmp_path}/s.sqlite3") == tmp_path.resolve()
    assert store_directory("sqlite://") is None
    assert store_directory("postgresql+psycopg://u@127.0.0.1/test") is None


def test_a_reserve_above_the_free_space_refuses(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.sqlite3"
    DiskReserve(url, 1).check()
    DiskReserve(url, 0).check()
    DiskReserve("postgresql+psycopg://u@127.0.0.1/test", 2**62).check()  # cannot measure
    with pytest.raises(StoreFull) as refused:
        DiskReserve(url, 2**62).check()
    assert refused.value.status == 503 and refused.value.extras["reserve_bytes"] == 2**62
    assert "GROUNDHOG_DISK_RESERVE_BYTES" in refused.value.detail
