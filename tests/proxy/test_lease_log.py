"""proxy/lease_log.py: what was served and not marked shipped is what a restart ships, a torn
last line is skipped, the holder id survives a restart, and a shipped log is emptied."""

from __future__ import annotations

from pathlib import Path

from proxy import lease_log
from proxy.lease_log import LeaseLog, holder_id


def event(occurrence: int) -> dict:
    return {"key_hash": "k", "occurrence": occurrence}


def test_unshipped_is_what_no_batch_marked_per_lease_in_order(tmp_path: Path) -> None:
    log = LeaseLog(tmp_path)
    for occurrence in range(3):
        log.append((7, 1), event(occurrence))
    log.append((8, 2), event(0))
    log.shipped((7, 1), 2)
    log.close()
    # A new process reads the same file.
    assert LeaseLog(tmp_path).unshipped() == {(7, 1): [event(2)], (8, 2): [event(0)]}


def test_a_torn_last_line_was_never_served_and_is_skipped(tmp_path: Path) -> None:
    log = LeaseLog(tmp_path)
    log.append((7, 1), event(0))
    log.close()
    with (tmp_path / lease_log.LOG_NAME).open("ab") as torn:
        torn.write(b'{"lease":[7,1],"event":{"key_h')
    assert LeaseLog(tmp_path).unshipped() == {(7, 1): [event(0)]}


def test_a_recovered_log_starts_empty_and_a_shipped_one_is_compacted(
    tmp_path: Path, monkeypatch
) -> None:
    log = LeaseLog(tmp_path)
    log.append((7, 1), event(0))
    log.recovered()
    assert log.unshipped() == {}
    monkeypatch.setattr(lease_log, "COMPACT_BYTES", 10)
    log.append((7, 1), event(1))
    log.shipped((7, 1), 1)
    assert log.path.stat().st_size == 0
    log.append((7, 1), event(2))  # appends after the truncation
    assert log.unshipped() == {(7, 1): [event(2)]}


def test_the_holder_id_is_kept_across_restarts_and_differs_between_directories(
    tmp_path: Path,
) -> None:
    first = holder_id(tmp_path / "a")
    assert holder_id(tmp_path / "a") == first
    assert holder_id(tmp_path / "b") != first
