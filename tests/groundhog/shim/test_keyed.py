"""Unit tests of groundhog/shim/keyed.py: the keyed hash and the addressable random stream."""

from __future__ import annotations

import hashlib
import threading

import pytest

from groundhog.shim.keyed import (
    KeyedRandom,
    Occurrences,
    keyed_bits,
    keyed_bytes,
    keyed_float,
    seed_key,
)


def test_seed_key_is_blake2b_of_the_prefixed_world() -> None:
    expected = hashlib.blake2b(b"groundhog-shim-v1:7", digest_size=32).digest()
    assert seed_key(7) == expected == seed_key("7")
    assert seed_key(8) != expected


def test_keyed_bytes_extend_block_by_block() -> None:
    key = seed_key(1)

    def block(number: int) -> bytes:
        return hashlib.blake2b(f"c\x003\x00{number}".encode(), key=key, digest_size=64).digest()

    assert keyed_bytes(key, "c", 3, 10) == block(0)[:10]
    assert keyed_bytes(key, "c", 3, 100) == (block(0) + block(1))[:100]
    assert keyed_bytes(key, "c", 3, 0) == b""
    with pytest.raises(ValueError, match="non-negative"):
        keyed_bytes(key, "c", 3, -1)


def test_channel_and_occurrence_both_change_the_bytes() -> None:
    key = seed_key(1)
    assert keyed_bytes(key, "a", 0) != keyed_bytes(key, "a", 1)
    assert keyed_bytes(key, "a", 0) != keyed_bytes(key, "b", 0)
    assert keyed_bytes(key, "a", 0) != keyed_bytes(seed_key(2), "a", 0)


def test_keyed_float_uses_the_top_53_bits() -> None:
    key = seed_key(5)
    high = int.from_bytes(keyed_bytes(key, "f", 0, 8), "big")
    value = keyed_float(key, "f", 0)
    assert value == (high >> 11) / 2**53
    assert 0.0 <= value < 1.0


def test_keyed_bits_width() -> None:
    key = seed_key(5)
    assert keyed_bits(key, "b", 0, 0) == 0
    raw = int.from_bytes(keyed_bytes(key, "b", 0, 2), "little")
    assert keyed_bits(key, "b", 0, 12) == raw >> 4
    for bits in (1, 7, 8, 9, 64, 65):
        assert 0 <= keyed_bits(key, "b", 2, bits) < 2**bits
    with pytest.raises(ValueError):
        keyed_bits(key, "b", 0, -1)


def test_occurrences_count_per_channel_and_reset() -> None:
    counts = Occurrences({"a": 4})
    assert [counts.take("a"), counts.take("a"), counts.take("b")] == [4, 5, 0]
    assert counts.snapshot() == {"a": 6, "b": 1}
    counts.reset("a", "missing")
    assert counts.snapshot() == {"b": 1}


def test_occurrences_are_unique_across_threads() -> None:
    counts = Occurrences()
    taken: list[int] = []
    lock = threading.Lock()

    def work() -> None:
        mine = [counts.take("c") for _ in range(200)]
        with lock:
            taken.extend(mine)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(taken) == list(range(800))


def _stream(world: int = 3) -> KeyedRandom:
    return KeyedRandom(seed_key(world), "random", Occurrences())


def test_draws_are_addressed_not_sequenced() -> None:
    stream = _stream()
    key = seed_key(3)
    assert stream.random() == keyed_float(key, "random.random", 0)
    assert stream.random() == keyed_float(key, "random.random", 1)
    assert stream.getrandbits(16) == keyed_bits(key, "random.bits", 0, 16)
    # A sibling drawing in another order still gets the same n-th value per channel.
    sibling = _stream()
    assert sibling.getrandbits(16) == keyed_bits(key, "random.bits", 0, 16)
    assert sibling.random() == keyed_float(key, "random.random", 0)


def test_derived_methods_are_reproducible() -> None:
    first, second = _stream(), _stream()
    assert [first.randint(1, 100) for _ in range(5)] == [second.randint(1, 100) for _ in range(5)]
    deck_a, deck_b = list(range(10)), list(range(10))
    first.shuffle(deck_a)
    second.shuffle(deck_b)
    assert deck_a == deck_b and sorted(deck_a) == list(range(10))
    assert _stream(4).random() != _stream(3).random()


def test_seed_rekeys_deterministically_and_none_is_ignored() -> None:
    stream = _stream()
    before = stream.random()
    stream.seed(None)
    assert stream.salt == ""
    stream.seed("hello")
    salt = hashlib.sha256(repr("hello").encode()).hexdigest()[:16]
    assert stream.salt == salt
    after = stream.random()
    assert after == keyed_float(seed_key(3), f"random.random#{salt}", 0)
    assert after != before
    other = _stream()
    other.seed("hello")
    assert other.random() == after


def test_state_round_trips_and_rejects_foreign_state() -> None:
    stream = _stream()
    stream.seed(42)
    stream.gauss_next = 0.5
    state = stream.getstate()
    assert state[0] == "groundhog-keyed"
    fresh = _stream()
    fresh.setstate(state)
    assert (fresh.salt, fresh.gauss_next) == (stream.salt, 0.5)
    with pytest.raises(ValueError, match="getstate"):
        fresh.setstate((3, (1, 2), None))
    with pytest.raises(ValueError):
        stream.getrandbits(-1)
