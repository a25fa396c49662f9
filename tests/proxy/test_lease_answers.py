"""proxy/lease_answers.py: memory first, then disk through one lookup. Kept answers reach the
disk from a writer thread and are read back in a thread, never on the event loop's; a disk hit
is promoted to memory; an answer is filed under its store; 0 bytes of disk means no disk."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from engine.cache import Address, Recorded
from proxy.answer_disk import AnswerDisk
from proxy.lease_answers import LeaseAnswers
from tests.proxy.test_answer_disk import answer

ADDRESS: Address = (7, "k" * 64, 0, "")


def answers(tmp_path: Path, *, memory_bytes: int = 1 << 20) -> LeaseAnswers:
    kept = LeaseAnswers(tmp_path, memory_bytes=memory_bytes, disk_bytes=1 << 30)
    kept.bind("s1")
    return kept


def threads_of(monkeypatch, method: str) -> list[str]:
    """The names of the threads that call AnswerDisk.`method`."""
    seen: list[str] = []
    real = getattr(AnswerDisk, method)

    def recorded(self, *args):
        seen.append(threading.current_thread().name)
        return real(self, *args)

    monkeypatch.setattr(AnswerDisk, method, recorded)
    return seen


def test_a_kept_answer_is_written_and_read_off_the_event_loop(tmp_path: Path, monkeypatch) -> None:
    writes, reads = threads_of(monkeypatch, "put"), threads_of(monkeypatch, "get")

    async def keep_then_fetch() -> Recorded | None:
        first = answers(tmp_path)
        first.keep(ADDRESS, answer())
        await first.settle()
        second = answers(tmp_path)  # memory empty, as after a restart
        await second.open()
        assert second.get(ADDRESS) is None
        found = await second.fetch(ADDRESS)
        assert second.get(ADDRESS) is found, "promoted to memory"
        return found

    found = asyncio.run(keep_then_fetch())
    assert found is not None and found.response == answer().response
    loop_thread = threading.current_thread().name  # asyncio.run's loop runs on this one
    assert writes and loop_thread not in writes
    assert reads and loop_thread not in reads


def test_decide_reads_a_memory_miss_from_disk_and_decides_again(tmp_path: Path) -> None:
    kept = answers(tmp_path)
    assert kept.disk is not None
    kept.disk.put(("s1", *ADDRESS), answer(b"on disk"))
    asked: list[Recorded | None] = []

    def decide(find) -> Recorded | None:
        asked.append(find(ADDRESS))
        return asked[-1]

    found = asyncio.run(kept.decide(decide))
    assert found is not None and asked == [None, found]
    assert kept.get(ADDRESS) is found
    nothing = asyncio.run(kept.decide(lambda find: find((7, "other", 0, ""))))
    assert nothing is None


def test_an_answer_too_big_for_memory_is_served_from_disk(tmp_path: Path) -> None:
    kept = answers(tmp_path, memory_bytes=1024)  # an eighth: 128 bytes at most
    kept.keep(ADDRESS, answer(b"x" * 4096))
    assert kept.get(ADDRESS) is None
    found = asyncio.run(kept.decide(lambda find: find(ADDRESS)))
    assert found is not None and found.response == answer(b"x" * 4096).response


def test_another_store_does_not_see_this_ones_answers(tmp_path: Path) -> None:
    kept = answers(tmp_path)
    kept.keep(ADDRESS, answer())
    kept.bind("s2")  # the resolver's store is a new one: tape 7 is another tape there
    assert kept.get(ADDRESS) is None
    assert asyncio.run(kept.fetch(ADDRESS)) is None
    kept.bind("s1")
    assert asyncio.run(kept.fetch(ADDRESS)) is not None


def test_no_disk_bytes_means_no_disk_tier(tmp_path: Path) -> None:
    kept = LeaseAnswers(tmp_path, memory_bytes=1 << 20, disk_bytes=0)
    kept.bind("s1")
    kept.keep(ADDRESS, answer())
    assert kept.disk is None and list(tmp_path.iterdir()) == []
    kept.resize(1 << 20)
    kept.keep((8, "k", 0, ""), answer())
    assert kept.disk is not None and kept.disk.holds(("s1", 8, "k", 0, ""))
