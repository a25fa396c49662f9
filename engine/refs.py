"""The tape, branch and key hint as the decision reads them: plain frozen values.

The store reads them in one statement (store/refs.py, store/hints.py) and a lease holder builds
them from its grant (engine/leased_hits.py); the ask is drafted and decided from these values
either way, so they live beneath both, with no SQL of their own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, NamedTuple, Protocol

from engine.tape_settings import TapeSettings, stored_settings


@dataclass(frozen=True)
class TapeRef:
    """The tape fields the resolve hot path reads, without ORM identity-map overhead."""

    id: int
    name: str
    world_seed: int
    mode: str
    online: bool
    dependency_model: str
    config: dict[str, Any]
    # The config as the database holds it (JSON text), to tell later whether it changed.
    config_text: str | None = field(default=None, repr=False, compare=False)

    @cached_property
    def settings(self) -> TapeSettings:
        """The config, typed (engine/tape_settings.py; parsed once per distinct config)."""
        return stored_settings(self.config, self.config_text)


@dataclass(frozen=True)
class BranchRef:
    id: int
    path: str
    # Who holds the branch's lease and until when (store/branch_leases.py); None: nobody.
    lease_holder: str | None = None
    lease_expires: float = 0.0


class Hint(NamedTuple):
    """A key's hint as the resolve path reads it (the columns of `KeyHint`, no ORM object)."""

    reads: str | None
    writes: str


class HintRow(Protocol):
    """A key's hint as a `Hint` or the store's ORM row (store/models.py `KeyHint`) holds it:
    the ask reads either, and the engine names no store type."""

    @property
    def reads(self) -> str | None: ...

    @property
    def writes(self) -> str: ...


class ClaimRow(Protocol):
    """A claim row as the decision reads it (store/claims.py `HeldClaim`): who holds the
    address, until when, and how the holder's live call failed, if it did."""

    @property
    def ticket(self) -> str: ...

    @property
    def claim_expires(self) -> float: ...

    @property
    def failure(self) -> str | None: ...
