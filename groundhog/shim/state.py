"""One branch's shim state: its keyed streams, its virtual clock and its resumable counters.

The state is what a `contextvars.ContextVar` points at, so several branches can run in one
process (threads, asyncio tasks) and each draws its own aligned sequence. Without a single
object holding counters, clock and streams together, a fork could not hand a child process
the exact point where its parent stood.
"""

from __future__ import annotations

import os
import threading
import uuid
from typing import Any

from groundhog.errors import LocalProblem
from groundhog.shim.keyed import KeyedRandom, Occurrences, keyed_bits, keyed_bytes, seed_key

COUNTERS_VERSION = 1
DEFAULT_TICK_NS = 1_000_000  # 1 ms per clock read: polling loops end, durations stay plausible
MONOTONIC_BASE_NS = 1_000 * 10**9
_EPOCH_BASE_NS = 1_735_689_600 * 10**9  # 2025-01-01T00:00:00Z
_YEAR_NS = 365 * 86_400 * 10**9
_UUID_EPOCH_OFFSET = 0x01B21DD213814000  # 100 ns intervals from 1582-10-15 to 1970-01-01

SEED_ENV = "GROUNDHOG_WORLD_SEED"
BRANCH_ENV = "GROUNDHOG_BRANCH"
TAPE_ENV = "GROUNDHOG_TAPE"
COUNTERS_ENV = "GROUNDHOG_SHIM_COUNTERS"


class ShimError(LocalProblem, RuntimeError):
    """The shim was misconfigured or used outside a branch context."""

    title = "Shim misconfigured"


def default_epoch_ns(world_seed: int) -> int:
    """Where a world's virtual clock starts: a keyed second of 2025, the same in every branch."""
    offset_s = keyed_bits(seed_key(world_seed), "clock.epoch", 0, 64) % (_YEAR_NS // 10**9)
    return _EPOCH_BASE_NS + offset_s * 10**9


def resolve_seed(world_seed: int | None) -> int:
    """`world_seed`, else `GROUNDHOG_WORLD_SEED`, else a ShimError naming both."""
    if world_seed is not None:
        if isinstance(world_seed, bool) or not isinstance(world_seed, int):
            raise ShimError(f"world_seed must be an integer, got {world_seed!r}")
        return world_seed
    raw = os.environ.get(SEED_ENV)
    if raw is None or not raw.strip():
        raise ShimError(f"no world seed: pass world_seed=… or set {SEED_ENV}")
    try:
        return int(raw)
    except ValueError:
        raise ShimError(f"{SEED_ENV}={raw!r} is not an integer") from None


def resolve_branch(branch: str | None) -> str:
    """`branch`, else `GROUNDHOG_BRANCH`, else `root`."""
    chosen = branch if branch is not None else os.environ.get(BRANCH_ENV, "root")
    if not isinstance(chosen, str) or not chosen.strip():
        raise ShimError(f"branch must be a non-empty path such as 'root/b0', got {chosen!r}")
    return chosen


def resolve_tape(tape: str | None) -> str:
    """`tape`, else `GROUNDHOG_TAPE`, else the empty string (a shim used without a tape)."""
    chosen = tape if tape is not None else os.environ.get(TAPE_ENV, "")
    if not isinstance(chosen, str):
        raise ShimError(f"tape must be a tape name, got {chosen!r}")
    return chosen


def identity_key(world_seed: int, tape: str, branch: str) -> bytes:
    """The key of a branch's identities (uuid4, uuid1): unlike noise, they must differ per branch.

    Siblings that drew the same uuid4 would collide on whatever it names (a runtime directory,
    a trace id, a database row); keyed by tape and branch, a replayed branch still gets its own
    ids again, and the same branch path in another tape of the same world does not repeat them.
    """
    return seed_key(f"{world_seed}\x00identity\x00{tape}\x00{branch}")


def _stream_fields(counters: dict[str, Any], name: str) -> tuple[str, float | None]:
    stream = counters.get(name) or {}
    if not isinstance(stream, dict):
        raise ShimError(f"shim counters field {name!r} must be an object")
    gauss_next = stream.get("gauss_next")
    return str(stream.get("salt", "")), None if gauss_next is None else float(gauss_next)


class BranchState:
    """Counters, clock and keyed streams of one branch context."""

    def __init__(
        self,
        world_seed: int,
        branch: str,
        *,
        tape: str = "",
        counters: dict[str, Any] | None = None,
        tick_ns: int | None = None,
        epoch_ns: int | None = None,
    ) -> None:
        self.world_seed = world_seed
        self.branch = branch
        self.tape = tape
        restored = self._validated(counters or {}, world_seed)
        self._key = seed_key(world_seed)
        self._identity_key = identity_key(world_seed, tape, branch)
        self._clock_lock = threading.Lock()
        self.occurrences = Occurrences(restored.get("occurrences"))
        self.elapsed_ns = int(restored.get("clock_ns", 0))
        self.tick_ns = int(
            tick_ns if tick_ns is not None else restored.get("tick_ns", DEFAULT_TICK_NS)
        )
        if self.tick_ns < 0:
            raise ShimError(f"tick must be non-negative, got {self.tick_ns} ns")
        chosen_epoch = epoch_ns if epoch_ns is not None else restored.get("epoch_ns")
        self.epoch_ns = (
            int(chosen_epoch) if chosen_epoch is not None else default_epoch_ns(world_seed)
        )
        salt, gauss_next = _stream_fields(restored, "random")
        self.world_random = KeyedRandom(
            self._key, "random", self.occurrences, salt=salt, gauss_next=gauss_next
        )
        # Exploration noise is keyed by branch on purpose: siblings must explore differently.
        agent_key = seed_key(f"{world_seed}\x00agent\x00{branch}")
        salt, gauss_next = _stream_fields(restored, "agent")
        self.agent_random = KeyedRandom(
            agent_key, "agent", self.occurrences, salt=salt, gauss_next=gauss_next
        )

    @staticmethod
    def _validated(counters: dict[str, Any], world_seed: int) -> dict[str, Any]:
        if not isinstance(counters, dict):
            raise ShimError(f"shim counters must be a dict from counters(), got {type(counters)}")
        if not counters:
            return {}
        version = counters.get("version")
        if version != COUNTERS_VERSION:
            raise ShimError(f"shim counters version {version!r} is not {COUNTERS_VERSION}")
        recorded_seed = counters.get("world_seed")
        if recorded_seed is not None and recorded_seed != world_seed:
            raise ShimError(
                f"shim counters were taken in world {recorded_seed}, not world {world_seed}"
            )
        occurrences = counters.get("occurrences", {})
        if not isinstance(occurrences, dict) or not all(
            isinstance(value, int) and value >= 0 for value in occurrences.values()
        ):
            raise ShimError("shim counters 'occurrences' must map channels to counts >= 0")
        return counters

    # -- the virtual clock ------------------------------------------------------------------

    def read_elapsed_ns(self) -> int:
        """One clock read: advance by the tick, then answer, so busy-wait loops terminate."""
        with self._clock_lock:
            self.elapsed_ns += self.tick_ns
            return self.elapsed_ns

    def advance(self, seconds: float) -> None:
        """What `sleep(seconds)` does here: move the clock and return at once."""
        if seconds < 0:
            raise ValueError("sleep length must be non-negative")
        with self._clock_lock:
            self.elapsed_ns += round(seconds * 1e9)

    def wall_ns(self) -> int:
        return self.epoch_ns + self.read_elapsed_ns()

    def monotonic_ns(self) -> int:
        return MONOTONIC_BASE_NS + self.read_elapsed_ns()

    # -- uuid -------------------------------------------------------------------------------

    def uuid4(self) -> uuid.UUID:
        raw = keyed_bytes(self._identity_key, "uuid4", self.occurrences.take("uuid4"), 16)
        return uuid.UUID(bytes=raw, version=4)

    def uuid1(self, node: int | None = None, clock_seq: int | None = None) -> uuid.UUID:
        """A time-based UUID on the virtual clock with keyed clock_seq and (multicast) node."""
        timestamp = self.wall_ns() // 100 + _UUID_EPOCH_OFFSET
        raw = keyed_bytes(self._identity_key, "uuid1", self.occurrences.take("uuid1"), 8)
        if clock_seq is None:
            clock_seq = int.from_bytes(raw[:2], "big") & 0x3FFF
        if node is None:
            node = int.from_bytes(raw[2:8], "big") | 0x010000000000  # RFC 4122 §4.5
        time_low = timestamp & 0xFFFFFFFF
        time_mid = (timestamp >> 32) & 0xFFFF
        time_hi_version = (timestamp >> 48) & 0x0FFF
        fields = (
            time_low,
            time_mid,
            time_hi_version,
            (clock_seq >> 8) & 0x3F,
            clock_seq & 0xFF,
            node,
        )
        return uuid.UUID(fields=fields, version=1)

    # -- counters ---------------------------------------------------------------------------

    def counters(self) -> dict[str, Any]:
        """A JSON-able snapshot that `BranchState(counters=…)` resumes exactly."""
        with self._clock_lock:
            elapsed = self.elapsed_ns
        return {
            "version": COUNTERS_VERSION,
            "world_seed": self.world_seed,
            "branch": self.branch,
            "clock_ns": elapsed,
            "epoch_ns": self.epoch_ns,
            "tick_ns": self.tick_ns,
            "occurrences": self.occurrences.snapshot(),
            "random": {
                "salt": self.world_random.salt,
                "gauss_next": self.world_random.gauss_next,
            },
            "agent": {
                "salt": self.agent_random.salt,
                "gauss_next": self.agent_random.gauss_next,
            },
        }
