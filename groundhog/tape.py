"""A handle on one tape: fork it, seal it, read its report, hand out its branches.

Scripts think in tapes and branches, not in URLs; the handle keeps the tape's world seed so
every branch it hands out can build its worker environment and shim without asking again.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from groundhog.models import BranchInfo, TapeDigest, TapeInfo, TapeReport

if TYPE_CHECKING:
    from groundhog.branch import Branch
    from groundhog.client import Groundhog


class _Auto:
    """Marker: take the shim counters of the calling context, if it has any."""


AUTO: Any = _Auto()


class Tape:
    """A handle on one tape of a resolver."""

    def __init__(self, client: Groundhog, info: TapeInfo) -> None:
        self.client = client
        self.info = info

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def world_seed(self) -> int:
        return self.info.world_seed

    def __repr__(self) -> str:
        return f"Tape({self.name!r}, world_seed={self.world_seed}, mode={self.info.mode!r})"

    def refresh(self) -> TapeInfo:
        self.info = self.client.get_tape(self.name)
        return self.info

    def branch(self, path: str = "root", *, capability: str | None = None) -> Branch:
        """A handle on branch `path`; its capability, unless given, is asked for on first use."""
        # On use: a branch brings the shim and the real-clock transports, which admin commands
        # (`groundhog tape ls`) never need.
        from groundhog.branch import Branch

        return Branch(
            self.client, self.name, path, world_seed=self.world_seed, capability=capability
        )

    def fork(
        self,
        parent: str = "root",
        children: int | list[str] = 2,
        *,
        shim_counters: dict[str, Any] | None = AUTO,
        warn: bool = True,
    ) -> list[Branch]:
        result = self.client.fork(
            self.name, parent, children, shim_counters=shim_counters, warn=warn
        )
        return [
            self.branch(path, capability=result.capabilities.get(path)) for path in result.branches
        ]

    def branches(self) -> list[BranchInfo]:
        return self.client.list_branches(self.name)

    def seal(self) -> TapeInfo:
        self.info = self.client.seal(self.name)
        return self.info

    def unseal(self) -> TapeInfo:
        self.info = self.client.unseal(self.name)
        return self.info

    def report(self) -> TapeReport:
        return self.client.report(self.name)

    def digest(self) -> TapeDigest:
        return self.client.digest(self.name)

    def export(self, destination: str | Path, **kwargs: Any) -> Path:
        return self.client.export_tape(self.name, destination, **kwargs)
