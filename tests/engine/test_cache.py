"""The answer cache: least recently used out first, within a byte budget, per-tape forgetting."""

from __future__ import annotations

from engine.cache import AnswerCache, Recorded


def entry(exchange_id: int, body: str = "x" * 100) -> Recorded:
    return Recorded(exchange_id, {"status": 200, "headers": [], "body": body}, [])


def test_evicts_least_recently_used_within_budget() -> None:
    cache = AnswerCache(budget_bytes=16 * entry(0).size())
    for index in range(16):
        cache.put((1, str(index), 0, ""), entry(index))
    assert cache.get((1, "0", 0, "")).exchange_id == 0  # "0" is now the most recent
    cache.put((1, "new", 0, ""), entry(99))
    assert cache.get((1, "1", 0, "")) is None  # the least recently used went
    assert cache.get((1, "0", 0, "")) is not None and len(cache) == 16


def test_huge_entries_are_not_cached_and_tapes_can_be_forgotten() -> None:
    cache = AnswerCache(budget_bytes=8000)
    cache.put((1, "big", 0, ""), entry(1, "x" * 5000))
    assert cache.get((1, "big", 0, "")) is None
    cache.put((1, "a", 0, ""), entry(2))
    cache.put((2, "a", 0, ""), entry(3))
    cache.forget_tape(1)
    assert cache.get((1, "a", 0, "")) is None and cache.get((2, "a", 0, "")).exchange_id == 3
