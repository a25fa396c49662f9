"""proxy/answer_disk.py: an answer put is read back byte for byte, by this process or the next
one on the same directory; the byte budget evicts the least recently used; a damaged or
misplaced file is removed with a warning and never served."""

from __future__ import annotations

import base64
import logging
import os
from pathlib import Path

import pytest

from engine.cache import Recorded
from proxy.answer_disk import AnswerDisk, DiskKey, encode, file_name


def key(n: int = 0, store: str = "s1") -> DiskKey:
    return (store, 7, f"{n:064x}", 0, "")


def answer(body: bytes = b"hello", exchange_id: int = 3) -> Recorded:
    response = {
        "status": 200,
        "headers": [["Content-Type", "text/plain"], ["X-Café", "crème"]],
        "body": base64.b64encode(body).decode(),
    }
    return Recorded(exchange_id, response, [list(pair) for pair in response["headers"]])  # type: ignore[arg-type]


def size_of(recorded: Recorded, n: int = 0) -> int:
    return len(encode(key(n), recorded))


def test_an_answer_put_is_read_back_as_it_was_recorded(tmp_path: Path) -> None:
    disk = AnswerDisk(tmp_path, 1 << 20)
    kept = answer(b"\x00\xffbinary")
    assert not disk.holds(key()) and disk.get(key()) is None
    disk.put(key(), kept)
    assert disk.holds(key())
    read = disk.get(key())
    assert read is not None
    assert read.exchange_id == 3
    assert read.response == kept.response and read.response_json == kept.response_json
    assert read.response_headers == kept.response_headers
    assert disk.get(key(1)) is None and disk.get(key(0, store="s2")) is None
    assert [p.name for p in tmp_path.iterdir()] == [file_name(key())]  # no temporary left


def test_a_restarted_proxy_finds_what_the_last_one_kept(tmp_path: Path) -> None:
    before = AnswerDisk(tmp_path, 1 << 20)
    before.put(key(), answer(b"kept"))
    (tmp_path / ".stray.tmp").write_bytes(b"a write the last process died inside")

    after = AnswerDisk(tmp_path, 1 << 20)
    assert not after.holds(key())  # nothing is known before the index is read
    after.load()
    assert after.holds(key()) and after.bytes == before.bytes
    read = after.get(key())
    assert read is not None and read.response == answer(b"kept").response
    assert not (tmp_path / ".stray.tmp").exists()


def test_the_budget_evicts_the_least_recently_used(tmp_path: Path) -> None:
    one = size_of(answer())
    disk = AnswerDisk(tmp_path, 8 * one + one // 2)  # room for eight (each an eighth at most)
    for n in range(8):
        disk.put(key(n), answer())
    assert disk.get(key(0)) is not None  # used: key(1) is now the least recent
    disk.put(key(8), answer())
    assert [disk.holds(key(n)) for n in range(9)] == [True, False, *[True] * 7]
    assert not (tmp_path / file_name(key(1))).exists()
    assert disk.bytes <= disk.budget_bytes and len(disk) == 8
    assert len(list(tmp_path.iterdir())) == 8


def test_the_order_of_use_survives_a_restart(tmp_path: Path) -> None:
    one = size_of(answer())
    disk = AnswerDisk(tmp_path, 10 * one)
    for n in range(3):
        disk.put(key(n), answer())
        os.utime(tmp_path / file_name(key(n)), ns=(0, (n + 1) * 10**9))  # written in order
    assert disk.get(key(0)) is not None  # used last of all: the next life keeps it longest
    again = AnswerDisk(tmp_path, 10 * one)
    again.load()
    again.budget_bytes = 2 * one
    again.evict()
    assert [again.holds(key(n)) for n in range(3)] == [True, False, True]


def test_an_answer_over_an_eighth_of_the_budget_is_not_kept(tmp_path: Path) -> None:
    disk = AnswerDisk(tmp_path, 8 * 1024)
    disk.put(key(), answer(b"x" * 2048))
    assert not disk.holds(key()) and list(tmp_path.iterdir()) == []


def damage_truncated(data: bytes) -> bytes:
    return data[: len(data) - 10]


def damage_flipped(data: bytes) -> bytes:
    return data[:-3] + bytes([data[-3] ^ 1]) + data[-2:]


def damage_emptied(data: bytes) -> bytes:
    return b""


@pytest.mark.parametrize("damage", [damage_truncated, damage_flipped, damage_emptied])
def test_a_damaged_file_is_removed_and_never_served(
    tmp_path: Path, damage, caplog: pytest.LogCaptureFixture
) -> None:
    disk = AnswerDisk(tmp_path, 1 << 20)
    disk.put(key(), answer(b"the recorded bytes"))
    path = tmp_path / file_name(key())
    path.write_bytes(damage(path.read_bytes()))

    with caplog.at_level(logging.WARNING, logger="proxy.answer_disk"):
        assert disk.get(key()) is None
    assert "removed recorded answer" in caplog.text and file_name(key()) in caplog.text
    assert not path.exists() and not disk.holds(key()) and disk.bytes == 0
    disk.put(key(), answer(b"the recorded bytes"))  # learnt again: kept again
    assert disk.get(key()) is not None


def test_a_file_holding_another_address_is_not_served_for_this_one(tmp_path: Path) -> None:
    disk = AnswerDisk(tmp_path, 1 << 20)
    disk.put(key(1), answer(b"the answer of key 1"))
    os.replace(tmp_path / file_name(key(1)), tmp_path / file_name(key(2)))
    again = AnswerDisk(tmp_path, 1 << 20)
    assert again.get(key(2)) is None
    assert list(tmp_path.iterdir()) == []
