"""The keyed hash `F(world_seed, channel, occurrence)` and a `random.Random` driven by it.

Common random numbers only work if two branches that ask for "the n-th draw on channel c" get
the same value without talking to each other. A seeded stream would not do: it desynchronises
as soon as branches draw in different orders. Every value here is derived from its address
alone, so any branch, in any process, in any order, computes the same bytes.
"""

from __future__ import annotations

import hashlib
import random
import threading
from typing import Any

_DIGEST_BYTES = 64  # blake2b's maximum digest size
_KEY_PREFIX = "groundhog-shim-v1:"


def seed_key(world: int | str) -> bytes:
    """The blake2b key for one world (or one named stream of it): its channels hash under it."""
    return hashlib.blake2b(f"{_KEY_PREFIX}{world}".encode(), digest_size=32).digest()


def keyed_bytes(key: bytes, channel: str, occurrence: int, size: int = 32) -> bytes:
    """`size` bytes of `F(world, channel, occurrence)`, extended block by block past 64 bytes."""
    if size < 0:
        raise ValueError(f"size must be non-negative, got {size}")
    blocks: list[bytes] = []
    produced = 0
    block = 0
    while produced < size:
        message = f"{channel}\x00{occurrence}\x00{block}".encode()
        digest = hashlib.blake2b(message, key=key, digest_size=_DIGEST_BYTES).digest()
        blocks.append(digest)
        produced += len(digest)
        block += 1
    return b"".join(blocks)[:size]


def keyed_float(key: bytes, channel: str, occurrence: int) -> float:
    """A float in [0, 1) with 53 random bits, like `random.random()`."""
    high = int.from_bytes(keyed_bytes(key, channel, occurrence, 8), "big")
    return (high >> 11) * (1.0 / (1 << 53))


def keyed_bits(key: bytes, channel: str, occurrence: int, bits: int) -> int:
    """A non-negative integer with `bits` random bits, like `random.getrandbits(bits)`."""
    if bits < 0:
        raise ValueError("number of bits must be non-negative")
    if bits == 0:
        return 0
    size = (bits + 7) // 8
    value = int.from_bytes(keyed_bytes(key, channel, occurrence, size), "little")
    return value >> (size * 8 - bits)


class Occurrences:
    """Thread-safe per-channel draw counters: the `occurrence` half of every address."""

    def __init__(self, initial: dict[str, int] | None = None) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = dict(initial or {})

    def take(self, channel: str) -> int:
        """The next occurrence of `channel`, reserved atomically so threads never share one."""
        with self._lock:
            occurrence = self._counts.get(channel, 0)
            self._counts[channel] = occurrence + 1
            return occurrence

    def reset(self, *channels: str) -> None:
        with self._lock:
            for channel in channels:
                self._counts.pop(channel, None)

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(sorted(self._counts.items()))


class KeyedRandom(random.Random):
    """A `random.Random` whose `random()` and `getrandbits()` are keyed draws.

    Every other method (randint, choice, shuffle, gauss, sample, …) is built by the standard
    library on these two, so the whole module API becomes addressable. `seed(x)` re-keys the
    stream deterministically (the same `x` gives the same sequence in every branch) instead of
    reaching for host entropy.
    """

    def __init__(
        self,
        key: bytes,
        channel: str,
        occurrences: Occurrences,
        *,
        salt: str = "",
        gauss_next: float | None = None,
    ) -> None:
        super().__init__(0)
        self._key = key
        self._channel = channel
        self._occurrences = occurrences
        self._salt = salt
        self.gauss_next = gauss_next

    def _name(self, kind: str) -> str:
        return f"{self._channel}.{kind}" + (f"#{self._salt}" if self._salt else "")

    def random(self) -> float:
        name = self._name("random")
        return keyed_float(self._key, name, self._occurrences.take(name))

    def getrandbits(self, k: int, /) -> int:
        if k < 0:
            raise ValueError("number of bits must be non-negative")
        name = self._name("bits")
        return keyed_bits(self._key, name, self._occurrences.take(name), k)

    def seed(self, a: object = None, version: int = 2) -> None:
        # random.Random.__init__ calls seed() before our fields exist; the C state is unused.
        if not hasattr(self, "_occurrences"):
            super().seed(0)
            return
        if a is None:
            return
        self._salt = hashlib.sha256(repr(a).encode()).hexdigest()[:16]
        self._occurrences.reset(self._name("random"), self._name("bits"))
        self.gauss_next = None

    # The state tuples are typed as random.Random types them, opaque: a keyed stream's is its
    # salt and cached gauss, where _random.Random's is the C generator's 625 ints.
    def getstate(self) -> tuple[Any, ...]:
        return ("groundhog-keyed", self._salt, self.gauss_next)

    def setstate(self, state: tuple[Any, ...]) -> None:
        if not (isinstance(state, tuple) and len(state) == 3 and state[0] == "groundhog-keyed"):
            raise ValueError("state was not produced by a groundhog keyed random's getstate()")
        self._salt = str(state[1])
        gauss_next = state[2]
        self.gauss_next = None if gauss_next is None else float(gauss_next)

    @property
    def salt(self) -> str:
        return self._salt
